package stack_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func targeting(addrs ...string) opt { return func(o *stack.Options) { o.Targets = addrs } }

// A targeted apply creates the target and what it depends on, nothing
// else; its plan lists only those; its result says it was partial.
func TestTargetedApplyCoversTargetAndDependencies(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, demo...)
	pv, err := stack.Plan(e.ctx, sp, e.opts(targeting("storage")))
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, c := range pv.Changes {
		planned = append(planned, c.Resource)
	}
	if d := cmp.Diff([]string{"network", "storage"}, sorted(planned)); d != "" {
		t.Errorf("targeted plan (-want +got):\n%s", d)
	}
	if !slices.Equal(pv.Targets, []string{"storage"}) {
		t.Errorf("plan's Targets = %v", pv.Targets)
	}
	r := e.mustApply(t, sp, targeting("storage"))
	if d := cmp.Diff([]string{"network", "storage"}, sorted(names(e.w.Creates()))); d != "" {
		t.Errorf("targeted apply's creates (-want +got):\n%s", d)
	}
	if !slices.Equal(r.Targets, []string{"storage"}) {
		t.Errorf("Result.Targets = %v", r.Targets)
	}
	if st := e.state(t, "s"); len(st.Resources) != 2 || !slices.Equal(st.Revisions[len(st.Revisions)-1].Targets, []string{"storage"}) {
		t.Errorf("state after: %d resources, revisions %+v", len(st.Resources), st.Revisions)
	}
	// The whole apply after it creates the rest.
	e.mustApply(t, sp)
	if got := len(e.w.Creates()); got != len(demo) {
		t.Errorf("creates after the full apply: %d, want %d", got, len(demo))
	}
}

// A targeted apply never deletes, or touches, an untargeted resource that
// left the spec; targeting it deletes it (and a protected one is still
// refused).
func TestTargetedApplyLeavesUntargetedRemovals(t *testing.T) {
	e := newEnv(t)
	all := []res{{name: "a", typ: "generic", size: 1}, {name: "b", typ: "generic", size: 1}, {name: "vault", typ: "generic", prot: "protected"}}
	e.mustApply(t, mkSpec(t, all...))
	c0, u0, d0 := e.w.Calls()
	// b and vault leave the spec; a changes.
	next := mkSpec(t, res{name: "a", typ: "generic", size: 2})
	e.mustApply(t, next, targeting("a"))
	c1, u1, d1 := e.w.Calls()
	if c1 != c0 || u1 != u0+1 || d1 != d0 {
		t.Errorf("targeted apply of a: creates %d->%d updates %d->%d deletes %d->%d; want one update", c0, c1, u0, u1, d0, d1)
	}
	if st := e.state(t, "s"); st.Resources["b"] == nil || st.Resources["vault"] == nil {
		t.Fatalf("untargeted removals were dropped from the state: %v", st.Names())
	}
	// Targeting b deletes it, only it.
	e.mustApply(t, next, targeting("b"))
	if d := cmp.Diff([]string{"b"}, names(e.w.Deletes())); d != "" {
		t.Errorf("deletes (-want +got):\n%s", d)
	}
	// Targeting the protected one is refused: nothing deleted.
	r, err := e.apply(next, targeting("vault"))
	var re *plan.RefusedError
	if !errors.As(err, &re) || stack.ExitCode(r, err) != stack.ExitRefused {
		t.Fatalf("targeted removal of a protected resource: %v (exit %d), want a refusal", err, stack.ExitCode(r, err))
	}
	if len(e.w.Deletes()) != 1 || e.w.ByName("vault") == nil {
		t.Errorf("vault was touched: deletes %v", names(e.w.Deletes()))
	}
}

// A target that names nothing is refused before any provider call.
func TestUnknownTargetIsRefused(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, demo...)
	_, err := e.apply(sp, targeting("nosuch"))
	var ue *stack.UnknownTargetError
	if !errors.As(err, &ue) || ue.Address != "nosuch" {
		t.Fatalf("apply --target nosuch: %v, want an UnknownTargetError", err)
	}
	if c, u, d := e.w.Calls(); c+u+d != 0 {
		t.Errorf("provider mutated: %d %d %d", c, u, d)
	}
	if _, err := e.teardown(sp, targeting("network")); !errors.As(err, &ue) {
		t.Errorf("teardown --target of what the state does not record: %v", err)
	}
}

// A targeted teardown deletes the target and what depends on it, dependents
// first, and nothing else; the revision stays current. A protected
// dependent refuses the whole teardown.
func TestTargetedTeardownDeletesTargetAndDependents(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, demo...)
	e.mustApply(t, sp)
	r, err := e.teardown(sp, targeting("storage"))
	if err != nil || r.Outcome != engine.Succeeded {
		t.Fatalf("teardown --target storage: %+v %v", r, err)
	}
	del := names(e.w.Deletes())
	if d := cmp.Diff([]string{"app", "compute", "storage"}, sorted(del)); d != "" {
		t.Errorf("deletes (-want +got):\n%s", d)
	}
	if err := dependentsFirst(del, depsOf(demo...)); err != nil {
		t.Error(err)
	}
	st := e.state(t, "s")
	if d := cmp.Diff([]string{"network", "table"}, sorted(st.Names())); d != "" {
		t.Errorf("state after (-want +got):\n%s", d)
	}
	if st.Current == 0 {
		t.Error("a partial teardown left no revision current")
	}

	e2 := newEnv(t)
	guarded := []res{{name: "net", typ: "network"}, {name: "db", typ: "generic", prot: "protected", deps: []string{"net"}}}
	e2.mustApply(t, mkSpec(t, guarded...))
	r, err = e2.teardown(mkSpec(t, guarded...), targeting("net"))
	var re *plan.RefusedError
	if !errors.As(err, &re) || stack.ExitCode(r, err) != stack.ExitRefused || len(e2.w.Deletes()) != 0 {
		t.Fatalf("teardown --target net under protected db: %v, deletes %v; want a refusal, nothing deleted", err, names(e2.w.Deletes()))
	}
}

// An interrupted targeted apply is resumed inside its targets: they are on
// its start record, and the resume never widens them.
func TestResumeOfTargetedApplyStaysInsideItsTargets(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, append(slices.Clone(chain3), res{name: "d", typ: "generic"})...)
	r := e.mustApply(t, sp, targeting("b"))
	// As if it had been killed before its end record.
	e.editJournal(t, func(rec journal.Record) bool {
		return !(rec.Op == r.Op && rec.Kind == journal.KindOp && rec.Status != journal.OpRunning)
	})
	rr, err := e.resume(sp)
	if err != nil || stack.ExitCode(rr, err) != stack.ExitOK {
		t.Fatalf("resume: %v; exit %d (%v)", err, stack.ExitCode(rr, err), resErr(rr))
	}
	if d := cmp.Diff([]string{"a", "b"}, sorted(e.w.Names())); d != "" {
		t.Errorf("world after the resume (-want +got):\n%s", d)
	}
	if !slices.Equal(rr.Targets, []string{"b"}) {
		t.Errorf("resumed Result.Targets = %v", rr.Targets)
	}
}
