package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// deleteSteps are n independent delete steps asking for StartWithCheck,
// whose Check calls check and whose Execute calls exec (each may be nil).
func deleteSteps(n int, check func(ctx context.Context, id string) (bool, error), exec func(ctx context.Context, id, key string) error) []*Step {
	var steps []*Step
	for i := range n {
		id := fmt.Sprintf("d%02d", i)
		steps = append(steps, &Step{ID: id, Resource: id, Action: "delete", Policy: Continue, StartWithCheck: true,
			Check: func(ctx context.Context) (bool, error) {
				if check == nil {
					return false, nil
				}
				return check(ctx, id)
			},
			Execute: func(ctx context.Context, key string) error {
				if exec == nil {
					return nil
				}
				return exec(ctx, id, key)
			},
		})
	}
	return steps
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("gave up waiting: %s", what)
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// A step asking for StartWithCheck has its "execute started" durable while
// its Check still reads: the Check below does not return until it sees the
// record (a start journaled after the Check would never come, and the test
// fails at its deadline), and the Execute goes out under that record's id.
func TestStartWithCheckIsDurableWhileTheCheckReads(t *testing.T) {
	e, j := newKeptEngine(t)
	keys := map[string]string{}
	var mu sync.Mutex
	steps := deleteSteps(3, func(_ context.Context, id string) (bool, error) {
		waitFor(t, id+"'s start journaled while its Check reads", func() bool {
			_, ok := j.find(id, "execute", journal.StepStarted)
			return ok
		})
		return false, nil
	}, func(_ context.Context, id, key string) error {
		mu.Lock()
		keys[id] = key
		mu.Unlock()
		return nil
	})
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "teardown", Steps: steps, Parallelism: 1, ReadParallelism: 4})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	for _, s := range steps {
		started, ok := j.find(s.ID, "execute", journal.StepStarted)
		if !ok || keys[s.ID] != started.ID {
			t.Errorf("%s executed under key %q, its start is %q (%v)", s.ID, keys[s.ID], started.ID, ok)
		}
		if _, ok := j.find(s.ID, "execute", journal.StepNotSent); ok {
			t.Errorf("%s, executed, has a not_sent record: %v", s.ID, j)
		}
	}
}

// A Check that decides the step must not go on (the resource is gone; or
// what its id holds is not this stack's: an error) ends the start made
// while it read "not_sent", keyed by that start, before its own record:
// the call was never sent, nothing reads the step as executed, and the
// Execute is never called.
func TestStartWithCheckEndsUnsentWhenTheCheckSaysNo(t *testing.T) {
	for _, how := range []string{"gone", "foreign"} {
		t.Run(how, func(t *testing.T) {
			e, j := newKeptEngine(t)
			var executed atomic.Int64
			steps := deleteSteps(1, func(_ context.Context, id string) (bool, error) {
				waitFor(t, "the start made while the Check reads", func() bool {
					_, ok := j.find(id, "execute", journal.StepStarted)
					return ok
				})
				if how == "gone" {
					return true, nil
				}
				return false, errors.New("now another stack's")
			}, func(context.Context, string, string) error {
				executed.Add(1)
				return nil
			})
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "teardown", Steps: steps, Parallelism: 1})
			if executed.Load() != 0 || slices.Contains(res.Executed, "d00") {
				t.Fatalf("executed %d times (result %q): the Check said no", executed.Load(), res.Executed)
			}
			started, ok := j.find("d00", "execute", journal.StepStarted)
			if !ok {
				t.Fatalf("no start: %v", j)
			}
			end, ok := j.find("d00", "execute", journal.StepNotSent)
			if !ok || end.Key != started.ID {
				t.Fatalf("not_sent %+v (found %v), want one keyed %s: %v", end, ok, started.ID, j)
			}
			switch how {
			case "gone":
				if res.Outcome != Succeeded || !equal(res.Skipped, []string{"d00"}) {
					t.Errorf("outcome %v skipped %q, want succeeded with d00 skipped: %v", res.Outcome, res.Skipped, res.Err)
				}
			case "foreign":
				if res.Outcome != Failed || !equal(res.Failed, []string{"d00"}) {
					t.Errorf("outcome %v failed %q, want failed with d00: %v", res.Outcome, res.Failed, res.Err)
				}
				// The durable records: the start, its not_sent end, the
				// Check's failure, in that order.
				var got []string
				for _, r := range j.records() {
					if r.Step == "d00" {
						got = append(got, r.Phase+" "+r.Status)
					}
				}
				if want := []string{"execute started", "execute not_sent", "check failed"}; !slices.Equal(got, want) {
					t.Errorf("d00's records %q, want %q", got, want)
				}
			}
			for _, r := range journal.Sent(j.records()) {
				if r.Step == "d00" && r.Phase == "execute" {
					t.Errorf("journal.Sent keeps %+v: d00 sent nothing", r)
				}
			}
		})
	}
}

// A Check that refines the step's action after all (which a step asking
// for StartWithCheck promises not to do) gets no Execute under a start
// naming the wrong work: that start ends "not_sent" and the step is
// journaled again with the refined action.
func TestStartWithCheckRefinedActionIsJournaledAgain(t *testing.T) {
	e, j := newKeptEngine(t)
	var key string
	steps := deleteSteps(1, nil, func(_ context.Context, _, k string) error {
		key = k
		return nil
	})
	s := steps[0]
	s.Check = func(context.Context) (bool, error) {
		s.Action = "replace"
		return false, nil
	}
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	var starts []journal.Record
	for _, r := range j.records() {
		if r.Step == "d00" && r.Phase == "execute" && r.Status == journal.StepStarted {
			starts = append(starts, r)
		}
	}
	if len(starts) != 2 || starts[0].Action != "delete" || starts[1].Action != "replace" || key != starts[1].ID {
		t.Fatalf("starts %+v, key %q: want the delete's ended unsent, then the replace's, executed under its id", starts, key)
	}
	if end, ok := j.find("d00", "execute", journal.StepNotSent); !ok || end.Key != starts[0].ID {
		t.Errorf("not_sent %+v (%v), want one keyed %s", end, ok, starts[0].ID)
	}
}

// What bounds how old the read a delete goes on is: a Check begins only on
// the deck, which holds at most Parallelism steps that have not taken a
// write slot. So however many steps wait, the Checks begun at any moment
// are at most 2 × Parallelism more than the Executes returned: the
// Parallelism writing and the Parallelism on deck. A step's Check is begun
// only after all but the last 2 × Parallelism − 1 Checks before it have
// had their Delete return: in waves, after the wave before the previous
// one returned. The Executes here hold their slots until the test lets
// them go, one at a time, so the steps behind them pile up as far as the
// engine lets them; the bound must be met exactly (the deck is used, and
// not exceeded).
func TestStartWithCheckDeckBoundsHowFarChecksRunAhead(t *testing.T) {
	const p, n = 3, 15
	e, _ := newKeptEngine(t)
	var (
		mu                         sync.Mutex
		begun, returned, executing int
		ahead                      int // the most Checks begun beyond the Executes returned
	)
	release := make(chan struct{})
	steps := deleteSteps(n, func(context.Context, string) (bool, error) {
		mu.Lock()
		begun++
		ahead = max(ahead, begun-returned)
		mu.Unlock()
		return false, nil
	}, func(ctx context.Context, _, _ string) error {
		mu.Lock()
		executing++
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		executing--
		returned++
		mu.Unlock()
		return nil
	})
	done := make(chan Result, 1)
	go func() {
		done <- e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "teardown", Steps: steps, Parallelism: p, ReadParallelism: 100})
	}()
	for i := range n {
		left := n - i
		// Every slot busy (or every step left writing), and as many
		// checked behind them as the deck holds, before one is let go.
		if !waitFor(t, fmt.Sprintf("release %d: the writes and the deck full", i), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return executing == min(p, left) && begun >= min(n, returned+2*p)
		}) {
			break
		}
		release <- struct{}{}
	}
	close(release) // what is left (after a failed wait) goes on
	res := <-done
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if ahead != 2*p {
		t.Errorf("Checks ran up to %d ahead of the returned Deletes, want exactly %d (Parallelism writing, Parallelism on deck)", ahead, 2*p)
	}
}
