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

// keptJournal is a journal file that also keeps every record it made
// durable (its Append returned), in order, for a test to look at while the
// run goes on.
type keptJournal struct {
	fileJournal
	mu   sync.Mutex
	recs []journal.Record
}

func (j *keptJournal) Append(ctx context.Context, r journal.Record) (journal.Record, error) {
	r, err := j.fileJournal.Append(ctx, r)
	if err == nil {
		j.mu.Lock()
		j.recs = append(j.recs, r)
		j.mu.Unlock()
	}
	return r, err
}

// String lists the step records briefly, for a failure's message.
func (j *keptJournal) String() string {
	var out []string
	for _, r := range j.records() {
		if r.Kind == journal.KindStep {
			out = append(out, r.Step+" "+r.Phase+" "+r.Status)
		}
	}
	return strings.Join(out, "; ")
}

func (j *keptJournal) records() []journal.Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.recs)
}

// find returns the durable record of step with phase and status.
func (j *keptJournal) find(step, phase, status string) (journal.Record, bool) {
	for _, r := range j.records() {
		if r.Kind == journal.KindStep && r.Step == step && r.Phase == phase && r.Status == status {
			return r, true
		}
	}
	return journal.Record{}, false
}

func newKeptEngine(t *testing.T) (*Engine, *keptJournal) {
	t.Helper()
	e, _ := newEngine(t)
	j := &keptJournal{fileJournal: e.Journal.(fileJournal)}
	e.Journal = j
	return e, j
}

// slotRace is two independent create steps, a and b, run at parallelism 1
// with two read slots (so one checks while the other writes, as the CLI's
// default of 256 reads allows). The first to Execute holds the write slot
// until the other is waiting for it (the slots' own count, read through
// the Execute's context), then calls during with the other's id; what
// during returns is the first's outcome.
type slotRace struct {
	mu         sync.Mutex
	first      string
	executed   map[string]int
	compensate map[string]int
}

func (r *slotRace) steps(t *testing.T, withSlot bool, during func(other string) error) []*Step {
	r.executed, r.compensate = map[string]int{}, map[string]int{}
	mk := func(id, other string) *Step {
		return &Step{ID: id, Resource: id, Action: "create", Policy: Compensate, StartWithSlot: withSlot,
			Check: func(context.Context) (bool, error) { return false, nil },
			Execute: func(ctx context.Context, key string) error {
				r.mu.Lock()
				r.executed[id]++
				first := r.first == ""
				if first {
					r.first = id
				}
				r.mu.Unlock()
				if key == "" {
					return errors.New("no key")
				}
				if !first {
					return nil
				}
				sl, ok := ctx.Value(writesKey{}).(stepSlots)
				if !ok {
					t.Error("Execute's context carries no slots")
					return nil
				}
				deadline := time.Now().Add(10 * time.Second)
				for sl.writes.waiting.Load() == 0 {
					if time.Now().After(deadline) {
						t.Errorf("%s never waited for the write slot %s held", other, id)
						return nil
					}
					time.Sleep(time.Millisecond)
				}
				return during(other)
			},
			Compensate: func(context.Context) (string, error) {
				r.mu.Lock()
				r.compensate[id]++
				r.mu.Unlock()
				return "delete", nil
			},
		}
	}
	return []*Step{mk("a", "b"), mk("b", "a")}
}

// A step's "execute started" is made durable while it waits for its write
// slot, not once it holds it: at parallelism 1, the second step's start is
// on disk before the first step's Execute returns, so its fsync overlaps
// the first's call and its own call goes out the moment the slot is free.
func TestStartedIsDurableBeforeTheWriteSlot(t *testing.T) {
	e, j := newKeptEngine(t)
	var race slotRace
	steps := race.steps(t, false, func(other string) error {
		if _, ok := j.find(other, "execute", journal.StepStarted); !ok {
			t.Errorf("%s waits for the write slot with no durable \"execute started\": %v", other, j)
		}
		race.mu.Lock()
		n := race.executed[other]
		race.mu.Unlock()
		if n != 0 {
			t.Errorf("%s executed while the only write slot was held", other)
		}
		return nil
	})
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1, ReadParallelism: 2})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	for _, id := range []string{"a", "b"} {
		if race.executed[id] != 1 {
			t.Errorf("%s executed %d times, want 1", id, race.executed[id])
		}
		if _, ok := j.find(id, "execute", journal.StepOK); !ok {
			t.Errorf("%s has no \"execute ok\"", id)
		}
	}
}

// A step that asks for it (a create of a provider that takes no
// idempotency key) journals its start only once it holds its write slot:
// while it waits, nothing says it started, so a crash then leaves no create
// whose outcome is unknown.
func TestStartWithSlotJournalsOnlyOnceTheSlotIsHeld(t *testing.T) {
	e, j := newKeptEngine(t)
	var race slotRace
	var firstOK bool
	steps := race.steps(t, true, func(other string) error {
		if r, ok := j.find(other, "execute", journal.StepStarted); ok {
			t.Errorf("%s journaled its start while it waited for the write slot: %+v", other, r)
		}
		firstOK = true
		return nil
	})
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1, ReadParallelism: 2})
	if res.Outcome != Succeeded || !firstOK {
		t.Fatalf("outcome %v (first step's check ran: %v): %v", res.Outcome, firstOK, res.Err)
	}
	// The second's start was journaled once it had the slot, as its call
	// went out (the first's end record may come after it: the slot is
	// given back as the first's Execute returns).
	second := "a"
	if race.first == "a" {
		second = "b"
	}
	if _, ok := j.find(second, "execute", journal.StepStarted); !ok || race.executed[second] != 1 {
		t.Errorf("%s: started %v, executed %d times; want started and executed once", second, ok, race.executed[second])
	}
}

// A run that stops while a step holds a durable "execute started" but no
// write slot ends that step "not_sent" (keyed by its start's id): it counts
// as never started (blocked), not failed and not executed, and nothing
// undoes it. Whatever stops the run: an interrupt, another step's
// failure, the context cancelled.
func TestStopWhileStartedWaitsForTheSlotJournalsNotSent(t *testing.T) {
	for _, how := range []string{"stop", "failure", "cancel"} {
		t.Run(how, func(t *testing.T) {
			e, j := newKeptEngine(t)
			stop := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var race slotRace
			steps := race.steps(t, false, func(other string) error {
				if _, ok := j.find(other, "execute", journal.StepStarted); !ok {
					t.Errorf("%s waits for the slot with no durable start", other)
				}
				switch how {
				case "stop":
					close(stop)
				case "failure":
					return errors.New("injected failure")
				case "cancel":
					cancel()
				}
				return nil
			})
			op := &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1, ReadParallelism: 2, Stop: stop}
			res := e.Run(ctx, op)
			first, second := race.first, "a"
			if first == "a" {
				second = "b"
			}
			started, ok := j.find(second, "execute", journal.StepStarted)
			if !ok {
				t.Fatalf("%s has no start: %v", second, j)
			}
			end, ok := j.find(second, "execute", journal.StepNotSent)
			if !ok {
				t.Fatalf("%s's start has no \"not_sent\" end: %v", second, j)
			}
			if end.Key != started.ID || end.Action != "create" {
				t.Errorf("not_sent record %+v: want key %s (its start's id) and action create", end, started.ID)
			}
			for _, r := range j.records() {
				if r.Step == second && r.ID != started.ID && r.ID != end.ID {
					t.Errorf("%s has a record beyond its start and its not_sent end: %+v", second, r)
				}
			}
			if race.executed[second] != 0 || race.compensate[second] != 0 {
				t.Errorf("%s executed %d and compensated %d times, want neither", second, race.executed[second], race.compensate[second])
			}
			if !equal(res.Blocked, []string{second}) || slices.Contains(res.Executed, second) || slices.Contains(res.Failed, second) || slices.Contains(res.Rollback, second) {
				t.Errorf("result blocked %q executed %q failed %q rollback %q: want %s blocked only", res.Blocked, res.Executed, res.Failed, res.Rollback, second)
			}
			if !equal(res.Executed, []string{first}) {
				t.Errorf("executed %q, want %q", res.Executed, first)
			}
			switch how {
			case "stop", "failure":
				if res.Outcome != Compensated || race.compensate[first] != 1 {
					t.Errorf("outcome %v, %s compensated %d times: want compensated once (%v)", res.Outcome, first, race.compensate[first], res.Err)
				}
			case "cancel":
				// A cancelled context stops the rollback too: resume finishes it.
				if res.Outcome != RollbackIncomplete || !equal(res.Rollback, []string{first}) {
					t.Errorf("outcome %v rollback %q, want rollback_incomplete of %s (%v)", res.Outcome, res.Rollback, first, res.Err)
				}
			}
			if sent := journal.Sent(j.records()); slices.ContainsFunc(sent, func(r journal.Record) bool { return r.Step == second }) {
				t.Errorf("journal.Sent keeps a record of %s, which sent nothing", second)
			}
		})
	}
}

// Once the journal is lost nothing more is written: a step that waited for
// its slot with a durable start keeps it open, as a crash there would
// (resume reads by its key and finds nothing sent), and never executes.
func TestLostWhileStartedWaitsForTheSlotWritesNothingMore(t *testing.T) {
	e, j := newKeptEngine(t)
	lost := make(chan struct{})
	e.Lost = lost
	var race slotRace
	steps := race.steps(t, false, func(string) error {
		close(lost)
		return nil
	})
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1, ReadParallelism: 2})
	second := "a"
	if race.first == "a" {
		second = "b"
	}
	if !res.Lost || res.Outcome != Unfinished {
		t.Fatalf("outcome %v lost %v, want unfinished and lost: %v", res.Outcome, res.Lost, res.Err)
	}
	if _, ok := j.find(second, "execute", journal.StepNotSent); ok {
		t.Errorf("a not_sent record was written after the journal was lost")
	}
	if race.executed[second] != 0 || !slices.Contains(res.Blocked, second) {
		t.Errorf("%s executed %d times, blocked %q: want blocked, never executed", second, race.executed[second], res.Blocked)
	}
}
