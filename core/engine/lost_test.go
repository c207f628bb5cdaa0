package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// losingJournal is a journal that, once lost, counts what is appended.
type losingJournal struct {
	mu        sync.Mutex
	lost      chan struct{}
	afterLost []journal.Record
	recs      []journal.Record
}

func (j *losingJournal) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	select {
	case <-j.lost:
		j.afterLost = append(j.afterLost, r)
		return r, errors.New("lost")
	default:
	}
	r.ID = journal.NewOpID()
	j.recs = append(j.recs, r)
	return r, nil
}

// Engine.Lost closing in the middle of a step: that step's context is
// cancelled, no other step starts (not even its Check), nothing is
// compensated, Finish is not called and nothing more is appended; the
// outcome is Unfinished, Lost, ErrLost.
func TestLostStopsTheRun(t *testing.T) {
	for _, policy := range []FailurePolicy{Compensate, Continue, Abort} {
		t.Run(policy.String(), func(t *testing.T) {
			w := newWorld()
			j := &losingJournal{lost: make(chan struct{})}
			e := &Engine{Journal: j, Lost: j.lost}
			steps := chain(w, policy)
			var checks []string
			for _, s := range steps {
				check := s.Check
				s.Check = func(ctx context.Context) (bool, error) {
					if stoppedBy(j.lost) {
						w.mu.Lock()
						checks = append(checks, s.ID)
						w.mu.Unlock()
					}
					return check(ctx)
				}
			}
			// network's Execute loses the journal, then waits for its
			// context: the work in flight is cancelled.
			steps[0].Execute = func(ctx context.Context, _ string) error {
				close(j.lost)
				<-ctx.Done()
				return ctx.Err()
			}
			finished := false
			op := &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1,
				Finish: func(*Result) error { finished = true; return nil }}
			res := e.Run(context.Background(), op)
			if res.Outcome != Unfinished || !res.Lost || !errors.Is(res.Err, ErrLost) {
				t.Fatalf("outcome %v, lost %v, err %v; want unfinished, lost, ErrLost", res.Outcome, res.Lost, res.Err)
			}
			if !errors.Is(res.Err, context.Canceled) {
				t.Errorf("err %v does not keep the cancelled step's error", res.Err)
			}
			if len(checks) > 0 {
				t.Errorf("checks after the loss: %v", checks)
			}
			if slices.ContainsFunc(w.calls, func(c string) bool { return c != "create bucket" }) {
				t.Errorf("calls %v: a compensation or a step after the loss", w.calls)
			}
			if finished {
				t.Error("Finish ran after the loss")
			}
			// What may still be handed to the journal after the loss (it
			// refuses it) is what was in flight then: the cancelled step's
			// failure, where the run learns nothing more goes, and a
			// Verify's outcome racing it (bucket's, whose dependent
			// network started while it verified). Never a start, and
			// never a record of another step.
			for _, r := range j.afterLost {
				inFlight := (r.Step == "network" && r.Phase == "execute" && r.Status == journal.StepFailed) ||
					(r.Step == "bucket" && r.Phase == "verify" && r.Status != journal.StepStarted)
				if !inFlight {
					t.Errorf("appended after the loss: %+v", r)
				}
			}
			if len(j.afterLost) > 2 {
				t.Errorf("%d records appended after the loss: %+v", len(j.afterLost), j.afterLost)
			}
		})
	}
}
