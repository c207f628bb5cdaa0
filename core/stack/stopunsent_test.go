package stack_test

import (
	"slices"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A first interrupt while a step's Create is held back (as the plugin
// host's gate holds a throttled provider's calls) ends that step
// "not_sent": its Create never reaches the provider, the state records
// nothing of it, nothing undoes it, and the interrupted apply rolls back
// what it made. A later apply makes it, once.
func TestInterruptEndsAHeldBackCreateNotSent(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "network"})
	waiting := e.w.HoldBack("b")
	stop := make(chan struct{})
	e.w.OnCreate(func(name string) {
		if name == "a" {
			<-waiting // b's Create waits at the gate: the interrupt comes now
			close(stop)
		}
	})
	r, err := e.apply(sp, parallelism(2), func(o *stack.Options) { o.Stop = stop })
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != engine.Compensated || stack.ExitCode(r, nil) != stack.ExitCompensated {
		t.Fatalf("outcome %v, exit %d (%v): want interrupted and rolled back", r.Outcome, stack.ExitCode(r, nil), r.Err)
	}
	if !slices.Contains(r.Run.Blocked, "b") || slices.Contains(r.Run.Executed, "b") || slices.Contains(r.Run.Rollback, "b") {
		t.Errorf("blocked %q, executed %q, rolled back %q: want b blocked, neither executed nor undone", r.Run.Blocked, r.Run.Executed, r.Run.Rollback)
	}
	for _, c := range e.w.Creates() {
		if c.Name == "b" {
			t.Errorf("b's Create reached the provider: %+v", c)
		}
	}
	var started, ended bool
	for _, rec := range journalIn(t, stack.StackDir(e.stateDir, "s")) {
		if rec.Step == "b" && rec.Phase == "execute" {
			started = started || rec.Status == journal.StepStarted
			ended = ended || rec.Status == journal.StepNotSent
			if rec.Status != journal.StepStarted && rec.Status != journal.StepNotSent {
				t.Errorf("b's execute has a %q record", rec.Status)
			}
		}
	}
	if !started || !ended {
		t.Errorf("b's execute: started %v, not_sent %v; want both", started, ended)
	}
	if names := e.w.Names(); len(names) != 0 {
		t.Errorf("the world after the rollback: %v", names)
	}
	if st := e.state(t, "s"); len(st.Resources) != 0 {
		t.Errorf("the state after the rollback records %v", st.Names())
	}

	e.w.HoldBack()
	e.w.OnCreate(nil)
	e.mustApply(t, sp)
	n := 0
	for _, c := range e.w.Creates() {
		if c.Name == "b" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("b's Creates after the next apply: %d, want 1", n)
	}
}
