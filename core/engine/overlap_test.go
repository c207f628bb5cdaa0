package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// gatedJournal holds back the append of a step's "execute ok" until
// released, and can fail it.
type gatedJournal struct {
	mu      sync.Mutex
	recs    []journal.Record
	entered chan struct{} // closed when the "execute ok" append began
	release chan struct{} // the append returns once this is closed
	fail    error
}

func (j *gatedJournal) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	if r.Phase == "execute" && r.Status == journal.StepOK {
		close(j.entered)
		<-j.release
		if j.fail != nil {
			return r, j.fail
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs = append(j.recs, r)
	return r, nil
}

func (j *gatedJournal) phases() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, r := range j.recs {
		if r.Kind == journal.KindStep {
			out = append(out, r.Step+" "+r.Phase+" "+r.Status)
		}
	}
	return out
}

// Verify reads while the step's "execute ok" is being made durable; the
// step ends (its dependent starts, its verify record is written) only once
// that record is durable, and a record that cannot be written fails the
// step whatever Verify said.
func TestVerifyOverlapsTheEndRecord(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      error
		verifyErr error
		want      []string
		outcome   Outcome
	}{
		{"both ok", nil, nil, []string{"a execute started", "a execute ok", "a verify ok", "b execute started", "b execute ok"}, Succeeded},
		{"the record fails", errors.New("disk full"), nil, []string{"a execute started"}, Failed},
		{"verify fails", nil, errors.New("not there"), []string{"a execute started", "a execute ok", "a verify failed"}, Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &gatedJournal{entered: make(chan struct{}), release: make(chan struct{}), fail: tc.fail}
			var mu sync.Mutex
			var bStarted bool
			verified := make(chan struct{})
			a := &Step{ID: "a", Resource: "a", Action: "create", Policy: Abort,
				Execute: func(context.Context, string) error { return nil },
				Verify: func(context.Context) error {
					// The end record's append is in flight, not done:
					// Verify runs beside it.
					<-j.entered
					mu.Lock()
					started := bStarted
					mu.Unlock()
					if started {
						t.Error("the dependent started before the step's end record")
					}
					close(verified)
					return tc.verifyErr
				}}
			b := &Step{ID: "b", Resource: "b", Action: "create", DependsOn: []string{"a"}, Policy: Abort,
				Execute: func(context.Context, string) error {
					mu.Lock()
					bStarted = true
					mu.Unlock()
					return nil
				}}
			done := make(chan Result, 1)
			e := &Engine{Journal: j}
			go func() {
				done <- e.Run(context.Background(), &Operation{ID: "op_1", Type: "apply", Steps: []*Step{a, b}, Parallelism: 2})
			}()
			select {
			case <-verified: // Verify ended while the append still waits
			case <-time.After(10 * time.Second):
				t.Fatal("Verify waits for the end record's append")
			}
			mu.Lock()
			if bStarted {
				t.Error("the dependent started before the step's end record was durable")
			}
			mu.Unlock()
			if got := j.phases(); len(got) != 1 {
				t.Errorf("records before the end record returned: %v", got)
			}
			// b's own "execute ok" goes through the gate too: reopen it.
			j.mu.Lock()
			j.entered = make(chan struct{})
			j.mu.Unlock()
			close(j.release)
			res := <-done
			if res.Outcome != tc.outcome {
				t.Errorf("outcome %v, want %v (%v)", res.Outcome, tc.outcome, res.Err)
			}
			if got := j.phases(); !equal(got, tc.want) {
				t.Errorf("records %q, want %q", got, tc.want)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The work's end is observed once its record is durable, while Verify still
// reads, not once the read is over: what watches the events (the progress
// view, a script that interrupts once a Create is done) sees it as it
// happened, and always before the verify's own event.
func TestExecuteOkObservedWhileVerifyReads(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	created := make(chan struct{})
	obs := ObserverFunc(func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ev.Action+" "+ev.Status)
		if ev.Action == "create" && ev.Status == journal.StepOK {
			close(created)
		}
	})
	a := &Step{ID: "a", Resource: "a", Action: "create", Policy: Abort,
		Execute: func(context.Context, string) error { return nil },
		Verify: func(context.Context) error {
			select {
			case <-created:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("the create's end was not observed while Verify read")
			}
		}}
	e, _ := newEngine(t)
	e.Observer = obs
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: []*Step{a}, Parallelism: 1})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"create started", "create ok", "verify ok"}; !equal(seen, want) {
		t.Errorf("events %q, want %q", seen, want)
	}
}

// A stop that comes while a step's Verify reads (its "execute ok" being
// made durable beside it) lets the step end, and starts the work of
// nothing that depends on it, whatever the parallelism. Its dependents may
// have begun their Checks (reads, which change nothing) once its
// "execute ok" was durable, as the Verify ran: none goes on to its
// Execute, each asks after its gate and its write slot.
func TestStopDuringVerifyStartsNoDependent(t *testing.T) {
	for _, par := range []int{1, 10} {
		t.Run(fmt.Sprint(par), func(t *testing.T) {
			w := newWorld()
			steps := chain(w, Compensate)
			stop := make(chan struct{})
			for _, s := range steps {
				check := s.Check
				s.Check = func(ctx context.Context) (bool, error) {
					w.log("check " + s.ID) // a step's start: a provider read
					return check(ctx)
				}
				if s.ID == "network" {
					s.Verify = func(context.Context) error {
						close(stop) // the interrupt arrives as the read runs
						return nil
					}
				}
				if s.ID == "bucket" {
					// Independent, so it may have run at parallelism > 1;
					// at 1 it comes after network in the order: keep it
					// out of the picture.
					s.DependsOn = []string{"network"}
				}
			}
			e, _ := newEngine(t)
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Stop: stop, Parallelism: par})
			if res.Outcome != Compensated || !res.Interrupted {
				t.Fatalf("outcome %v interrupted %v: %v", res.Outcome, res.Interrupted, res.Err)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			var work []string
			for _, c := range w.calls {
				if !strings.HasPrefix(c, "check ") {
					work = append(work, c)
				}
			}
			if want := []string{"create network", "delete network"}; !equal(work, want) {
				t.Errorf("calls %q, want %q (and Checks): a step's work started after the stop", w.calls, want)
			}
			if want := []string{"bucket", "compute", "lb"}; !equal(sortedCopy(res.Blocked), want) {
				t.Errorf("blocked %q, want %q", res.Blocked, want)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
