package tfplugin

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// TestPlansBounded: a remembered plan is taken once; no more than max are
// held, the oldest dropped first; one put again under its key is the newest.
func TestPlansBounded(t *testing.T) {
	m := &plans{max: 3}
	plan := func(i int) *PlanResourceChangeResponse {
		return &PlanResourceChangeResponse{PlannedPrivate: []byte(fmt.Sprint(i))}
	}
	for i := range 5 {
		m.put(fmt.Sprint(i), plan(i))
	}
	if n := m.len(); n != 3 {
		t.Fatalf("held %d plans after 5 puts, want the bound 3", n)
	}
	for _, k := range []string{"0", "1"} {
		if _, ok := m.take(k); ok {
			t.Errorf("plan %s, among the oldest past the bound, was still held", k)
		}
	}
	m.put("2", plan(22)) // 2 is now the newest: 3 goes first
	m.put("5", plan(5))
	if _, ok := m.take("3"); ok {
		t.Error("plan 3 was held, want it dropped as the oldest")
	}
	p, ok := m.take("2")
	if !ok || string(p.PlannedPrivate) != "22" {
		t.Fatalf("plan 2 = %v, %v: want the one put last under its key", p, ok)
	}
	if _, ok := m.take("2"); ok {
		t.Error("plan 2 was taken twice")
	}
	for _, k := range []string{"4", "5"} {
		if _, ok := m.take(k); !ok {
			t.Errorf("plan %s not held", k)
		}
	}
	if n := m.len(); n != 0 {
		t.Errorf("%d plans held after every one was taken, want none", n)
	}
}

// recordingWire counts the plans and applies a provider is asked for and
// keeps what each apply was given.
type recordingWire struct {
	wire
	plans, applies atomic.Int64
	mu             sync.Mutex
	applied        []rawApply
}

func (w *recordingWire) planResourceChange(ctx context.Context, r rawPlan) (rawResult, error) {
	w.plans.Add(1)
	return w.wire.planResourceChange(ctx, r)
}

func (w *recordingWire) applyResourceChange(ctx context.Context, r rawApply) (rawResult, error) {
	w.applies.Add(1)
	w.mu.Lock()
	w.applied = append(w.applied, r)
	w.mu.Unlock()
	return w.wire.applyResourceChange(ctx, r)
}

func (w *recordingWire) lastApply(t *testing.T) rawApply {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.applied) == 0 {
		t.Fatal("no apply was made")
	}
	return w.applied[len(w.applied)-1]
}

// TestAdapterUpdateAppliesTheCheckPlan: an Update whose request is what a
// Read with the same config just planned (the host's Check of the update)
// applies that plan: one PlanResourceChange (the one after the apply, see
// settled) and one ApplyResourceChange, where an Update nothing planned
// before makes two plans; what is applied and answered is the same either
// way. The plan is taken once; a Read toward another config than the
// Update's, or toward a config not wholly known, leaves the Update to plan
// again; a plan of no change is not kept. Both protocols.
func TestAdapterUpdateAppliesTheCheckPlan(t *testing.T) {
	for _, version := range []int{Protocol5, Protocol6} {
		t.Run(fmt.Sprintf("protocol%d", version), func(t *testing.T) {
			t.Parallel()
			updateAppliesTheCheckPlan(t, version)
		})
	}
}

func updateAppliesTheCheckPlan(t *testing.T, version int) {
	ctx := context.Background()
	adapter := func() (*Adapter, *recordingWire) {
		p := start(t, version)
		w := &recordingWire{wire: p.w}
		p.w = w
		a := NewAdapter(p, "tftest", "0.0.0")
		if _, err := a.Configure(ctx, &providers.ConfigureRequest{Config: providers.Attributes{"prefix": "p-"}}); err != nil {
			t.Fatal(err)
		}
		return a, w
	}
	create := func(a *Adapter) *providers.CreateResponse {
		t.Helper()
		made, err := a.Create(ctx, &providers.CreateRequest{Type: "tftest_thing", Name: "a", Config: providers.Attributes{"name": "a", "size": 1}})
		noErrors(t, "create", made.Diagnostics, err)
		return made
	}
	read := func(a *Adapter, private []byte, cfg providers.Attributes) *providers.ReadResponse {
		t.Helper()
		rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: "x", Config: cfg, Private: private})
		noErrors(t, "read", rr.Diagnostics, err)
		return rr
	}
	// counted is an Update and the plans and applies it made.
	counted := func(a *Adapter, w *recordingWire, private []byte, cfg providers.Attributes) (*providers.UpdateResponse, int64, int64) {
		t.Helper()
		plans, applies := w.plans.Load(), w.applies.Load()
		up, err := a.Update(ctx, &providers.UpdateRequest{Type: "tftest_thing", Name: "a", ID: "x", Config: cfg, Private: private})
		noErrors(t, "update", up.Diagnostics, err)
		return up, w.plans.Load() - plans, w.applies.Load() - applies
	}
	size2 := providers.Attributes{"name": "a", "size": 2}

	// The same steps on two providers: one updates after its Check's
	// read, the other updates with nothing planned before.
	checked, cw := adapter()
	unchecked, uw := adapter()
	madeC, madeU := create(checked), create(unchecked)
	if !bytes.Equal(madeC.Private, madeU.Private) {
		t.Fatalf("the two providers made different things: %s and %s", madeC.Private, madeU.Private)
	}
	if n := checked.plans.len(); n != 0 {
		t.Errorf("a create left %d plans remembered, want none", n)
	}
	rr := read(checked, madeC.Private, size2)
	if rr.Planned == nil || !slices.Contains(rr.Planned.Changes, "size") {
		t.Fatalf("the check planned %+v, want a change of size", rr.Planned)
	}
	if n := checked.plans.len(); n != 1 {
		t.Fatalf("the check left %d plans remembered, want 1", n)
	}
	upC, plans, applies := counted(checked, cw, rr.Private, size2)
	if plans != 1 || applies != 1 {
		t.Errorf("an update after its check made %d plans and %d applies, want 1 (the one after the apply) and 1", plans, applies)
	}
	if n := checked.plans.len(); n != 0 {
		t.Errorf("%d plans still remembered after the update took its own, want none", n)
	}
	upU, plans, applies := counted(unchecked, uw, madeU.Private, size2)
	if plans != 2 || applies != 1 {
		t.Errorf("an update with nothing planned before made %d plans and %d applies, want 2 and 1", plans, applies)
	}
	// The provider was given the same apply, and answered the same.
	ac, au := cw.lastApply(t), uw.lastApply(t)
	if !reflect.DeepEqual(ac, au) {
		t.Errorf("applies differ:\n after the check %+v\n without         %+v", ac, au)
	}
	if !reflect.DeepEqual(upC.Attributes, upU.Attributes) || !bytes.Equal(upC.Private, upU.Private) {
		t.Errorf("updates answered differently:\n after the check %v %s\n without         %v %s", upC.Attributes, upC.Private, upU.Attributes, upU.Private)
	}
	if upC.ReadBack == nil || upC.ReadBack.Planned == nil || len(upC.ReadBack.Planned.Changes) != 0 {
		t.Errorf("the update's read-back %+v, want one with a plan of no change", upC.ReadBack)
	}

	// Taken once: the same update again plans for itself.
	if _, plans, _ := counted(checked, cw, rr.Private, size2); plans != 2 {
		t.Errorf("a second update of the same request made %d plans, want 2 (the remembered plan is taken once)", plans)
	}

	// A check toward another config than the update's: the update plans.
	cur := upC.Private
	rr = read(checked, cur, providers.Attributes{"name": "a", "size": 3})
	if _, plans, _ := counted(checked, cw, rr.Private, providers.Attributes{"name": "a", "size": 4}); plans != 2 {
		t.Errorf("an update toward another config than its check's made %d plans, want 2", plans)
	}
	// What that check planned was not taken: it is still held, one of a
	// bounded number.
	if n := checked.plans.len(); n != 1 {
		t.Errorf("%d plans remembered, want the one no update took", n)
	}
	checked.plans.take(only(t, &checked.plans))

	// A check toward a config not wholly known keeps nothing: Terraform
	// plans again at apply for what was unknown.
	rr, err := checked.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: "x", Private: cur, Config: providers.Attributes{"name": "a", "size": Unknown{}}})
	noErrors(t, "read toward an unknown", rr.Diagnostics, err)
	if rr.Planned == nil || !slices.Contains(rr.Planned.Changes, "size") {
		t.Fatalf("the check toward an unknown size planned %+v, want a change of size", rr.Planned)
	}
	if n := checked.plans.len(); n != 0 {
		t.Errorf("a check toward a config with an unknown left %d plans remembered, want none", n)
	}

	// A check that plans no change keeps nothing (no update follows):
	// the recorded state is older than what the provider reads (size 4),
	// so the provider plans.
	rr = read(checked, cur, providers.Attributes{"name": "a", "size": 4})
	if rr.Planned == nil || len(rr.Planned.Changes) != 0 {
		t.Fatalf("the check planned %+v, want no change", rr.Planned)
	}
	if n := checked.plans.len(); n != 0 {
		t.Errorf("a check of no change left %d plans remembered, want none", n)
	}
	// Nor one that forces a replace (the replacement's create plans from
	// no prior state).
	rr = read(checked, cur, providers.Attributes{"name": "b", "size": 4})
	if rr.Planned == nil || !slices.Contains(rr.Planned.RequiresReplace, "name") {
		t.Fatalf("the check planned %+v, want name to force a replace", rr.Planned)
	}
	if n := checked.plans.len(); n != 0 {
		t.Errorf("a check of a replace left %d plans remembered, want none", n)
	}
}

// TestAdapterUpdateAppliesTheCheckPlanVerified: an update that applies
// its check's plan is verified against that plan: an applied state other
// than the planned one is Terraform's "inconsistent result after apply".
func TestAdapterUpdateAppliesTheCheckPlanVerified(t *testing.T) {
	ctx := context.Background()
	p := start(t, Protocol6)
	rw := &recordingWire{wire: p.w}
	w := &applyWire{wire: rw}
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
	cfg := providers.Attributes{"name": "a", "size": 2}
	rr, err := a.Read(ctx, &providers.ReadRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: cfg, Private: made.Private})
	noErrors(t, "read", rr.Diagnostics, err)
	w.rewrite = func(r rawResult) rawResult {
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
		r.state = dynamic{msgpack: b}
		return r
	}
	before := rw.plans.Load()
	up, err := a.Update(ctx, &providers.UpdateRequest{Type: "tftest_thing", Name: "a", ID: made.ID, Config: cfg, Private: rr.Private})
	noErrors(t, "update", up.Diagnostics, err)
	if n := rw.plans.Load() - before; n != 1 {
		t.Errorf("the update made %d plans, want 1: it applies its check's", n)
	}
	if up.ReadBack == nil || up.ReadBack.Planned == nil || !slices.Equal(up.ReadBack.Planned.Changes, []string{"id"}) {
		t.Errorf("an applied id other than the planned one: read-back %+v, want the change [id]", up.ReadBack)
	}
}

// only is the key of the one plan m holds.
func only(t *testing.T, m *plans) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.order.Len() != 1 {
		t.Fatalf("%d plans held, want 1", m.order.Len())
	}
	return m.order.Front().Value.(*rememberedPlan).key
}
