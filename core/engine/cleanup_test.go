package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// Once a cleanup step has started, nothing is rolled back: a failing
// cleanup, or a stop while one runs, ends the operation Failed with every
// other step's work in place (what a cleanup deleted cannot come back, so
// undoing the rest would leave neither the old nor the new).
func TestCleanupStartedRollsNothingBack(t *testing.T) {
	for _, tt := range []struct {
		name      string
		failClean bool
		stop      bool
	}{
		{name: "cleanup fails", failClean: true},
		{name: "stopped during the cleanup", stop: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			steps := chain(w, Compensate)
			stop := make(chan struct{})
			clean := func(id string, fail, stopHere bool) *Step {
				s := w.step(id, Continue)
				s.Cleanup = true
				s.DependsOn = []string{"network", "bucket", "compute", "lb"}
				inner := s.Execute
				s.Execute = func(ctx context.Context, key string) error {
					if stopHere {
						close(stop)
					}
					if fail {
						w.mu.Lock()
						w.failExec[id] = true
						w.mu.Unlock()
					}
					return inner(ctx, key)
				}
				return s
			}
			c1 := clean("old-network", tt.failClean, tt.stop)
			c2 := clean("old-bucket", false, false)
			c2.DependsOn = append(c2.DependsOn, c1.ID)
			steps = append(steps, c1, c2)
			e, _ := newEngine(t)
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Stop: stop, Parallelism: 1})
			if res.Outcome != Failed {
				t.Fatalf("outcome %v (%v), want failed", res.Outcome, res.Err)
			}
			if len(res.Rollback) != 0 || slices.ContainsFunc(w.calls, func(c string) bool { return c == "delete network" || c == "delete lb" }) {
				t.Fatalf("rolled back after the cleanup began: rollback %v, calls %v", res.Rollback, w.calls)
			}
			for _, n := range []string{"network", "bucket", "compute", "lb"} {
				if !w.exists[n] {
					t.Errorf("%s undone", n)
				}
			}
		})
	}
}
