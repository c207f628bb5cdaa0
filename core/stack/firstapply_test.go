package stack_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// TestPlanDuringFirstApplyKnowsItsOwn: a plan that read the state before a
// first apply had journaled anything (no lineage yet), and reality after
// that apply created its resources, does not call them another lineage's:
// they carry keys of this stack, whose lineage is recorded by then.
func TestPlanDuringFirstApplyKnowsItsOwn(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "generic", deps: []string{"a"}})
	var started atomic.Bool
	var applyErr error
	var applied *stack.Result
	// The plan's first Read runs the whole first apply: the plan's state
	// was read before it, its reality after.
	e.w.OnRead(func(string) {
		if started.CompareAndSwap(false, true) {
			applied, applyErr = e.apply(sp)
		}
	})
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	e.w.OnRead(nil)
	if applyErr != nil || applied == nil || applied.Err != nil {
		t.Fatalf("the apply inside the plan: %v, %v", applyErr, resErr(applied))
	}
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	for _, c := range pv.Changes {
		if c.Action == plan.Conflict || strings.Contains(c.Reason+c.Drift, "another lineage") {
			t.Errorf("%s: %s %s %s", c.Resource, c.Action, c.Reason, c.Drift)
		}
	}
	if pv.Err() != nil {
		t.Errorf("plan refused: %v", pv.Err())
	}
}
