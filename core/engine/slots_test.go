package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// countingJournal accepts every record.
type countingJournal struct{ n atomic.Int64 }

func (j *countingJournal) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	r.ID = fmt.Sprintf("rec-%d", j.n.Add(1))
	return r, nil
}

// peak tracks how many of something run at once.
type peak struct {
	mu       sync.Mutex
	now, max int
}

func (p *peak) enter() {
	p.mu.Lock()
	p.now++
	p.max = max(p.max, p.now)
	p.mu.Unlock()
}

func (p *peak) leave() {
	p.mu.Lock()
	p.now--
	p.mu.Unlock()
}

// The writes and the reads have slots of their own: no more than
// Parallelism Executes at once, and a step's write slot is free the moment
// its Execute returns, whatever its Verify still does. Every Verify here
// waits until all the Executes are done: were the write slot held through
// Verify (as one slot per step would), the third Execute could never start.
func TestWritesAndReadsHaveSlotsOfTheirOwn(t *testing.T) {
	const n, writes, reads = 12, 2, 16
	var executes, checks peak
	var executed atomic.Int64
	allExecuted := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var steps []*Step
	for i := range n {
		steps = append(steps, &Step{
			ID: fmt.Sprintf("s%02d", i), Action: "create",
			Check: func(context.Context) (bool, error) {
				checks.enter()
				defer checks.leave()
				return false, nil
			},
			Execute: func(ctx context.Context, _ string) error {
				executes.enter()
				defer executes.leave()
				if executed.Add(1) == n {
					close(allExecuted)
				}
				return nil
			},
			Verify: func(ctx context.Context) error {
				select {
				case <-allExecuted:
					return nil
				case <-ctx.Done():
					return fmt.Errorf("verify waited for the other Executes: %w", ctx.Err())
				}
			},
		})
	}
	e := &Engine{Journal: &countingJournal{}}
	res := e.Run(ctx, &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: writes, ReadParallelism: reads})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if executes.max > writes {
		t.Errorf("%d Executes at once, want at most %d", executes.max, writes)
	}
	if checks.max > reads {
		t.Errorf("%d Checks at once, want at most %d", checks.max, reads)
	}
}

// With as many reads as writes (ReadParallelism unset) and Parallelism 1,
// one read and one write at a time: the next step checks while the one
// before verifies, never two of either at once.
func TestOneSlotRunsOneReadAndOneWriteAtATime(t *testing.T) {
	var reads, writes peak
	var steps []*Step
	for i := range 6 {
		work := func(p *peak) { p.enter(); time.Sleep(time.Millisecond); p.leave() }
		steps = append(steps, &Step{
			ID: fmt.Sprintf("s%d", i), Action: "create",
			Check:   func(context.Context) (bool, error) { work(&reads); return false, nil },
			Execute: func(context.Context, string) error { work(&writes); return nil },
			Verify:  func(context.Context) error { work(&reads); return nil },
		})
	}
	e := &Engine{Journal: &countingJournal{}}
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if reads.max != 1 || writes.max != 1 {
		t.Errorf("%d reads and %d writes at once, want 1 and 1", reads.max, writes.max)
	}
}

// InRun tells a step's Execute from a compensation's: a step's Create
// asks for no read-back.
func TestInRun(t *testing.T) {
	var got atomic.Bool
	step := &Step{ID: "s", Action: "create", Execute: func(ctx context.Context, _ string) error {
		got.Store(InRun(ctx))
		return nil
	}}
	e := &Engine{Journal: &countingJournal{}}
	if res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: []*Step{step}, Parallelism: 2}); res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if !got.Load() {
		t.Error("InRun in a step's Execute = false, want true")
	}
	if InRun(context.Background()) {
		t.Error("InRun outside a run = true, want false")
	}
}

// A step checks while what it depends on verifies (a teardown's next
// delete reads its ownership during the Verify of the delete before it),
// but starts its work only once that is verified: a failed Verify leaves
// it never started.
func TestDependentsCheckDuringVerifyAndWaitForIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	checked := make(chan struct{})
	var bExecuted atomic.Bool
	a := &Step{ID: "a", Action: "delete", Policy: Continue,
		Execute: func(context.Context, string) error { return nil },
		Verify: func(ctx context.Context) error {
			select {
			case <-checked: // b checked while a was verifying
				return fmt.Errorf("a still exists")
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	b := &Step{ID: "b", Action: "delete", DependsOn: []string{"a"}, Policy: Continue,
		Check:   func(context.Context) (bool, error) { close(checked); return false, nil },
		Execute: func(context.Context, string) error { bExecuted.Store(true); return nil }}
	e := &Engine{Journal: &countingJournal{}}
	res := e.Run(ctx, &Operation{ID: journal.NewOpID(), Type: "teardown", Steps: []*Step{a, b}, Parallelism: 4})
	if bExecuted.Load() {
		t.Fatal("b's Execute ran though a's Verify failed")
	}
	if res.Outcome != Failed || len(res.Failed) != 1 || res.Failed[0] != "a" {
		t.Fatalf("outcome %v, failed %v; want Failed, [a]", res.Outcome, res.Failed)
	}
	if len(res.Blocked) != 1 || res.Blocked[0] != "b" {
		t.Errorf("blocked %v, want [b]", res.Blocked)
	}
}
