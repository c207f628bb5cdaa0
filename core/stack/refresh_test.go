package stack_test

import (
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
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
