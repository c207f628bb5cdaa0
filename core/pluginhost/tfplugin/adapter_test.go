package tfplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

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

	// The same state in an envelope laid out otherwise (format 1's JSON,
	// indented): equal in meaning, not in bytes.
	e, ok := openEnvelope(made.Private)
	if !ok {
		t.Fatalf("the create's envelope does not open: %q", made.Private)
	}
	v1, err := json.Marshal(map[string]any{"bulwark_tfstate": "1", "schema_version": e.SchemaVersion, "state": e.State, "private": e.Private})
	if err != nil {
		t.Fatal(err)
	}
	var laid bytes.Buffer
	if err := json.Indent(&laid, v1, "", "  "); err != nil {
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
	e.SchemaVersion = 0
	e.State = bytes.Replace(e.State, []byte(`"size":1`), []byte(`"size":"1"`), 1)
	old := e.marshal()
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

// countingWire counts the plans a provider is asked for.
type countingWire struct {
	wire
	plans atomic.Int64
}

func (w *countingWire) planResourceChange(ctx context.Context, r rawPlan) (rawResult, error) {
	w.plans.Add(1)
	return w.wire.planResourceChange(ctx, r)
}

// TestAdapterRemembersNoChange: what a Create or Update applied is planned
// once more right away (Terraform's "inconsistent result after apply"
// check); when the provider plans no change, a later read that finds the
// same state, private data and config, under the same provider version
// and configuration, answers that plan without asking again. Anything of
// those moved, the provider plans.
func TestAdapterRemembersNoChange(t *testing.T) {
	ctx := context.Background()
	p := start(t, Protocol6)
	cw := &countingWire{wire: p.w}
	p.w = cw
	a := NewAdapter(p, "tftest", "0.0.0")
	configure := func(prefix string) {
		t.Helper()
		if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": prefix}}); err != nil {
			t.Fatal(err)
		}
	}
	configure("p-")
	cfg := providers.Attributes{"name": "a", "size": 1}
	planned := func(private []byte, cfg providers.Attributes) (*providers.ReadResponse, int64) {
		t.Helper()
		before := cw.plans.Load()
		rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: "x", Config: cfg, Private: private})
		noErrors(t, "read", rr.Diagnostics, err)
		if rr.Planned == nil {
			t.Fatal("a read with a config answered no plan")
		}
		return rr, cw.plans.Load() - before
	}

	before := cw.plans.Load()
	made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: cfg})
	noErrors(t, "create", made.Diagnostics, err)
	if n := cw.plans.Load() - before; n != 2 {
		t.Errorf("a create made %d plans, want 2 (the apply's, and the one after it)", n)
	}
	if rr, n := planned(made.Private, cfg); n != 0 || len(rr.Planned.Changes) != 0 {
		t.Errorf("a read of what was just made planned %d times (changes %v), want none and no change", n, rr.Planned.Changes)
	}
	// Another config: the provider plans, and sees the change.
	if rr, n := planned(made.Private, providers.Attributes{"name": "a", "size": 2}); n != 1 || !slices.Contains(rr.Planned.Changes, "size") {
		t.Errorf("a read toward another config planned %d times (changes %v), want once and size", n, rr.Planned.Changes)
	}
	// The provider configured otherwise: it plans again.
	configure("q-")
	if _, n := planned(made.Private, cfg); n != 1 {
		t.Errorf("under another provider configuration a read planned %d times, want once", n)
	}
	configure("p-")
	// The envelope's state is not what the provider reads now (drift):
	// the provider plans.
	e, ok := openEnvelope(made.Private)
	if !ok || e.NoChange == "" {
		t.Fatalf("the create's envelope remembers no plan: %q", made.Private)
	}
	e.State = bytes.Replace(e.State, []byte(`"size":1`), []byte(`"size":5`), 1)
	// The same drift in the msgpack a format 2 envelope carries beside it.
	_, rs, err := p.resourceSchema(ctx, "tftest_thing")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseStateJSON(e.State, rs.ImpliedType())
	if err != nil {
		t.Fatal(err)
	}
	if e.Msgpack, err = EncodeMsgpack(v, rs.ImpliedType()); err != nil {
		t.Fatal(err)
	}
	drifted := e.marshal()
	if rr, n := planned(drifted, cfg); n != 1 {
		t.Errorf("a read whose recorded state differs from the provider's planned %d times (%v), want once", n, rr.Planned)
	}
	// An update remembers its own no-change plan.
	up, err := a.Update(ctx, &providers.UpdateRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: providers.Attributes{"name": "a", "size": 3}, Private: made.Private})
	noErrors(t, "update", up.Diagnostics, err)
	if rr, n := planned(up.Private, providers.Attributes{"name": "a", "size": 3}); n != 0 || len(rr.Planned.Changes) != 0 {
		t.Errorf("a read of what was just updated planned %d times (changes %v), want none", n, rr.Planned.Changes)
	}
}

// applyWire counts the reads a provider is asked for and can rewrite what
// its ApplyResourceChange answers.
type applyWire struct {
	wire
	reads   atomic.Int64
	rewrite func(rawResult) rawResult // nil: as answered
}

func (w *applyWire) readResource(ctx context.Context, typeName string, state, private, meta []byte) (rawResult, error) {
	w.reads.Add(1)
	return w.wire.readResource(ctx, typeName, state, private, meta)
}

func (w *applyWire) applyResourceChange(ctx context.Context, r rawApply) (rawResult, error) {
	res, err := w.wire.applyResourceChange(ctx, r)
	if err == nil && w.rewrite != nil {
		res = w.rewrite(res)
	}
	return res, err
}

// TestAdapterReadsBackWhatItApplied: a Create, Update and Delete answer
// the read-back the host's Verify takes (CreateResponse.ReadBack, ...)
// without a ReadResource: what ApplyResourceChange answered, with the
// provider's plan from it toward the config (no change), and for a
// Delete nothing left. An applied state that differs from what the
// provider planned is a change Verify fails on (Terraform's "inconsistent
// result after apply"), except from a provider on the legacy type system,
// which Terraform too tolerates.
func TestAdapterReadsBackWhatItApplied(t *testing.T) {
	ctx := context.Background()
	p := start(t, Protocol6)
	w := &applyWire{wire: p.w}
	p.w = w
	a := NewAdapter(p, "tftest", "0.0.0")
	if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}}); err != nil {
		t.Fatal(err)
	}
	_, s, err := p.resourceSchema(ctx, "tftest_thing")
	if err != nil {
		t.Fatal(err)
	}
	made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: providers.Attributes{"name": "a", "size": 1}})
	noErrors(t, "create", made.Diagnostics, err)
	rb := made.ReadBack
	if rb == nil || !rb.Exists || rb.ID != made.ID || rb.Planned == nil || len(rb.Planned.Changes) != 0 || !bytes.Equal(rb.Private, made.Private) {
		t.Fatalf("create's read-back %+v, want what it made (id %s) with a plan of no change", rb, made.ID)
	}
	if n := w.reads.Load(); n != 0 {
		t.Errorf("a create made %d ReadResource calls, want none", n)
	}

	// The provider answers an id other than the one it planned (an
	// update keeps the id: it is planned known).
	renamed := func(legacy bool) func(rawResult) rawResult {
		return func(r rawResult) rawResult {
			v, err := r.state.decode(s.ImpliedType())
			if err != nil {
				t.Fatal(err)
			}
			m := v.AsValueMap()
			m["id"] = cty.StringVal("moved")
			b, err := EncodeMsgpack(cty.ObjectVal(m), s.ImpliedType())
			if err != nil {
				t.Fatal(err)
			}
			r.state, r.legacy = dynamic{msgpack: b}, legacy
			return r
		}
	}
	update := func(size int) *providers.UpdateResponse {
		t.Helper()
		up, err := a.Update(ctx, &providers.UpdateRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: providers.Attributes{"name": "a", "size": size}, Private: made.Private})
		noErrors(t, "update", up.Diagnostics, err)
		if up.ReadBack == nil || up.ReadBack.Planned == nil {
			t.Fatalf("update's read-back %+v, want one with a plan", up.ReadBack)
		}
		return up
	}
	if up := update(2); len(up.ReadBack.Planned.Changes) != 0 || up.ReadBack.Attributes["id"] != made.ID {
		t.Errorf("update's read-back: changes %v, attributes %v: want none, and id %s", up.ReadBack.Planned.Changes, up.ReadBack.Attributes, made.ID)
	}
	w.rewrite = renamed(false)
	if up := update(3); !slices.Equal(up.ReadBack.Planned.Changes, []string{"id"}) {
		t.Errorf("an applied id other than the planned one: read-back changes %v, want [id]", up.ReadBack.Planned.Changes)
	}
	w.rewrite = renamed(true)
	if up := update(4); len(up.ReadBack.Planned.Changes) != 0 {
		t.Errorf("the same from a legacy-type-system provider: read-back changes %v, want none (tolerated)", up.ReadBack.Planned.Changes)
	}
	w.rewrite = nil

	before := w.reads.Load()
	del, err := a.Delete(ctx, &providers.DeleteRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: made.Private})
	noErrors(t, "delete", del.Diagnostics, err)
	if del.ReadBack == nil || del.ReadBack.Exists {
		t.Errorf("delete's read-back %+v, want one that finds nothing", del.ReadBack)
	}
	if n := w.reads.Load() - before; n != 1 {
		t.Errorf("a delete made %d ReadResource calls, want 1 (its read before the destroy)", n)
	}
	// Deleted already: its read finds nothing, which is the read-back too.
	del, err = a.Delete(ctx, &providers.DeleteRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: made.Private})
	noErrors(t, "delete again", del.Diagnostics, err)
	if del.ReadBack == nil || del.ReadBack.Exists {
		t.Errorf("a second delete's read-back %+v, want one that finds nothing", del.ReadBack)
	}
}

// TestAdapterDeleteTakesTheObservedRead: a Delete whose private data the
// host observed just now (DeleteRequest.Observed: its Check's read) plans
// and applies the destroy without reading first, and reads back gone; the
// resource is then gone for a Read too.
func TestAdapterDeleteTakesTheObservedRead(t *testing.T) {
	ctx := context.Background()
	p := start(t, Protocol6)
	w := &applyWire{wire: p.w}
	p.w = w
	a := NewAdapter(p, "tftest", "0.0.0")
	if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}}); err != nil {
		t.Fatal(err)
	}
	made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: providers.Attributes{"name": "a", "size": 1}})
	noErrors(t, "create", made.Diagnostics, err)
	seen, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: made.Private})
	noErrors(t, "read", seen.Diagnostics, err)
	before := w.reads.Load()
	del, err := a.Delete(ctx, &providers.DeleteRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: seen.Private, Observed: true})
	noErrors(t, "delete", del.Diagnostics, err)
	if n := w.reads.Load() - before; n != 0 {
		t.Errorf("an observed delete made %d ReadResource calls, want none", n)
	}
	if del.ReadBack == nil || del.ReadBack.Exists {
		t.Errorf("delete's read-back %+v, want one that finds nothing", del.ReadBack)
	}
	after, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: made.Private})
	noErrors(t, "read after delete", after.Diagnostics, err)
	if after.Exists {
		t.Errorf("read after the delete found %v", after.Attributes)
	}
}

// TestAdapterReadsFormat1Envelope: an envelope as bulwark wrote it before
// format 2 (its state in JSON only, a "v1:" no-change key over the
// config's JSON) still reads, takes its remembered plan without asking,
// and updates and deletes; what an update answers is format 2, its state
// in msgpack too.
func TestAdapterReadsFormat1Envelope(t *testing.T) {
	ctx := context.Background()
	p := start(t, Protocol6)
	cw := &countingWire{wire: p.w}
	p.w = cw
	a := NewAdapter(p, "tftest", "0.0.0")
	if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}}); err != nil {
		t.Fatal(err)
	}
	cfg := providers.Attributes{"name": "a", "size": 1}
	made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: cfg})
	noErrors(t, "create", made.Diagnostics, err)
	e, ok := openEnvelope(made.Private)
	if !ok || e.Format != "2" || len(e.Msgpack) == 0 || !strings.HasPrefix(e.NoChange, "v2:") {
		t.Fatalf("a create answered envelope %q, want format 2 with its msgpack and a v2 key", made.Private)
	}

	// The same resource as format 1 wrote it: its key as it was made
	// (SHA-256 over length-prefixed parts, in hex).
	_, rs, err := p.resourceSchema(ctx, "tftest_thing")
	if err != nil {
		t.Fatal(err)
	}
	cv, err := ObjectFromAttributes(cfg, rs.ImpliedType())
	if err != nil {
		t.Fatal(err)
	}
	cj, err := StateJSON(cv, rs.ImpliedType())
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte("tftest"), []byte("0.0.0"), *a.providerConfig.Load(), []byte("tftest_thing"), []byte(strconv.FormatInt(rs.Version, 10)), cj, e.State, e.Private} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	v1 := map[string]any{"bulwark_tfstate": "1", "schema_version": e.SchemaVersion, "state": e.State, "private": e.Private,
		"no_change": "v1:" + hex.EncodeToString(h.Sum(nil))}
	old, err := json.Marshal(v1)
	if err != nil {
		t.Fatal(err)
	}

	before := cw.plans.Load()
	rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: cfg, Private: old})
	noErrors(t, "read of a format 1 envelope", rr.Diagnostics, err)
	if !rr.Exists || rr.ID != made.ID || rr.Attributes["name"] != "a" {
		t.Errorf("a format 1 envelope read as %+v, want the resource made", rr)
	}
	if n := cw.plans.Load() - before; n != 0 || rr.Planned == nil || len(rr.Planned.Changes) != 0 {
		t.Errorf("a format 1 envelope's read planned %d times (%+v), want its remembered plan of no change", n, rr.Planned)
	}
	if !bytes.Equal(rr.Private, old) {
		t.Errorf("an unchanged format 1 envelope answered %s, want it kept byte for byte", rr.Private)
	}
	// Its key moved: the provider plans.
	v1["no_change"] = "v1:" + strings.Repeat("0", 64)
	other, _ := json.Marshal(v1)
	before = cw.plans.Load()
	rr, err = a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: cfg, Private: other})
	noErrors(t, "read of a format 1 envelope with another key", rr.Diagnostics, err)
	if n := cw.plans.Load() - before; n != 1 {
		t.Errorf("a format 1 envelope whose key does not match planned %d times, want once", n)
	}

	up, err := a.Update(ctx, &providers.UpdateRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: providers.Attributes{"name": "a", "size": 2}, Private: old})
	noErrors(t, "update from a format 1 envelope", up.Diagnostics, err)
	got, ok := openEnvelope(up.Private)
	if !ok || got.Format != "2" || len(got.Msgpack) == 0 || (up.Attributes["size"] != 2 && up.Attributes["size"] != 2.0) {
		t.Errorf("an update from a format 1 envelope answered %s (attributes %v), want format 2 with size 2", up.Private, up.Attributes)
	}
	del, err := a.Delete(ctx, &providers.DeleteRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: old})
	noErrors(t, "delete from a format 1 envelope", del.Diagnostics, err)
	if del.ReadBack == nil || del.ReadBack.Exists {
		t.Errorf("a delete from a format 1 envelope answered read-back %+v, want nothing left", del.ReadBack)
	}
}

// TestAdapterEnvelopeOfAnotherType: a format 2 envelope whose msgpack was
// encoded for another type at the same schema version (the provider added
// an attribute without moving its version) is not sent as it is: it is
// decoded, the attribute null, and the provider reads a whole object, as
// from the JSON. One of the schema's own type is sent byte for byte.
func TestAdapterEnvelopeOfAnotherType(t *testing.T) {
	ctx := context.Background()
	p := start(t, Protocol6)
	rw := &readWire{wire: p.w}
	p.w = rw
	a := NewAdapter(p, "tftest", "0.0.0")
	if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}}); err != nil {
		t.Fatal(err)
	}
	made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: providers.Attributes{"name": "a", "size": 1}})
	noErrors(t, "create", made.Diagnostics, err)
	e, ok := openEnvelope(made.Private)
	if !ok || e.Type == "" {
		t.Fatalf("envelope %q: want its type's digest", made.Private)
	}
	rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: made.Private})
	noErrors(t, "read", rr.Diagnostics, err)
	if !bytes.Equal(rw.last, e.Msgpack) {
		t.Errorf("a read of an envelope of the schema's own type sent %x, want its msgpack %x as it is", rw.last, e.Msgpack)
	}

	// The same state without "old", encoded for the type without it.
	_, rs, err := p.resourceSchema(ctx, "tftest_thing")
	if err != nil {
		t.Fatal(err)
	}
	v, err := DecodeDynamic(e.Msgpack, nil, rs.ImpliedType())
	if err != nil {
		t.Fatal(err)
	}
	attrs := v.AsValueMap()
	delete(attrs, "old")
	smaller := cty.ObjectVal(attrs)
	if e.Msgpack, err = EncodeMsgpack(smaller, smaller.Type()); err != nil {
		t.Fatal(err)
	}
	e.Type = "an-older-type"
	older := e.marshal()
	rr, err = a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Private: older})
	noErrors(t, "read of an envelope of an older type", rr.Diagnostics, err)
	if !rr.Exists || rr.ID != made.ID {
		t.Fatalf("an envelope of an older type read as %+v, want the resource", rr)
	}
	sent, err := DecodeDynamic(rw.last, nil, rs.ImpliedType())
	if err != nil || !sent.GetAttr("old").IsNull() || !sent.GetAttr("name").RawEquals(cty.StringVal("a")) {
		t.Errorf("the provider was sent %#v (%v), want the whole object, old null", sent, err)
	}
	if bytes.Equal(rw.last, e.Msgpack) {
		t.Error("an envelope of an older type was sent as it was")
	}
}

// readWire keeps the current state the last ReadResource was sent.
type readWire struct {
	wire
	last []byte
}

func (w *readWire) readResource(ctx context.Context, typeName string, state, private, meta []byte) (rawResult, error) {
	w.last = append([]byte(nil), state...)
	return w.wire.readResource(ctx, typeName, state, private, meta)
}

// TestEnvelopeFormat2: format 2 reads back what it wrote, field for field
// (an empty private data as none); one cut short, with bytes after its
// fields, without a state or of another magic is no envelope, nor is a
// format 1 envelope of another format number.
func TestEnvelopeFormat2(t *testing.T) {
	e := envelope{Format: "2", SchemaVersion: -3, State: []byte(`{"id":"x"}`), Msgpack: []byte{0x81, 0xa2, 'i', 'd', 0xa1, 'x'},
		Type: "digest", Private: []byte{0, 1, 2}, NoChange: "v2:key"}
	b := e.marshal()
	got, ok := openEnvelope(b)
	if !ok || !cmp.Equal(*got, e) {
		t.Fatalf("format 2 read back as %+v (%v), want %+v", got, ok, e)
	}
	empty := envelope{Format: "2", State: []byte(`{}`)}
	if got, ok := openEnvelope(empty.marshal()); !ok || got.Private != nil || got.Msgpack != nil || got.NoChange != "" || got.SchemaVersion != 0 {
		t.Errorf("an envelope without private data read back as %+v (%v)", got, ok)
	}
	for name, bad := range map[string][]byte{
		"cut short":     b[:len(b)-1],
		"bytes after":   append(append([]byte(nil), b...), 0),
		"no state":      (&envelope{Msgpack: []byte{1}}).marshal(),
		"another magic": append([]byte("\xb7tf3"), b[len(envelopeMagic):]...),
		"format 3 JSON": []byte(`{"bulwark_tfstate":"3","schema_version":0,"state":{"id":"x"}}`),
		"only magic":    []byte(envelopeMagic),
	} {
		if got, ok := openEnvelope(bad); ok {
			t.Errorf("%s: opened as %+v", name, got)
		}
	}
}

// planWire answers every plan with the state it holds.
type planWire struct {
	wire
	planned []byte
}

func (w *planWire) planResourceChange(context.Context, rawPlan) (rawResult, error) {
	return rawResult{state: dynamic{msgpack: w.planned}}, nil
}

// TestPlanOfTheSameBytes: a plan whose planned state is byte for byte the
// state given as known answers known's value without decoding; any other
// bytes are decoded.
func TestPlanOfTheSameBytes(t *testing.T) {
	ty := cty.Object(map[string]cty.Type{"id": cty.String, "n": cty.Number})
	v := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("x"), "n": cty.NumberIntVal(1)})
	mp, err := EncodeMsgpack(v, ty)
	if err != nil {
		t.Fatal(err)
	}
	w := &planWire{planned: mp}
	p := &Provider{w: w}
	// A known value that its bytes do not decode to tells which was taken.
	marker := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("known"), "n": cty.NumberIntVal(1)})
	pr, err := p.planEncoded(context.Background(), rawPlan{typeName: "t"}, ty, &wval{v: marker, mp: mp})
	if err != nil || !pr.PlannedState.RawEquals(marker) {
		t.Errorf("the same bytes planned %#v (%v), want the known value, not decoded", pr.PlannedState, err)
	}
	other := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("x"), "n": cty.NumberIntVal(2)})
	if w.planned, err = EncodeMsgpack(other, ty); err != nil {
		t.Fatal(err)
	}
	pr, err = p.planEncoded(context.Background(), rawPlan{typeName: "t"}, ty, &wval{v: marker, mp: mp})
	if err != nil || !pr.PlannedState.RawEquals(other) {
		t.Errorf("other bytes planned %#v (%v), want them decoded", pr.PlannedState, err)
	}
	if pr, err = p.planEncoded(context.Background(), rawPlan{typeName: "t"}, ty, &wval{mp: w.planned, lazy: true}); err != nil || !pr.PlannedState.RawEquals(other) {
		t.Errorf("bytes of a value not decoded yet planned %#v (%v), want them decoded", pr.PlannedState, err)
	}
}
