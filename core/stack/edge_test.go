package stack_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/storage"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// A resource gone from the spec is deleted under the ladder's third column:
// ephemeral and durable go, dependents first.
func TestRemovedFromSpecIsDeleted(t *testing.T) {
	e := newEnv(t)
	rs := []res{
		{name: "net", typ: "network"},
		{name: "bucket", typ: "s3_bucket", prot: "durable", deps: []string{"net"}},
		{name: "vm", typ: "compute", deps: []string{"bucket"}},
		{name: "keep", typ: "generic"},
	}
	e.mustApply(t, mkSpec(t, rs...))
	r := e.mustApply(t, mkSpec(t, rs[3]))
	if d := cmp.Diff([]string{"bucket", "net", "vm"}, sorted(resourcesOf(r.Run.Done))); d != "" {
		t.Errorf("Done (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"vm", "bucket", "net"}, names(e.w.Deletes())); d != "" {
		t.Errorf("deletes (-want +got):\n%s", d)
	}
	for _, c := range e.w.Deletes() {
		want := protection.Ephemeral
		if c.Name == "bucket" {
			want = protection.Durable
		}
		if c.Protection != want {
			t.Errorf("Delete of %s carries %v, want %v", c.Name, c.Protection, want)
		}
	}
	if d := cmp.Diff([]string{"keep"}, e.state(t, "s").Names()); d != "" {
		t.Errorf("state (-want +got):\n%s", d)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
}

// A failed Delete in a teardown goes on with what does not depend on it and
// keeps everything it depends on; a second teardown finishes.
func TestTeardownWithAFailedDelete(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, demo...)
	e.mustApply(t, sp)
	e.w.FailNextDeletes("compute", 1)
	r, err := e.teardown(sp)
	if code := stack.ExitCode(r, err); err != nil || code != stack.ExitError || r.Outcome != engine.Failed {
		t.Fatalf("teardown: exit %d err %v outcome %v; want 1, failed", code, err, r.Outcome)
	}
	// app went first; compute failed; what compute depends on is kept.
	if d := cmp.Diff([]string{"compute", "network", "storage", "table"}, e.w.Names()); d != "" {
		t.Errorf("world (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"network", "storage", "table"}, sorted(resourcesOf(r.Run.Blocked))); d != "" {
		t.Errorf("Blocked (-want +got):\n%s", d)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
	r, err = e.teardown(sp)
	if code := stack.ExitCode(r, err); err != nil || code != stack.ExitOK {
		t.Fatalf("second teardown: exit %d err %v", code, err)
	}
	if n := e.w.Names(); len(n) != 0 {
		t.Errorf("world after the second teardown: %v", n)
	}
}

// A second operation on a locked stack is refused with exit 4 and does
// nothing.
func TestSecondOperationWhileLocked(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "generic"})
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	e.w.OnCreate(func(string) {
		once.Do(func() { close(entered) })
		<-release
	})
	done := make(chan error, 1)
	go func() {
		r, err := e.apply(sp)
		if err == nil && r.Err != nil {
			err = r.Err
		}
		done <- err
	}()
	<-entered
	c0, _, _ := e.w.Calls()
	for _, op := range []string{"apply", "teardown", "resume"} {
		var r *stack.Result
		var err error
		switch op {
		case "apply":
			r, err = e.apply(sp)
		case "teardown":
			r, err = e.teardown(sp)
		case "resume":
			r, err = e.resume(sp)
		}
		if !errors.Is(err, storage.ErrLocked) || stack.ExitCode(r, err) != stack.ExitLocked {
			t.Errorf("%s while locked: %v (exit %d); want storage.ErrLocked, 4", op, err, stack.ExitCode(r, err))
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the first apply: %v", err)
	}
	if c1, _, _ := e.w.Calls(); c1 != c0+1 {
		t.Errorf("creates %d -> %d; want only the first apply's", c0, c1)
	}
}

// A protected resource whose force_new attribute drifted in reality is not
// deleted by the replace the drift calls for.
func TestDriftedProtectedResourceIsNotReplaced(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "vault", typ: "dynamodb_table", prot: "protected", zone: "z1"})
	e.mustApply(t, sp)
	id := e.state(t, "s").Resources["vault"].ID
	e.w.SetAttr("vault", "zone", "elsewhere")
	r, err := e.apply(sp)
	// The drift is found before the first step: the run is refused whole.
	var refused *plan.RefusedError
	if !errors.As(err, &refused) || stack.ExitCode(r, err) != stack.ExitRefused {
		t.Errorf("apply over a drifted force_new attribute of a protected resource: exit %d, err %v, result err %v", stack.ExitCode(r, err), err, resErr(r))
	}
	if d := e.w.Deletes(); len(d) != 0 {
		t.Fatalf("Delete sent for a protected resource: %+v", d)
	}
	if w := e.w.ByName("vault"); w == nil || w.ID != id {
		t.Fatalf("vault after apply: %+v", w)
	}
	if got := e.state(t, "s").Resources["vault"]; got == nil || got.ID != id || got.Protection != protection.Protected {
		t.Errorf("recorded vault: %+v", got)
	}
}

// Changing a resource's type is a replace (plan.ForApply says so): the old
// resource must be deleted, not left behind untracked. (A regression test:
// it failed before commit 6e6cab2.)
func TestTypeChangeReplacesTheOldResource(t *testing.T) {
	for _, prot := range []string{"", "durable"} {
		t.Run("protection="+prot, func(t *testing.T) {
			e := newEnv(t)
			e.mustApply(t, mkSpec(t, res{name: "a", typ: "network", prot: prot}))
			oldID := e.state(t, "s").Resources["a"].ID
			// A durable one is replaced only with the run's consent.
			e.mustApply(t, mkSpec(t, res{name: "a", typ: "compute", prot: prot}), replacing("a"))
			var types []string
			for _, w := range e.w.Snapshot() {
				types = append(types, w.Type+" "+w.Name)
			}
			if d := cmp.Diff([]string{"compute a"}, types); d != "" {
				t.Errorf("world after the type change (-want +got):\n%s", d)
			}
			dels := e.w.Deletes()
			if len(dels) != 1 || dels[0].ID != oldID {
				t.Errorf("deletes %+v; want the old network %s", dels, oldID)
			}
			if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
				t.Error(err)
			}
		})
	}
}

// Result.Preserved "lists the resources a rollback kept (durable or
// protected)": an ephemeral resource whose compensation failed was not kept
// by the ladder, it is what resume must still delete.
func TestPreservedListsOnlyDurableAndProtected(t *testing.T) {
	e := newEnv(t)
	e.mustApply(t, mkSpec(t, rollbackStack[0]))
	e.w.FailNextDeletes("compute", 1)
	r, err := e.apply(mkSpec(t, rollbackStack...), simulate("app"))
	if err != nil || r.Outcome != engine.RollbackIncomplete {
		t.Fatalf("apply: %v outcome %v", err, r.Outcome)
	}
	if !slices.Equal(r.Preserved, []string{"storage", "vault"}) {
		t.Errorf("Preserved = %v, want [storage vault] (compute is ephemeral: its compensation failed, it was not kept)", r.Preserved)
	}
}

// A resource recorded in the state but gone from reality is created again by
// the next apply, under that apply's operation, even when the plan (made from
// the state alone) said "update". If that apply fails, its rollback deletes
// the re-created resource; when that delete fails, resume must finish the
// job just as the in-process rollback does.
func TestResumeUndoesACreateDecidedByCheck(t *testing.T) {
	for _, by := range []string{"apply", "resume"} {
		t.Run("undone by "+by, func(t *testing.T) {
			e := newEnv(t)
			e.mustApply(t, mkSpec(t, res{name: "base", typ: "network", size: 1}))
			e.w.Remove("base") // drift: gone behind bulwark's back
			if by == "resume" {
				e.w.FailNextDeletes("base", 1)
			}
			sp := mkSpec(t, res{name: "base", typ: "network", size: 2}, res{name: "app", typ: "generic", deps: []string{"base"}})
			r, err := e.apply(sp, simulate("app"))
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if len(succeeded(e.w.Creates())) != 2 {
				t.Fatalf("base was not re-created: creates %+v", e.w.Creates())
			}
			if by == "resume" {
				if r.Outcome != engine.RollbackIncomplete {
					t.Fatalf("apply: outcome %v (err %v)", r.Outcome, r.Err)
				}
				rr, err := e.resume(sp)
				if code := stack.ExitCode(rr, err); err != nil || code != stack.ExitCompensated {
					t.Fatalf("resume: exit %d err %v", code, err)
				}
			} else if r.Outcome != engine.Compensated {
				t.Fatalf("apply: outcome %v (err %v)", r.Outcome, r.Err)
			}
			if w := e.w.ByName("base"); w != nil {
				t.Errorf("base, created by the failed apply %s, survives its rollback: %+v", r.Op, w)
			}
			if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
				t.Error(err)
			}
		})
	}
}

// When an apply replaces K and removes R, and the state records that R
// depends on K, R should be deleted before K (dependents first, as
// deleteStep promises for removals and teardown).
func TestRemovalOfADependentBeforeReplacingItsDependency(t *testing.T) {
	e := newEnv(t)
	k := res{name: "k", typ: "network", zone: "z1"}
	r := res{name: "r", typ: "generic", deps: []string{"k"}}
	e.mustApply(t, mkSpec(t, k, r))
	k.zone = "z2"
	e.mustApply(t, mkSpec(t, k), parallelism(1))
	dels := names(e.w.Deletes())
	if d := cmp.Diff([]string{"k", "r"}, sorted(dels)); d != "" {
		t.Fatalf("deletes (-want +got):\n%s", d)
	}
	if err := dependentsFirst(dels, map[string][]string{"r": {"k"}}); err != nil {
		t.Error(err)
	}
}

// Plan (the dry run) runs every Check and never Execute: no Create, Update
// or Delete reaches the provider, and neither the state nor the journal
// changes, even over drift that an apply would record.
func TestPlanIsReadOnly(t *testing.T) {
	e := newEnv(t)
	rs := []res{
		{name: "net", typ: "network", size: 1},
		{name: "vault", typ: "dynamodb_table", prot: "protected", deps: []string{"net"}},
		{name: "gone", typ: "generic"},
		{name: "old", typ: "generic"},
	}
	e.mustApply(t, mkSpec(t, rs...))
	e.w.Remove("gone") // drift: an apply would forget it and create it again
	dir := stack.StackDir(e.stateDir, "s")
	stateBefore, _ := os.ReadFile(filepath.Join(dir, state.FileName))
	journalBefore := journalBytes(t, dir)
	c0, u0, d0 := e.w.Calls()

	next := slices.Clone(rs[:3])
	next[0].size = 2
	next = append(next, res{name: "fresh", typ: "compute"})
	pv, err := stack.Plan(e.ctx, mkSpec(t, next...), e.opts())
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	got := map[string]plan.Action{}
	for _, c := range pv.Changes {
		got[c.Resource] = c.Action
	}
	want := map[string]plan.Action{"net": plan.Update, "vault": plan.NoOp, "gone": plan.Create, "fresh": plan.Create, "old": plan.Delete}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("planned actions (-want +got):\n%s", d)
	}
	if !pv.HasChanges() || pv.Refused != nil {
		t.Errorf("HasChanges %v Refused %v", pv.HasChanges(), pv.Refused)
	}
	if c1, u1, d1 := e.w.Calls(); c1 != c0 || u1 != u0 || d1 != d0 {
		t.Errorf("plan called the provider: creates %d->%d updates %d->%d deletes %d->%d", c0, c1, u0, u1, d0, d1)
	}
	stateAfter, _ := os.ReadFile(filepath.Join(dir, state.FileName))
	journalAfter := journalBytes(t, dir)
	if string(stateAfter) != string(stateBefore) || string(journalAfter) != string(journalBefore) {
		t.Errorf("plan wrote the state or the journal")
	}

	// The ladder's refusal is reported, not acted on.
	pv, err = stack.Plan(e.ctx, mkSpec(t, rs[0]), e.opts())
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if pv.Refused == nil || !slices.Equal(pv.Refused.Resources, []string{"vault"}) {
		t.Errorf("Refused = %+v, want vault", pv.Refused)
	}
	if _, _, d1 := e.w.Calls(); d1 != d0 {
		t.Errorf("plan deleted")
	}
}
