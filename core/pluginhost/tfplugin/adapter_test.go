package tfplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// TestAdapterReadKeepsEnvelope: a Read that finds the resource as recorded
// answers the recorded private data byte for byte (it is not encoded
// again); one whose envelope is from an
// older schema version, or whose resource moved, answers a fresh one.
func TestAdapterReadKeepsEnvelope(t *testing.T) {
	ctx := context.Background()
	p := start(t, Protocol6)
	a := NewAdapter(p, "tftest", "0.0.0")
	if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}}); err != nil {
		t.Fatal(err)
	}
	made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: providers.Attributes{"name": "a", "size": 1}})
	noErrors(t, "create", made.Diagnostics, err)

	// The same envelope, laid out differently: equal in meaning, not in bytes.
	var laid bytes.Buffer
	if err := json.Indent(&laid, made.Private, "", "  "); err != nil {
		t.Fatal(err)
	}
	recorded := laid.Bytes()
	rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: recorded})
	noErrors(t, "read", rr.Diagnostics, err)
	if !rr.Exists || !bytes.Equal(rr.Private, recorded) {
		t.Errorf("unchanged read answered private %s, want the recorded %s kept", rr.Private, recorded)
	}

	// An envelope of schema version 0 goes through the provider's upgrade
	// and is sealed again at version 1.
	var e envelope
	if err := json.Unmarshal(made.Private, &e); err != nil {
		t.Fatal(err)
	}
	e.SchemaVersion = 0
	e.State = bytes.Replace(e.State, []byte(`"size":1`), []byte(`"size":"1"`), 1)
	old, _ := json.Marshal(e)
	rr, err = a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: old})
	noErrors(t, "read of an old envelope", rr.Diagnostics, err)
	got, ok := openEnvelope(rr.Private)
	if !ok || got.SchemaVersion != 1 || bytes.Equal(rr.Private, old) {
		t.Errorf("old envelope answered %s, want one sealed again at version 1", rr.Private)
	}

	// The resource moved (an update): a fresh envelope.
	up, err := a.Update(ctx, &providers.UpdateRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: providers.Attributes{"name": "a", "size": 2}, Private: made.Private})
	noErrors(t, "update", up.Diagnostics, err)
	rr, err = a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: made.Private})
	noErrors(t, "read after update", rr.Diagnostics, err)
	if bytes.Equal(rr.Private, made.Private) || rr.Attributes["size"] != 2 && rr.Attributes["size"] != 2.0 {
		t.Errorf("moved resource answered private %s, attributes %v: want a fresh envelope with size 2", rr.Private, rr.Attributes)
	}
}
