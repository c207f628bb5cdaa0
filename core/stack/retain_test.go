package stack_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// deletesOf lists the names of the Deletes the world saw since n.
func (e *env) deletesSince(n int) []string { return names(e.w.Deletes()[n:]) }

// TestRollbackToRetains: `rollback --to N` follows the ladder's rollback
// column. Revision 1 has base; revision 2 adds x. Rolling back to 1 deletes
// an ephemeral x, and keeps a durable or protected one, recorded as
// retained: listed by status, never deleted by a later apply that lacks it,
// taken back by one that has it; a teardown deletes a retained durable one
// and refuses a protected one.
func TestRollbackToRetains(t *testing.T) {
	base := res{name: "base", typ: "network"}
	for _, tc := range []struct {
		level    string
		retained bool
	}{
		{"", false},
		{"durable", true},
		{"protected", true},
	} {
		t.Run("level "+tc.level, func(t *testing.T) {
			e := newEnv(t)
			v1 := mkSpec(t, base)
			v2 := mkSpec(t, base, res{name: "x", typ: "s3_bucket", prot: tc.level})
			e.mustApply(t, v1)
			e.mustApply(t, v2)
			xID := e.state(t, "s").Resources["x"].ID
			_, _, d0 := e.w.Calls()

			r, err := stack.Rollback(e.ctx, v1, e.opts(), 1)
			if code := stack.ExitCode(r, err); err != nil || code != stack.ExitOK {
				t.Fatalf("rollback: exit %d, err %v, result %v", code, err, resErr(r))
			}
			st := e.state(t, "s")
			if !tc.retained {
				if d := cmp.Diff([]string{"x"}, e.deletesSince(d0)); d != "" {
					t.Fatalf("an ephemeral x is deleted (-want +got):\n%s", d)
				}
				if st.Resources["x"] != nil || len(r.Retained) != 0 {
					t.Fatalf("x still recorded %+v, retained %v", st.Resources["x"], r.Retained)
				}
				return
			}
			if d := e.deletesSince(d0); len(d) != 0 {
				t.Fatalf("rollback --to deleted %v", d)
			}
			if rec := st.Resources["x"]; rec == nil || rec.ID != xID || rec.RetainedBy != r.Op {
				t.Fatalf("x after the rollback: %+v; want %s retained by %s", rec, xID, r.Op)
			}
			if d := cmp.Diff([]string{"x"}, r.Retained); d != "" {
				t.Errorf("Result.Retained (-want +got):\n%s", d)
			}
			if st.Current != 1 {
				t.Errorf("current revision %d, want 1", st.Current)
			}
			rep, err := inspect.Status(v1, e.opts())
			if err != nil {
				t.Fatal(err)
			}
			for _, sr := range rep.Resources {
				if sr.Retained != (sr.Name == "x") {
					t.Errorf("status: %s retained=%v", sr.Name, sr.Retained)
				}
			}
			pv, err := stack.Plan(e.ctx, v1, e.opts())
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := planned(pv, "x"); !ok || c.Action != plan.NoOp || !c.Retained || pv.HasChanges() || pv.Err() != nil {
				t.Errorf("plan of v1 lists x as %+v (found %v); changes %v, refused %v", c.Change, ok, pv.HasChanges(), pv.Err())
			}

			// An apply of a spec without x keeps it.
			e.mustApply(t, mkSpec(t, base, res{name: "other", typ: "generic"}))
			if d := e.deletesSince(d0); len(d) != 0 {
				t.Fatalf("an apply without x deleted %v", d)
			}
			if rec := e.state(t, "s").Resources["x"]; rec == nil || rec.RetainedBy != r.Op {
				t.Fatalf("x after an apply without it: %+v", rec)
			}

			// A teardown deletes it as durable; refuses it as protected.
			tr, err := e.teardown(v1)
			if tc.level == "protected" {
				var re *plan.RefusedError
				if !errors.As(err, &re) || stack.ExitCode(tr, err) != stack.ExitRefused || !slices.Contains(re.Resources, "x") {
					t.Fatalf("teardown of a retained protected x: %v (exit %d), want refused", err, stack.ExitCode(tr, err))
				}
				// An apply that has it again takes it back.
				e.mustApply(t, v2)
				if rec := e.state(t, "s").Resources["x"]; rec == nil || rec.RetainedBy != "" || rec.ID != xID {
					t.Fatalf("x after an apply with it again: %+v", rec)
				}
				return
			}
			if code := stack.ExitCode(tr, err); err != nil || code != stack.ExitOK {
				t.Fatalf("teardown: exit %d, err %v, result %v", code, err, resErr(tr))
			}
			if !slices.Contains(e.deletesSince(d0), "x") || e.w.ByName("x") != nil {
				t.Fatalf("teardown did not delete the retained x: deletes %v", e.deletesSince(d0))
			}
		})
	}
}

// planned is the plan's change for name.
func planned(pv *stack.Preview, name string) (stack.Planned, bool) {
	for _, c := range pv.Changes {
		if c.Resource == name {
			return c, true
		}
	}
	return stack.Planned{}, false
}

// TestFailedApplyRetains: the rollback of a failed apply keeps what holds
// data, and records as retained what the revision it returns to lacks, so
// a later apply of that revision's spec does not delete it either. One the
// revision has (created again after it vanished) is kept as an ordinary
// resource of it.
func TestFailedApplyRetains(t *testing.T) {
	base := res{name: "base", typ: "network"}
	store := res{name: "store", typ: "s3_bucket", prot: "durable", deps: []string{"base"}}
	app := res{name: "app", typ: "generic", deps: []string{"store"}}
	t.Run("the revision lacks it", func(t *testing.T) {
		e := newEnv(t)
		v1 := mkSpec(t, base)
		e.mustApply(t, v1)
		_, _, d0 := e.w.Calls()
		r, err := e.apply(mkSpec(t, base, store, app), simulate("app"))
		if code := stack.ExitCode(r, err); err != nil || code != stack.ExitCompensated {
			t.Fatalf("exit %d err %v result %v; want 11", code, err, resErr(r))
		}
		if rec := e.state(t, "s").Resources["store"]; rec == nil || rec.RetainedBy != r.Op {
			t.Fatalf("store after the failed apply: %+v; want retained by %s", rec, r.Op)
		}
		if d := cmp.Diff([]string{"store"}, r.Retained); d != "" {
			t.Errorf("Result.Retained (-want +got):\n%s", d)
		}
		// The spec of the revision it returned to does not delete it.
		e.mustApply(t, v1)
		if d := e.deletesSince(d0); slices.Contains(d, "store") {
			t.Fatalf("an apply of revision 1's spec deleted the retained store: %v", d)
		}
		if rec := e.state(t, "s").Resources["store"]; rec == nil || rec.RetainedBy != r.Op {
			t.Fatalf("store after an apply without it: %+v", rec)
		}
		// One that has it takes it back: an ordinary resource again.
		e.mustApply(t, mkSpec(t, base, store))
		if rec := e.state(t, "s").Resources["store"]; rec == nil || rec.RetainedBy != "" {
			t.Fatalf("store after an apply with it: %+v", rec)
		}
	})
	t.Run("the revision has it", func(t *testing.T) {
		e := newEnv(t)
		v2 := mkSpec(t, base, store)
		e.mustApply(t, v2)
		e.w.Remove("store") // vanished: the next apply creates it again
		r, err := e.apply(mkSpec(t, base, store, app), simulate("app"))
		if code := stack.ExitCode(r, err); err != nil || code != stack.ExitCompensated {
			t.Fatalf("exit %d err %v result %v; want 11", code, err, resErr(r))
		}
		if rec := e.state(t, "s").Resources["store"]; rec == nil || rec.RetainedBy != "" || len(r.Retained) != 0 {
			t.Fatalf("store, in the revision returned to, after the failed apply: %+v, retained %v", rec, r.Retained)
		}
		if d := cmp.Diff([]string{"store"}, r.Preserved, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("Preserved (-want +got):\n%s", d)
		}
	})
}
