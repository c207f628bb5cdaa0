package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// A resumed operation that then fails undoes what its interrupted earlier
// run executed too, and journals both in its target set.
func TestRollbackUndoesInheritedSteps(t *testing.T) {
	w := newWorld()
	// The interrupted run created network; the resume finds it done.
	w.exists["network"] = true
	w.failExec["lb"] = true
	steps := chain(w, Compensate)
	inherited := []*Step{w.step("network", Compensate)}
	e, path := newEngine(t)
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Inherited: inherited, Parallelism: 1})
	if res.Outcome != Compensated {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if len(w.exists) != 0 {
		t.Fatalf("left after the rollback: %v (calls %v)", w.exists, w.calls)
	}
	if !slices.Contains(res.Rollback, "network") {
		t.Fatalf("rollback targets %v lack the inherited network", res.Rollback)
	}
	recs, _ := journal.Read(path)
	for _, r := range recs {
		if r.Kind == journal.KindRollback && !slices.Contains(r.Targets, "network") {
			t.Fatalf("journaled targets %v lack the inherited network", r.Targets)
		}
	}
	// Dependents before their dependencies, inherited or not.
	if i, j := slices.Index(w.calls, "delete compute"), slices.Index(w.calls, "delete network"); i < 0 || j < i {
		t.Fatalf("calls %v: compute must be deleted before network", w.calls)
	}
}

// An inherited step that is not a step of this run (the spec given to
// resume lacks it) is still undone.
func TestRollbackUndoesInheritedStepOutsideThisRun(t *testing.T) {
	w := newWorld()
	w.exists["old"] = true
	w.failExec["a"] = true
	e, _ := newEngine(t)
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply",
		Steps: []*Step{w.step("a", Compensate)}, Inherited: []*Step{w.step("old", Compensate)}, Parallelism: 1})
	if res.Outcome != Compensated || w.exists["old"] {
		t.Fatalf("outcome %v, exists %v", res.Outcome, w.exists)
	}
}

// Stop lets the running step finish (its context is not cancelled), starts
// nothing after it, and rolls back what ran: the run is reported as
// interrupted, not as a failed step.
func TestStopFinishesRunningStepsThenRollsBack(t *testing.T) {
	w := newWorld()
	steps := chain(w, Compensate)
	stop := make(chan struct{})
	inExec := make(chan struct{})
	for _, s := range steps {
		if s.ID != "network" {
			continue
		}
		inner := s.Execute
		s.Execute = func(ctx context.Context, key string) error {
			close(inExec)
			<-stop
			// The call in flight is not cut short by the stop.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			return inner(ctx, key)
		}
	}
	go func() { <-inExec; close(stop) }()
	e, _ := newEngine(t)
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Stop: stop, Parallelism: 1})
	if res.Outcome != Compensated || !res.Interrupted {
		t.Fatalf("outcome %v interrupted %v: %v", res.Outcome, res.Interrupted, res.Err)
	}
	if !errors.Is(res.Err, ErrInterrupted) {
		t.Fatalf("err %v is not ErrInterrupted", res.Err)
	}
	if len(res.Errors) != 1 || res.Errors["(not started)"] == nil {
		t.Fatalf("errors %v: the running step must have finished", res.Errors)
	}
	if !slices.Contains(w.calls, "create network") || !slices.Contains(w.calls, "delete network") || len(w.exists) != 0 {
		t.Fatalf("calls %v, exists %v", w.calls, w.exists)
	}
}

// Cancelling the context during a rollback stops it: what is left is
// reported, and stays in the journaled target set for resume.
func TestCancelDuringRollbackStopsWaiting(t *testing.T) {
	w := newWorld()
	w.failExec["lb"] = true
	steps := chain(w, Compensate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range steps {
		if s.ID == "compute" {
			inner := s.Compensate
			s.Compensate = func(c context.Context) (string, error) {
				cancel()
				return inner(c)
			}
		}
	}
	e, _ := newEngine(t)
	res := e.Run(ctx, &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1})
	var rb *RollbackError
	if res.Outcome != RollbackIncomplete || !errors.As(res.Err, &rb) || rb.Failures["(not attempted)"] == nil {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if !errors.Is(res.Err, ErrInterrupted) {
		t.Fatalf("err %v is not ErrInterrupted", res.Err)
	}
	if slices.Contains(w.calls, "delete network") {
		t.Fatalf("calls %v: nothing may start after the cancel", w.calls)
	}
}

// A failed Finish leaves the operation unfinished in the journal, never
// succeeded.
func TestFailedFinishLeavesOperationUnfinished(t *testing.T) {
	for _, tt := range []struct {
		name     string
		failExec string
		intv     bool
		reached  Outcome
	}{
		{"succeeded", "", false, Succeeded},
		{"intervention", "compute", true, NeedsIntervention},
		{"compensated", "compute", false, Compensated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			if tt.failExec != "" {
				w.failExec[tt.failExec] = true
			}
			steps := chain(w, Compensate)
			for _, s := range steps {
				s.Intervention = tt.intv
			}
			e, path := newEngine(t)
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1,
				Finish: func(*Result) error { return errors.New("disk full") }})
			var ue *UnrecordedError
			if res.Outcome != Unfinished || res.Reached != tt.reached || !errors.As(res.Err, &ue) {
				t.Fatalf("outcome %v reached %v: %v", res.Outcome, res.Reached, res.Err)
			}
			recs, _ := journal.Read(path)
			last := recs[len(recs)-1]
			if last.Kind != journal.KindOp || last.Status != journal.OpRunning || !strings.Contains(last.Error, "disk full") {
				t.Fatalf("last record %+v: want the operation left running, saying why", last)
			}
		})
	}
}

// A multi-line error reaches the journal as one line.
func TestJournalErrorsAreOneLine(t *testing.T) {
	w := newWorld()
	steps := []*Step{w.step("a", Abort)}
	steps[0].Execute = func(context.Context, string) error {
		return errors.New("provider panicked: boom\ngoroutine 1 [running]:\nmain.main()\n\t/x.go:1")
	}
	e, path := newEngine(t)
	e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1})
	recs, _ := journal.Read(path)
	for _, r := range recs {
		if strings.Contains(r.Error, "\n") {
			t.Fatalf("record %+v spans lines", r)
		}
	}
	if got := OneLine("a\nb\nc"); got != "a [2 more line(s) not shown]" {
		t.Fatalf("OneLine = %q", got)
	}
}

// failingJournal fails, from the first record of a compensation on,
// every append: the disk fills up just as the rollback begins, whatever
// order the forward run's records came in (a dependent that starts early
// may fail before its dependency's Verify has ended).
type failingJournal struct {
	mu     sync.Mutex
	failed bool
}

func (j *failingJournal) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed || r.Phase == "compensate" {
		j.failed = true
		return r, errors.New("write journal.jsonl: no space left on device")
	}
	r.ID = journal.NewOpID()
	return r, nil
}

// A journal that cannot be written stops the rollback at once (no
// compensation runs without its record), naming what was not attempted,
// instead of one failure per target.
func TestRollbackStopsAtTheFirstJournalFailure(t *testing.T) {
	w := newWorld()
	w.failExec["lb"] = true
	steps := chain(w, Compensate)
	e := &Engine{Journal: &failingJournal{}}
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1})
	var rb *RollbackError
	if res.Outcome != Unfinished || res.Reached != RollbackIncomplete || !errors.As(res.Err, &rb) {
		t.Fatalf("outcome %v reached %v: %v", res.Outcome, res.Reached, res.Err)
	}
	if len(rb.Failures) != 2 || rb.Failures["(not attempted)"] == nil {
		t.Fatalf("failures %v: want the first journal failure and what was not attempted", rb.Failures)
	}
	if slices.ContainsFunc(w.calls, func(c string) bool { return strings.HasPrefix(c, "delete ") }) {
		t.Fatalf("calls %v: a compensation ran without its record", w.calls)
	}
}
