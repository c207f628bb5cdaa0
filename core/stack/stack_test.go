package stack_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// demo is a five-resource stack with a diamond: storage and table both
// depend on network, compute on both, app on compute.
var demo = []res{
	{name: "network", typ: "network"},
	{name: "storage", typ: "s3_bucket", prot: "durable", deps: []string{"network"}, size: 10},
	{name: "table", typ: "dynamodb_table", deps: []string{"network"}},
	{name: "compute", typ: "compute", deps: []string{"storage", "table"}, size: 2},
	{name: "app", typ: "generic", deps: []string{"compute"}},
}

// 1. Apply creates in dependency order; a re-apply is a no-op.
func TestApplyCreatesInDependencyOrderAndReapplyIsNoOp(t *testing.T) {
	for _, par := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("parallelism=%d", par), func(t *testing.T) {
			e := newEnv(t)
			sp := mkSpec(t, demo...)
			r := e.mustApply(t, sp, parallelism(par))
			if r.Outcome != engine.Succeeded {
				t.Fatalf("outcome %v", r.Outcome)
			}
			all := []string{"app", "compute", "network", "storage", "table"}
			if d := cmp.Diff(all, sorted(resourcesOf(r.Run.Done))); d != "" {
				t.Errorf("Done (-want +got):\n%s", d)
			}
			creates := e.w.Creates()
			if d := cmp.Diff(all, sorted(names(creates))); d != "" {
				t.Fatalf("one Create per resource (-want +got):\n%s", d)
			}
			// A resource's Create comes after the Create of everything it
			// depends on: the reverse of dependents-first.
			if err := dependentsFirst(reversed(names(creates)), depsOf(demo...)); err != nil {
				t.Errorf("creates out of dependency order: %v", err)
			}
			for _, c := range creates {
				if c.Protection == protection.Unspecified {
					t.Errorf("Create of %s carries no protection level", c.Name)
				}
				if c.Key == "" {
					t.Errorf("Create of %s carries no idempotency key", c.Name)
				}
			}
			st := e.state(t, "s")
			if err := agree(st, e.w.Snapshot()); err != nil {
				t.Fatal(err)
			}
			if st.Resources["storage"].Protection != protection.Durable || st.Resources["network"].Protection != protection.Ephemeral {
				t.Errorf("recorded levels: storage %q network %q", st.Resources["storage"].Protection, st.Resources["network"].Protection)
			}

			// Again: every step is skipped, nothing is called.
			c0, u0, d0 := e.w.Calls()
			r2 := e.mustApply(t, sp, parallelism(par))
			if d := cmp.Diff(all, sorted(resourcesOf(r2.Run.Skipped))); d != "" {
				t.Errorf("re-apply Skipped (-want +got):\n%s", d)
			}
			if len(resourcesOf(r2.Run.Done)) != 0 || len(resourcesOf(r2.Run.Executed)) != 0 {
				t.Errorf("re-apply executed %v", resourcesOf(r2.Run.Executed))
			}
			if c1, u1, d1 := e.w.Calls(); c1 != c0 || u1 != u0 || d1 != d0 {
				t.Errorf("re-apply called the provider: creates %d->%d updates %d->%d deletes %d->%d", c0, c1, u0, u1, d0, d1)
			}
			st2 := e.state(t, "s")
			for n, r := range st.Resources {
				if st2.Resources[n].ID != r.ID {
					t.Errorf("%s changed id on a no-op: %s -> %s", n, r.ID, st2.Resources[n].ID)
				}
			}
		})
	}
}

// rollbackStack: base exists before the failing run; the run adds a chain
// with a durable and a protected resource in the middle.
var rollbackStack = []res{
	{name: "base", typ: "network"},
	{name: "net", typ: "network", deps: []string{"base"}},
	{name: "storage", typ: "s3_bucket", prot: "durable", deps: []string{"net"}},
	{name: "vault", typ: "dynamodb_table", prot: "protected", deps: []string{"net"}},
	{name: "compute", typ: "compute", deps: []string{"storage", "vault"}},
	{name: "lb", typ: "generic", deps: []string{"compute"}},
	{name: "app", typ: "generic", deps: []string{"lb"}},
}

// 2. --simulate-failure: ephemeral resources this run created are deleted
// dependents first; durable and protected ones stay recorded; what existed
// before the run is untouched.
func TestSimulatedFailureCompensates(t *testing.T) {
	cases := []struct {
		failAt        string
		wantDeletes   []string // in this order
		wantPreserved []string
		wantState     []string
	}{
		{failAt: "app", wantDeletes: []string{"lb", "compute", "net"}, wantPreserved: []string{"storage", "vault"}, wantState: []string{"base", "storage", "vault"}},
		{failAt: "compute", wantDeletes: []string{"net"}, wantPreserved: []string{"storage", "vault"}, wantState: []string{"base", "storage", "vault"}},
		{failAt: "net", wantDeletes: nil, wantPreserved: nil, wantState: []string{"base"}},
	}
	for _, tc := range cases {
		t.Run(tc.failAt, func(t *testing.T) {
			e := newEnv(t)
			e.mustApply(t, mkSpec(t, rollbackStack[0]))
			baseID := e.state(t, "s").Resources["base"].ID
			_, _, d0 := e.w.Calls()

			r, err := e.apply(mkSpec(t, rollbackStack...), simulate(tc.failAt))
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if r.Outcome != engine.Compensated || stack.ExitCode(r, err) != stack.ExitCompensated {
				t.Fatalf("outcome %v, exit %d, err %v; want compensated, 11", r.Outcome, stack.ExitCode(r, err), r.Err)
			}
			if r.Err == nil || !strings.Contains(r.Err.Error(), "simulated failure") {
				t.Errorf("result error %v does not keep the simulated failure", r.Err)
			}
			if d := cmp.Diff([]string{tc.failAt}, resourcesOf(r.Run.Failed)); d != "" {
				t.Errorf("Failed (-want +got):\n%s", d)
			}
			deletes := e.w.Deletes()[d0:]
			if d := cmp.Diff(tc.wantDeletes, names(deletes), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("rollback deletes (-want +got):\n%s", d)
			}
			for _, c := range deletes {
				if c.Protection != protection.Ephemeral {
					t.Errorf("rollback deleted %s at level %v", c.Name, c.Protection)
				}
			}
			if d := cmp.Diff(tc.wantPreserved, r.Preserved, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Preserved (-want +got):\n%s", d)
			}
			st := e.state(t, "s")
			if d := cmp.Diff(tc.wantState, st.Names()); d != "" {
				t.Errorf("state after rollback (-want +got):\n%s", d)
			}
			if err := agree(st, e.w.Snapshot()); err != nil {
				t.Error(err)
			}
			if got := st.Resources["base"].ID; got != baseID {
				t.Errorf("base was touched: id %s -> %s", baseID, got)
			}
			if st.Resources["base"].CreatedBy == r.Op {
				t.Errorf("base is recorded as created by the failed run")
			}
			for _, n := range tc.wantPreserved {
				if got := st.Resources[n]; got == nil || got.CreatedBy != r.Op {
					t.Errorf("preserved %s: recorded %+v, want created by %s", n, got, r.Op)
				}
			}
			// Nothing is left unfinished, and the next apply converges.
			rep, err := inspect.Status(mkSpec(t, rollbackStack...), e.opts())
			if err != nil || len(rep.Unfinished) != 0 {
				t.Fatalf("status: %v, unfinished %v", err, rep.Unfinished)
			}
			e.mustApply(t, mkSpec(t, rollbackStack...))
			if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
				t.Error(err)
			}
		})
	}
}

// 3. Failed deletes during a rollback: exit 13 with every failure and the
// cause; the other compensations still run; resume converges.
func TestRollbackIncompleteThenResume(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, rollbackStack...)
	e.mustApply(t, mkSpec(t, rollbackStack[0]))
	_, _, d0 := e.w.Calls()
	e.w.FailNextDeletes("lb", 1)
	e.w.FailNextDeletes("net", 1)

	r, err := e.apply(sp, simulate("app"))
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if r.Outcome != engine.RollbackIncomplete || stack.ExitCode(r, err) != stack.ExitRollbackIncomplete {
		t.Fatalf("outcome %v exit %d; want rollback_incomplete, 13 (err %v)", r.Outcome, stack.ExitCode(r, err), r.Err)
	}
	var rb *engine.RollbackError
	if !errors.As(r.Err, &rb) {
		t.Fatalf("result error %T %v is not a *engine.RollbackError", r.Err, r.Err)
	}
	if d := cmp.Diff([]string{"lb", "net"}, sorted(mapKeys(rb.Failures))); d != "" {
		t.Errorf("RollbackError.Failures (-want +got):\n%s", d)
	}
	var se *engine.StepError
	if !errors.As(rb.Cause, &se) || se.Failures["app"] == nil || !strings.Contains(se.Failures["app"].Error(), "simulated failure") {
		t.Errorf("RollbackError.Cause = %v; want the step error of app's simulated failure", rb.Cause)
	}
	// compute's compensation ran between the two failures.
	deletes := e.w.Deletes()[d0:]
	if d := cmp.Diff([]string{"lb", "compute", "net"}, names(deletes)); d != "" {
		t.Errorf("delete attempts (-want +got):\n%s", d)
	}
	if e.w.ByName("compute") != nil {
		t.Errorf("compute still exists: a failed compensation stopped the others")
	}
	if d := cmp.Diff([]string{"base", "lb", "net", "storage", "vault"}, e.w.Names()); d != "" {
		t.Errorf("world (-want +got):\n%s", d)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}

	// While unfinished, apply and teardown refuse to start.
	_, err = e.apply(sp)
	var ue *stack.UnfinishedError
	if !errors.As(err, &ue) || ue.Op != r.Op || ue.Status != journal.OpRollbackIncomplete {
		t.Fatalf("apply while unfinished: %v; want *stack.UnfinishedError for %s", err, r.Op)
	}
	if _, err := e.teardown(sp); !errors.As(err, &ue) {
		t.Fatalf("teardown while unfinished: %v; want *stack.UnfinishedError", err)
	}
	rep, err := inspect.Status(sp, e.opts())
	if err != nil || !slices.Equal(rep.Unfinished, []string{r.Op}) {
		t.Fatalf("status: err %v unfinished %v; want [%s]", err, rep.Unfinished, r.Op)
	}

	// Resume finishes the rollback, dependents first.
	_, _, d1 := e.w.Calls()
	rr, err := e.resume(sp)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if code := stack.ExitCode(rr, err); code != stack.ExitCompensated || rr.Op != r.Op {
		t.Fatalf("resume: exit %d op %s (err %v); want 11 for %s", code, rr.Op, rr.Err, r.Op)
	}
	if d := cmp.Diff([]string{"lb", "net"}, names(e.w.Deletes()[d1:])); d != "" {
		t.Errorf("resume deletes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"base", "storage", "vault"}, e.w.Names()); d != "" {
		t.Errorf("world after resume (-want +got):\n%s", d)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
	if _, err := e.resume(sp); !errors.Is(err, stack.ErrNothingToResume) {
		t.Fatalf("second resume: %v; want ErrNothingToResume", err)
	}
	e.mustApply(t, sp)
}

func mapKeys(m map[string]error) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// 4. Teardown and the ladder's third column.
func TestTeardownDeletesEverythingDependentsFirst(t *testing.T) {
	e := newEnv(t)
	rs := append(slices.Clone(demo), res{name: "loner", typ: "generic", prot: "durable"})
	sp := mkSpec(t, rs...)
	e.mustApply(t, sp)
	r, err := e.teardown(sp)
	if code := stack.ExitCode(r, err); err != nil || code != stack.ExitOK {
		t.Fatalf("teardown: exit %d err %v result err %v", code, err, resErr(r))
	}
	deletes := succeeded(e.w.Deletes())
	if d := cmp.Diff([]string{"app", "compute", "loner", "network", "storage", "table"}, sorted(names(deletes))); d != "" {
		t.Errorf("teardown deletes (-want +got):\n%s", d)
	}
	if err := dependentsFirst(names(deletes), depsOf(rs...)); err != nil {
		t.Error(err)
	}
	for _, c := range deletes {
		if c.Protection == protection.Protected {
			t.Errorf("Delete of %s carries protected", c.Name)
		}
	}
	if n := e.w.Names(); len(n) != 0 {
		t.Errorf("world after teardown: %v", n)
	}
	if n := e.state(t, "s").Names(); len(n) != 0 {
		t.Errorf("state after teardown: %v", n)
	}
}

func TestProtectedRefusesTheWholeRun(t *testing.T) {
	withVaults := []res{
		{name: "net", typ: "network"},
		{name: "vault", typ: "dynamodb_table", prot: "protected", deps: []string{"net"}, zone: "z1"},
		{name: "safe", typ: "s3_bucket", prot: "protected", zone: "z1"},
		{name: "scratch", typ: "generic", deps: []string{"vault"}},
		{name: "keep", typ: "s3_bucket", prot: "durable"},
	}
	replace := func(name string, f func(*res)) []res {
		out := slices.Clone(withVaults)
		for i := range out {
			if out[i].name == name {
				f(&out[i])
			}
		}
		return out
	}
	without := func(drop ...string) []res {
		var out []res
		for _, r := range withVaults {
			if !slices.Contains(drop, r.name) {
				r.deps = slices.DeleteFunc(slices.Clone(r.deps), func(d string) bool { return slices.Contains(drop, d) })
				out = append(out, r)
			}
		}
		return out
	}
	cases := []struct {
		name    string
		op      string // teardown | apply
		next    []res
		refused []string
	}{
		{name: "teardown names every protected resource", op: "teardown", next: withVaults, refused: []string{"safe", "vault"}},
		{name: "teardown with the protection lowered in the spec only", op: "teardown",
			next: replace("vault", func(r *res) { r.prot = "" }), refused: []string{"safe", "vault"}},
		{name: "protected lines removed from the spec", op: "apply", next: without("vault", "scratch"), refused: []string{"vault"}},
		{name: "protected lines removed with their protection", op: "apply", next: without("vault", "safe", "scratch", "keep"), refused: []string{"safe", "vault"}},
		{name: "zone of a protected resource changed", op: "apply", next: replace("vault", func(r *res) { r.zone = "z2" }), refused: []string{"vault"}},
		{name: "zone changed and protection lowered at once", op: "apply",
			next: replace("safe", func(r *res) { r.zone = "z2"; r.prot = "ephemeral" }), refused: []string{"safe"}},
		{name: "zone removed from a protected resource", op: "apply", next: replace("safe", func(r *res) { r.zone = "" }), refused: []string{"safe"}},
		{name: "type of a protected resource changed", op: "apply", next: replace("safe", func(r *res) { r.typ = "generic" }), refused: []string{"safe"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.mustApply(t, mkSpec(t, withVaults...))
			before := e.state(t, "s")
			worldBefore := e.w.Snapshot()
			c0, u0, d0 := e.w.Calls()
			next := mkSpec(t, tc.next...)
			var r *stack.Result
			var err error
			if tc.op == "teardown" {
				r, err = e.teardown(next)
			} else {
				r, err = e.apply(next)
			}
			var re *plan.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("%s: result %+v err %v; want *plan.RefusedError", tc.op, r, err)
			}
			if d := cmp.Diff(tc.refused, re.Resources); d != "" {
				t.Errorf("refused resources (-want +got):\n%s", d)
			}
			// An apply over existing state is an update
			// (docs/architecture.md, "Apply and update").
			if wantOps := map[string][]string{"teardown": {"teardown"}, "apply": {"apply", "update"}}[tc.op]; !slices.Contains(wantOps, re.Op) {
				t.Errorf("RefusedError.Op = %q, want one of %q", re.Op, wantOps)
			}
			if code := stack.ExitCode(r, err); code != stack.ExitRefused {
				t.Errorf("exit %d, want 3", code)
			}
			c1, u1, d1 := e.w.Calls()
			if d1 != d0 {
				t.Errorf("a refused run sent Deletes: %+v", e.w.Deletes()[d0:])
			}
			if c1 != c0 || u1 != u0 {
				t.Errorf("a refused run changed something: creates %d->%d updates %d->%d", c0, c1, u0, u1)
			}
			if d := cmp.Diff(worldBefore, e.w.Snapshot(), cmp.AllowUnexported(fakeResource{})); d != "" {
				t.Errorf("world changed (-before +after):\n%s", d)
			}
			after := e.state(t, "s")
			if d := cmp.Diff(before.Resources, after.Resources); d != "" {
				t.Errorf("state changed (-before +after):\n%s", d)
			}
			// The refusal is journaled and does not block the next run.
			rep, err := inspect.Status(next, e.opts())
			if err != nil || rep.LastOp == nil || rep.LastOp.Status != journal.OpRefused || len(rep.Unfinished) != 0 {
				t.Errorf("status after refusal: err %v last %+v unfinished %v", err, rep.LastOp, rep.Unfinished)
			} else if want := storage.CurrentUser(); rep.LastOp.User != want {
				// Who tried to delete what the ladder protects is on record.
				t.Errorf("the refusal names user %q, want %q", rep.LastOp.User, want)
			}
			e.mustApply(t, mkSpec(t, withVaults...))
		})
	}
}

// Lowering protection is a visible change applied first; only a later run
// may then replace or delete the resource.
func TestLoweredProtectionThenReplaceAndRemove(t *testing.T) {
	e := newEnv(t)
	vault := res{name: "vault", typ: "dynamodb_table", prot: "protected", zone: "z1"}
	e.mustApply(t, mkSpec(t, vault))
	id := e.state(t, "s").Resources["vault"].ID

	lowered := vault
	lowered.prot = "ephemeral"
	r := e.mustApply(t, mkSpec(t, lowered))
	if len(resourcesOf(r.Run.Done)) != 1 {
		t.Errorf("lowering the level is a change: Done %v", resourcesOf(r.Run.Done))
	}
	if got := e.state(t, "s").Resources["vault"]; got.Protection != protection.Ephemeral || got.ID != id {
		t.Fatalf("after lowering: %+v", got)
	}
	if d := e.w.Deletes(); len(d) != 0 {
		t.Fatalf("lowering deleted: %+v", d)
	}

	moved := lowered
	moved.zone = "z2"
	e.mustApply(t, mkSpec(t, moved))
	deletes := e.w.Deletes()
	if len(deletes) != 1 || deletes[0].ID != id || deletes[0].Protection != protection.Ephemeral {
		t.Fatalf("replace: deletes %+v; want one of %s at ephemeral", deletes, id)
	}
	st := e.state(t, "s")
	if st.Resources["vault"].ID == id {
		t.Errorf("replace kept the id %s", id)
	}
	if err := agree(st, e.w.Snapshot()); err != nil {
		t.Error(err)
	}
	e.mustApply(t, mkSpec(t))
	if n := e.w.Names(); len(n) != 0 {
		t.Errorf("removed from the spec but still exists: %v", n)
	}
}

// 5. on_failure: continue and abort undo nothing; intervention needs a person.
func TestFailurePolicies(t *testing.T) {
	stackWith := func(policy string, intervention bool) []res {
		return []res{
			{name: "net", typ: "network"},
			{name: "compute", typ: "compute", deps: []string{"net"}, onFailure: policy, intervention: intervention},
			{name: "lb", typ: "generic", deps: []string{"compute"}},
			{name: "other", typ: "generic", deps: []string{"net"}},
			{name: "solo", typ: "s3_bucket"},
		}
	}
	cases := []struct {
		policy       string
		intervention bool
		outcome      engine.Outcome
		exit         int
		wantDone     []string // nil: not checked exactly
	}{
		{policy: "continue", outcome: engine.Failed, exit: stack.ExitError, wantDone: []string{"net", "other", "solo"}},
		{policy: "abort", outcome: engine.Failed, exit: stack.ExitError},
		{policy: "", intervention: true, outcome: engine.NeedsIntervention, exit: stack.ExitIntervention},
		{policy: "continue", intervention: true, outcome: engine.NeedsIntervention, exit: stack.ExitIntervention},
	}
	for _, tc := range cases {
		name := tc.policy
		if tc.intervention {
			name += "+intervention"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			sp := mkSpec(t, stackWith(tc.policy, tc.intervention)...)
			e.w.FailCreate("compute")
			r, err := e.apply(sp)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if r.Outcome != tc.outcome || stack.ExitCode(r, err) != tc.exit {
				t.Fatalf("outcome %v exit %d; want %v %d (err %v)", r.Outcome, stack.ExitCode(r, err), tc.outcome, tc.exit, r.Err)
			}
			if d := cmp.Diff([]string{"compute"}, resourcesOf(r.Run.Failed)); d != "" {
				t.Errorf("Failed (-want +got):\n%s", d)
			}
			if !slices.Contains(resourcesOf(r.Run.Blocked), "lb") || slices.Contains(resourcesOf(r.Run.Done), "lb") {
				t.Errorf("lb depends on the failed compute but was not blocked: done %v blocked %v", resourcesOf(r.Run.Done), resourcesOf(r.Run.Blocked))
			}
			if tc.wantDone != nil {
				if d := cmp.Diff(tc.wantDone, sorted(resourcesOf(r.Run.Done))); d != "" {
					t.Errorf("Done (-want +got):\n%s", d)
				}
			}
			if d := e.w.Deletes(); len(d) != 0 {
				t.Errorf("%s undid something: %+v", name, d)
			}
			st := e.state(t, "s")
			if d := cmp.Diff(sorted(resourcesOf(r.Run.Done)), st.Names()); d != "" {
				t.Errorf("state is not what was done (-done +state):\n%s", d)
			}
			if err := agree(st, e.w.Snapshot()); err != nil {
				t.Error(err)
			}
			rep, err := inspect.Status(sp, e.opts())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Unfinished) != 0 {
				t.Errorf("unfinished after %s: %v", name, rep.Unfinished)
			}
			if !tc.intervention {
				if len(rep.Interventions) != 0 {
					t.Errorf("interventions: %+v", rep.Interventions)
				}
				e.w.ClearFaults()
				e.mustApply(t, sp)
				return
			}

			if len(rep.Interventions) != 1 || rep.Interventions[0].Op != r.Op || rep.Interventions[0].Resource != "compute" {
				t.Fatalf("status interventions %+v; want compute of %s", rep.Interventions, r.Op)
			}
			e.w.ClearFaults()
			c0, _, _ := e.w.Calls()
			r2, err := e.apply(sp)
			var ie *stack.InterventionError
			if !errors.As(err, &ie) || stack.ExitCode(r2, err) != stack.ExitIntervention {
				t.Fatalf("apply with a pending intervention: %v (exit %d); want *stack.InterventionError, 12", err, stack.ExitCode(r2, err))
			}
			if _, err := e.teardown(sp); !errors.As(err, &ie) {
				t.Fatalf("teardown with a pending intervention: %v", err)
			}
			if c1, _, _ := e.w.Calls(); c1 != c0 {
				t.Errorf("a refused apply created something")
			}
			if _, err := stack.Ack(e.stateDir, "op_NOSUCH", nil); !errors.Is(err, stack.ErrNoSuchIntervention) {
				t.Errorf("ack of an unknown op: %v", err)
			}
			got, err := stack.Ack(e.stateDir, r.Op, nil)
			if err != nil || got != "s" {
				t.Fatalf("ack: %q %v", got, err)
			}
			if rep, _ := inspect.Status(sp, e.opts()); len(rep.Interventions) != 0 {
				t.Errorf("interventions after ack: %+v", rep.Interventions)
			}
			e.mustApply(t, sp)
			if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
				t.Error(err)
			}
			if d := cmp.Diff([]string{"compute", "lb", "net", "other", "solo"}, e.w.Names()); d != "" {
				t.Errorf("world after ack and apply (-want +got):\n%s", d)
			}
		})
	}
}

// 6. A changed size is an in-place Update; a later failure in the same apply
// puts the prior size back.
func TestUpdateInPlaceAndItsCompensation(t *testing.T) {
	e := newEnv(t)
	v1 := []res{
		{name: "net", typ: "network", size: 1, zone: "z1"},
		{name: "app", typ: "generic", deps: []string{"net"}, size: 1},
	}
	e.mustApply(t, mkSpec(t, v1...))
	ids := map[string]string{}
	for n, r := range e.state(t, "s").Resources {
		ids[n] = r.ID
	}
	c0, u0, d0 := e.w.Calls()

	v2 := slices.Clone(v1)
	v2[0].size = 2
	r := e.mustApply(t, mkSpec(t, v2...))
	c1, u1, d1 := e.w.Calls()
	if c1 != c0 || d1 != d0 {
		t.Fatalf("a size change created or deleted: creates %d->%d deletes %d->%d", c0, c1, d0, d1)
	}
	if u1 != u0+1 || e.w.Updates()[u0].Name != "net" || e.w.Updates()[u0].ID != ids["net"] {
		t.Fatalf("updates %+v; want one Update of net (%s)", e.w.Updates()[u0:], ids["net"])
	}
	if d := cmp.Diff([]string{"net"}, resourcesOf(r.Run.Done)); d != "" {
		t.Errorf("Done (-want +got):\n%s", d)
	}
	if w := e.w.ByName("net"); w.ID != ids["net"] || w.Attrs["size"] != 2.0 || w.Attrs["zone"] != "z1" {
		t.Errorf("net after update: %+v", w)
	}
	st := e.state(t, "s")
	if got := st.Resources["net"]; got.ID != ids["net"] || got.Config["size"] != 2.0 {
		t.Errorf("recorded net: %+v", got)
	}

	// Now size 3 for net and app, a new resource that fails: both updates
	// are put back.
	v3 := slices.Clone(v2)
	v3[0].size = 3
	v3[1].size = 5
	v3 = append(v3, res{name: "late", typ: "compute", deps: []string{"net", "app"}})
	_, u2, _ := e.w.Calls()
	r3, err := e.apply(mkSpec(t, v3...), simulate("late"))
	if code := stack.ExitCode(r3, err); err != nil || code != stack.ExitCompensated {
		t.Fatalf("exit %d err %v result %v; want 11", code, err, resErr(r3))
	}
	ups := e.w.Updates()[u2:]
	sizes := map[string][]any{}
	for _, u := range ups {
		sizes[u.Name] = append(sizes[u.Name], u.Config["size"])
	}
	if d := cmp.Diff(map[string][]any{"net": {3.0, 2.0}, "app": {5.0, 1.0}}, sizes); d != "" {
		t.Errorf("updates then restores (-want +got):\n%s", d)
	}
	if d := e.w.Deletes()[d1:]; len(d) != 0 {
		t.Errorf("compensating an update deleted: %+v", d)
	}
	for n, want := range map[string]float64{"net": 2, "app": 1} {
		w := e.w.ByName(n)
		if w == nil || w.ID != ids[n] || w.Attrs["size"] != want {
			t.Errorf("%s after compensation: %+v; want id %s size %v", n, w, ids[n], want)
		}
		rec := e.state(t, "s").Resources[n]
		if rec.ID != ids[n] || rec.Config["size"] != want || rec.Prior != nil {
			t.Errorf("recorded %s after compensation: id %s config %v prior %+v", n, rec.ID, rec.Config, rec.Prior)
		}
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
}

func reversed(s []string) []string {
	c := slices.Clone(s)
	slices.Reverse(c)
	return c
}
