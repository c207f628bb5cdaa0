package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// deposed lists the records of st a replace set aside.
func deposedNames(e *env, t *testing.T) []string {
	var out []string
	for n, r := range e.state(t, "s").Resources {
		if r.Deposed() {
			out = append(out, n)
		}
	}
	return out
}

// A replace whose provider says old and new can coexist makes the new one
// first and deletes the old one only in the cleanup phase, after every other
// step (here: the dependent's update to the new id).
func TestReplaceCreatesFirstDeletesLast(t *testing.T) {
	e := newEnv(t)
	e.w.Coexist()
	e.mustApply(t, mkSpec(t, res{name: "vpc", typ: "network", zone: "a"}, res{name: "sub", typ: "generic", deps: []string{"vpc"}, size: 1}))
	oldID := e.state(t, "s").Resources["vpc"].ID
	e.mustApply(t, mkSpec(t, res{name: "vpc", typ: "network", zone: "b"}, res{name: "sub", typ: "generic", deps: []string{"vpc"}, size: 2}))
	st := e.state(t, "s")
	if st.Resources["vpc"].ID == oldID {
		t.Fatalf("vpc was not replaced")
	}
	if err := agree(st, e.w.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if d := deposedNames(e, t); len(d) != 0 {
		t.Errorf("deposed records left after a successful run: %v", d)
	}
	// The new vpc was created before the old one was deleted, and the old
	// one deleted after sub's update.
	out := e.out.String()
	created := strings.Index(out, "step vpc replace ok")
	subDone := strings.Index(out, "step sub update ok")
	deleted := strings.Index(out, "step vpc#")
	if created < 0 || subDone < 0 || deleted < 0 || !(created < deleted && subDone < deleted) {
		t.Errorf("want the replace, then sub's update, then the old vpc's cleanup; output:\n%s", out)
	}
	dels := e.w.Deletes()
	if len(dels) != 1 || dels[0].ID != oldID || dels[0].Name != "vpc" {
		t.Errorf("deletes %+v, want the old vpc %s by its address", dels, oldID)
	}
}

// A failed run that replaced vpc and then failed at a later resource rolls
// back to where it started (exit 11): the new vpc deleted, the old one
// current again with its id (create first) or its configuration made again
// (delete first), the dependent put back to its prior config, nothing
// orphaned, nothing left aside.
func TestReplaceRollbackEndsWhereItStarted(t *testing.T) {
	for _, coexist := range []bool{true, false} {
		name := map[bool]string{true: "create first", false: "delete first"}[coexist]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if coexist {
				e.w.Coexist()
			}
			v1 := []res{{name: "vpc", typ: "network", zone: "a"}, {name: "sub", typ: "generic", deps: []string{"vpc"}, size: 1}, {name: "app", typ: "compute", deps: []string{"sub"}}}
			e.mustApply(t, mkSpec(t, v1...))
			before := e.state(t, "s")
			v2 := slices.Clone(v1)
			v2[0].zone, v2[1].size, v2[2].size = "b", 2, 3
			r, err := e.apply(mkSpec(t, v2...), simulate("app"))
			if code := stack.ExitCode(r, err); code != stack.ExitCompensated {
				t.Fatalf("exit %d (err %v, %v), want 11", code, err, resErr(r))
			}
			st := e.state(t, "s")
			if err := agree(st, e.w.Snapshot()); err != nil {
				t.Fatal(err)
			}
			if d := deposedNames(e, t); len(d) != 0 {
				t.Errorf("deposed records left after the rollback: %v", d)
			}
			vpc := st.Resources["vpc"]
			if vpc == nil || vpc.Config["zone"] != "a" {
				t.Fatalf("vpc after the rollback: %+v, want zone a", vpc)
			}
			if coexist && vpc.ID != before.Resources["vpc"].ID {
				t.Errorf("create first: the old vpc %s must be current again, got %s", before.Resources["vpc"].ID, vpc.ID)
			}
			if !coexist && !strings.Contains(e.out.String(), "its id changed from "+before.Resources["vpc"].ID+" to "+vpc.ID) {
				t.Errorf("delete first: the rollback must say the id changed; output:\n%s", e.out.String())
			}
			if got := len(e.w.Names()); got != 3 {
				t.Errorf("world holds %v, want one of each", e.w.Names())
			}
			if sub := st.Resources["sub"]; sub.Config["size"] != 1.0 && sub.Config["size"] != 1 {
				t.Errorf("sub not put back: %+v", sub.Config)
			}
		})
	}
}

// Replacing a durable resource loses its data in either order: without the
// run's consent (--replace) it is refused before any step, naming the
// attribute and the way on; with it, it is replaced.
func TestDurableReplaceNeedsConsent(t *testing.T) {
	e := newEnv(t)
	e.w.Coexist()
	e.mustApply(t, mkSpec(t, res{name: "db", typ: "s3_bucket", prot: "durable", zone: "a"}))
	oldID := e.state(t, "s").Resources["db"].ID
	r, err := e.apply(mkSpec(t, res{name: "db", typ: "s3_bucket", prot: "durable", zone: "b"}))
	if code := stack.ExitCode(r, err); code != stack.ExitRefused {
		t.Fatalf("exit %d (err %v), want 3", code, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "db: force_new attribute(s) zone changed") || !strings.Contains(msg, "--replace db") {
		t.Errorf("refusal %q does not name the attribute and the way on", msg)
	}
	if len(e.w.Creates()) != 1 || len(e.w.Deletes()) != 0 {
		t.Fatalf("a refused run changed the world: creates %v deletes %v", e.w.Creates(), e.w.Deletes())
	}
	e.mustApply(t, mkSpec(t, res{name: "db", typ: "s3_bucket", prot: "durable", zone: "b"}), replacing("db"))
	if st := e.state(t, "s"); st.Resources["db"].ID == oldID || agree(st, e.w.Snapshot()) != nil {
		t.Errorf("db not replaced with consent: %+v", st.Resources["db"])
	}
	// --replace with no change replaces too (Terraform's -replace).
	id := e.state(t, "s").Resources["db"].ID
	e.mustApply(t, mkSpec(t, res{name: "db", typ: "s3_bucket", prot: "durable", zone: "b"}), replacing("db"))
	if st := e.state(t, "s"); st.Resources["db"].ID == id || agree(st, e.w.Snapshot()) != nil {
		t.Errorf("--replace with no change did not replace db: %+v", st.Resources["db"])
	}
}

// A rollback of a durable replace reports no data kept that is gone: the
// replacement is deleted, the old one current again, and Preserved does not
// name it.
func TestDurableReplaceRollbackClaimsNothingKept(t *testing.T) {
	e := newEnv(t)
	e.w.Coexist()
	e.mustApply(t, mkSpec(t, res{name: "d", typ: "s3_bucket", prot: "durable", zone: "a"}, res{name: "x", typ: "generic", deps: []string{"d"}}))
	oldID := e.state(t, "s").Resources["d"].ID
	r, err := e.apply(mkSpec(t, res{name: "d", typ: "s3_bucket", prot: "durable", zone: "b"}, res{name: "x", typ: "generic", deps: []string{"d"}, size: 2}), replacing("d"), simulate("x"))
	if code := stack.ExitCode(r, err); code != stack.ExitCompensated || r.Outcome != engine.Compensated {
		t.Fatalf("exit %d (err %v)", code, err)
	}
	if len(r.Preserved) != 0 {
		t.Errorf("Preserved = %v: nothing of this run was kept", r.Preserved)
	}
	st := e.state(t, "s")
	if st.Resources["d"].ID != oldID {
		t.Errorf("d after the rollback is %s, want the old %s (its data)", st.Resources["d"].ID, oldID)
	}
	if err := agree(st, e.w.Snapshot()); err != nil {
		t.Error(err)
	}
}

// A cleanup that fails rolls nothing back (every other step succeeded and
// the new resource is in use): the run fails (exit 1), the old object stays
// recorded, set aside, and the plan says what it is; the next apply deletes
// it.
func TestCleanupFailureLeavesTheOldRecordedForTheNextRun(t *testing.T) {
	e := newEnv(t)
	e.w.Coexist()
	e.mustApply(t, mkSpec(t, res{name: "vpc", typ: "network", zone: "a"}, res{name: "sub", typ: "generic", deps: []string{"vpc"}}))
	oldID := e.state(t, "s").Resources["vpc"].ID
	v2 := mkSpec(t, res{name: "vpc", typ: "network", zone: "b"}, res{name: "sub", typ: "generic", deps: []string{"vpc"}})
	e.w.FailNextDeletes("vpc", 1)
	r, err := e.apply(v2)
	if code := stack.ExitCode(r, err); code != stack.ExitError || r.Outcome != engine.Failed {
		t.Fatalf("exit %d outcome %v (err %v, %v), want 1, failed", code, r.Outcome, err, resErr(r))
	}
	st := e.state(t, "s")
	if st.Resources["vpc"].ID == oldID {
		t.Fatalf("the new vpc is not current")
	}
	dep := deposedNames(e, t)
	if len(dep) != 1 || st.Resources[dep[0]].ID != oldID {
		t.Fatalf("the old vpc %s is not recorded set aside: %v", oldID, dep)
	}
	if err := agree(st, e.w.Snapshot()); err != nil {
		t.Fatal(err)
	}
	pv, err := stack.Plan(e.ctx, v2, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range pv.Changes {
		if c.Resource == dep[0] && strings.Contains(c.Drift, "deleted in the cleanup phase") {
			found = true
		}
	}
	if !found {
		t.Errorf("the plan does not say what %s is: %+v", dep[0], pv.Changes)
	}
	e.mustApply(t, v2)
	if d := deposedNames(e, t); len(d) != 0 {
		t.Errorf("the next apply left %v", d)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Fatal(err)
	}
}

// What an earlier run set aside and could not delete is deleted first by
// the next run, before a replace back to its identity could meet it.
func TestLeftoverIsDeletedBeforeAReplaceBackToIt(t *testing.T) {
	e := newEnv(t)
	e.w.Coexist()
	e.mustApply(t, mkSpec(t, res{name: "vpc", typ: "network", zone: "a"}))
	e.w.FailNextDeletes("vpc", 1)
	if r, err := e.apply(mkSpec(t, res{name: "vpc", typ: "network", zone: "b"})); stack.ExitCode(r, err) != stack.ExitError {
		t.Fatalf("want the cleanup to fail: %v %v", err, resErr(r))
	}
	// Back to zone a: the old vpc (zone a) set aside must go before the new
	// one is made there.
	e.mustApply(t, mkSpec(t, res{name: "vpc", typ: "network", zone: "a"}))
	if d := deposedNames(e, t); len(d) != 0 {
		t.Errorf("left %v", d)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Fatal(err)
	}
}
