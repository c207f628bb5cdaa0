package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// A refresh-only run records what reality holds, and makes no Create,
// Update or Delete: drift is recorded; an ephemeral resource gone from
// reality is dropped from the state; a durable one gone keeps its record;
// it is one journaled operation.
func TestRefreshOnlyRecordsDriftWithoutMutating(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t,
		res{name: "net", typ: "network", size: 1},
		res{name: "tmp", typ: "generic", size: 1},
		res{name: "data", typ: "s3_bucket", prot: "durable", size: 1},
		res{name: "same", typ: "generic", size: 1},
	)
	e.mustApply(t, sp)
	e.w.SetAttr("net", "size", 7.0)
	e.w.Remove("tmp")
	e.w.Remove("data")
	before := e.state(t, "s")
	c0, u0, d0 := e.w.Calls()

	pv, err := stack.RefreshPlan(e.ctx, sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]stack.Refreshed{}
	for _, r := range pv.Resources {
		got[r.Address] = r
	}
	if r := got["net"]; r.Action != stack.RefreshUpdate || len(r.Drifted) != 1 || r.Drifted[0] != "size" || r.After["size"] != 7.0 {
		t.Errorf("net: %+v, want an update of size to 7", r)
	}
	if got["tmp"].Action != stack.RefreshDrop || got["data"].Action != stack.RefreshVanished || got["same"].Action != stack.RefreshNoOp {
		t.Errorf("actions: tmp %s data %s same %s", got["tmp"].Action, got["data"].Action, got["same"].Action)
	}
	if !pv.HasChanges() {
		t.Error("HasChanges is false")
	}
	if st := e.state(t, "s"); st.Serial != before.Serial {
		t.Fatalf("the refresh plan wrote the state: serial %d -> %d", before.Serial, st.Serial)
	}

	r, err := stack.Refresh(e.ctx, sp, e.opts())
	if err != nil || r.Outcome != engine.Succeeded || r.Type != stack.OpRefresh || r.Changed != 2 {
		t.Fatalf("refresh: %+v %v", r, err)
	}
	if c1, u1, d1 := e.w.Calls(); c1 != c0 || u1 != u0 || d1 != d0 {
		t.Errorf("refresh called the provider to change reality: creates %d->%d updates %d->%d deletes %d->%d", c0, c1, u0, u1, d0, d1)
	}
	st := e.state(t, "s")
	if st.Resources["net"] == nil || st.Resources["net"].Attributes["size"] != 7.0 {
		t.Errorf("net's record after the refresh: %+v", st.Resources["net"])
	}
	if st.Resources["tmp"] != nil {
		t.Error("tmp, ephemeral and gone, is still recorded")
	}
	if st.Resources["data"] == nil {
		t.Error("data, durable and gone, lost its record")
	}
	recs, err := stack.ReadJournalKinds(sp, e.opts(), journal.KindOp)
	if err != nil {
		t.Fatal(err)
	}
	var ended bool
	for _, rec := range recs {
		if rec.Op == r.Op && rec.Kind == journal.KindOp && rec.Type == stack.OpRefresh && rec.Status == journal.OpSucceeded {
			ended = true
		}
	}
	if !ended {
		t.Error("the refresh is not journaled as a succeeded operation")
	}
	// Again: nothing drifted any more (data stays vanished, kept).
	pv, err = stack.RefreshPlan(e.ctx, sp, e.opts())
	if err != nil || pv.HasChanges() {
		t.Errorf("second refresh plan: %+v %v, want no changes", pv, err)
	}
}

// A sensitive attribute changed outside bulwark is named, never shown, and
// the state the refresh writes holds it sealed.
func TestRefreshOnlyNeverShowsOrStoresASecretInClear(t *testing.T) {
	e := newEnv(t)
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	withKey := func(o *stack.Options) {
		o.Secrets = &secrets.Source{Env: key.Encode()}
		o.Starter = ss.starter()
	}
	sp := parseSpec(t, fmt.Sprintf("version: 1\nstack: s\nproviders:\n  fake: {config: {token: %s}}\nresources:\n  - {name: net, type: s3_bucket, config: {secret: first-s3cr3t, size: 1}}\n", fakeToken))
	e.mustApply(t, sp, withKey)
	const drifted = "drifted-s3cr3t-7f3a"
	e.w.SetAttr("net", "secret", drifted)
	pv, err := stack.RefreshPlan(e.ctx, sp, e.opts(withKey))
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Resources) != 1 || pv.Resources[0].Action != stack.RefreshUpdate || !slices.Contains(pv.Resources[0].Sensitive, "secret") {
		t.Fatalf("refresh plan: %+v", pv.Resources)
	}
	if b, _ := json.Marshal(pv); strings.Contains(string(b), drifted) {
		t.Fatalf("the refresh plan shows the secret: %s", b)
	}
	if _, err := stack.Refresh(e.ctx, sp, e.opts(withKey)); err != nil {
		t.Fatal(err)
	}
	dir := stack.StackDir(e.stateDir, "s")
	for _, name := range []string{state.FileName, journal.FileName} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), drifted) {
			t.Errorf("%s holds the refreshed secret in clear", name)
		}
	}
	if strings.Contains(e.out.String(), drifted) {
		t.Error("the output shows the refreshed secret")
	}
}
