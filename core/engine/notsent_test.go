package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// An Execute that gives up before sending anything (its calls held back by
// a throttled provider's gate) returns ErrNotSent. While the run stops (a
// first interrupt), the step ends as one stopped before its Execute: its
// durable start ended "not_sent" (keyed by the start's id), blocked, not
// failed, not executed, never compensated; the rest of the run is rolled
// back as any interrupted run is. Returned while the run does not stop,
// ErrNotSent is a failure like any other: the step failed, its
// compensation runs.
func TestExecuteNotSentWhileStopping(t *testing.T) {
	for _, stopping := range []bool{true, false} {
		t.Run(fmt.Sprintf("stopping=%v", stopping), func(t *testing.T) {
			e, j := newKeptEngine(t)
			stop := make(chan struct{})
			var mu sync.Mutex
			compensated := map[string]int{}
			aDone := make(chan struct{})
			mk := func(id string, exec func(context.Context, string) error) *Step {
				return &Step{ID: id, Resource: id, Action: "create", Policy: Compensate,
					Check:   func(context.Context) (bool, error) { return false, nil },
					Execute: exec,
					Compensate: func(context.Context) (string, error) {
						mu.Lock()
						defer mu.Unlock()
						compensated[id]++
						return "delete", nil
					}}
			}
			// b's Execute has begun, so its start is durable: a waits for
			// it, or under load the interrupt could come before b started
			// at all (then b never starts, which is not this test's case).
			bIn := make(chan struct{})
			a := mk("a", func(context.Context, string) error {
				<-bIn
				if stopping {
					close(stop) // the interrupt comes as a is made
				}
				close(aDone)
				return nil
			})
			b := mk("b", func(context.Context, string) error {
				close(bIn)
				// Held back until the interrupt (or, not stopping, until a
				// is done), then gives up having sent nothing.
				<-aDone
				return fmt.Errorf("provider p: Create: waiting for the provider's rate limit: %w", ErrNotSent)
			})
			op := &Operation{ID: journal.NewOpID(), Type: "apply", Steps: []*Step{a, b}, Parallelism: 2, Stop: stop}
			res := e.Run(context.Background(), op)

			started, ok := j.find("b", "execute", journal.StepStarted)
			if !ok {
				t.Fatalf("b has no durable start: %v", j.records())
			}
			end, notSent := j.find("b", "execute", journal.StepNotSent)
			if !stopping {
				if notSent || !slices.Contains(res.Failed, "b") || compensated["b"] != 1 {
					t.Errorf("not stopping: not_sent %v, failed %q, b compensated %d times: want a failure, compensated once",
						notSent, res.Failed, compensated["b"])
				}
				return
			}
			if !notSent || end.Key != started.ID {
				t.Fatalf("b's start has no \"not_sent\" end keyed by it (%+v): %v", end, j.records())
			}
			if _, ok := j.find("b", "execute", journal.StepFailed); ok {
				t.Error("b has a failed record too")
			}
			if !equal(res.Blocked, []string{"b"}) || slices.Contains(res.Executed, "b") || slices.Contains(res.Failed, "b") || compensated["b"] != 0 {
				t.Errorf("blocked %q executed %q failed %q, b compensated %d times: want b blocked only, never undone",
					res.Blocked, res.Executed, res.Failed, compensated["b"])
			}
			if res.Outcome != Compensated || compensated["a"] != 1 || !errors.Is(res.Err, ErrInterrupted) {
				t.Errorf("outcome %v, a compensated %d times, error %v: want the interrupted run rolled back", res.Outcome, compensated["a"], res.Err)
			}
			if sent := journal.Sent(j.records()); slices.ContainsFunc(sent, func(r journal.Record) bool { return r.Step == "b" }) {
				t.Errorf("journal.Sent keeps a record of b, which sent nothing")
			}
		})
	}
}
