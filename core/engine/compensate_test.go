package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// undoGraph is a rollback's targets: two chains (a2 -> a1 -> a0, b1 ->
// b0), a fan-in (top on a2 and b1) and four independent ones, newest last.
func undoGraph(w *world) []*Step {
	return []*Step{
		w.step("a0", Compensate), w.step("b0", Compensate),
		w.step("a1", Compensate, "a0"), w.step("b1", Compensate, "b0"),
		w.step("a2", Compensate, "a1"), w.step("top", Compensate, "a2", "b1"),
		w.step("i0", Compensate), w.step("i1", Compensate), w.step("i2", Compensate), w.step("i3", Compensate),
	}
}

// With a parallelism of one, the reverse walk undoes one at a time, newest
// first among the ready (CompensationOrder's order for the targets ready
// from the start); with more, every
// compensation still waits for those of its dependents, and no more than
// the parallelism run at once, and as many as it allows do.
func TestCompensateWalksTheReverseGraph(t *testing.T) {
	for _, p := range []int{1, 2, 4, 100} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			w := newWorld()
			steps := undoGraph(w)
			ids := make([]string, len(steps))
			for i, s := range steps {
				ids[i] = s.ID
				w.exists[s.ID] = true
			}
			var (
				mu       sync.Mutex
				inFlight int
				most     int
				ended    = map[string]bool{}
				order    []string
			)
			byID := map[string]*Step{}
			for _, s := range steps {
				byID[s.ID] = s
			}
			dependents := map[string][]string{}
			for _, s := range steps {
				for _, d := range s.DependsOn {
					dependents[d] = append(dependents[d], s.ID)
				}
			}
			// The first wave (the four independent ones and top) waits
			// until min(p, 5) are in flight at once.
			wave := min(p, 5)
			open := make(chan struct{})
			opened := false
			for _, s := range steps {
				inner := s.Compensate
				s.Compensate = func(ctx context.Context) (string, error) {
					mu.Lock()
					for _, d := range dependents[s.ID] {
						if !ended[d] {
							t.Errorf("%s compensated before %s, which depends on it, ended", s.ID, d)
						}
					}
					inFlight++
					most = max(most, inFlight)
					order = append(order, s.ID)
					if inFlight >= wave && !opened {
						opened = true
						close(open)
					}
					mu.Unlock()
					select {
					case <-open:
					case <-time.After(30 * time.Second):
						t.Errorf("%s waited 30s for %d compensations at once", s.ID, wave)
					}
					a, err := inner(ctx)
					mu.Lock()
					inFlight--
					ended[s.ID] = true
					mu.Unlock()
					return a, err
				}
			}
			e, path := newEngine(t)
			out, err := e.Compensate(context.Background(), journal.NewOpID(), Graph(steps), steps, nil, p)
			if out != Compensated || err != nil {
				t.Fatalf("outcome %v: %v", out, err)
			}
			if len(w.exists) != 0 {
				t.Fatalf("left: %v", w.exists)
			}
			if most != wave {
				t.Errorf("at most %d compensations at once, want %d", most, wave)
			}
			// At one at a time the walk starts the newest ready target:
			// the five ready from the start come in CompensationOrder's
			// order. What an ended compensation makes ready is ready once
			// its end record is durable, while the next one has started
			// already (its slot is free once its call returns), so the
			// rest is in the reverse graph's order (checked above), not
			// always CompensationOrder's.
			if want := CompensationOrder(Graph(steps), ids)[:5]; p == 1 && !slices.Equal(order[:5], want) {
				t.Errorf("order %v, want CompensationOrder's %v first", order, want)
			}
			// Each compensation is journaled before it starts and after it
			// ends, behind the target set.
			recs, err := journal.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			status := map[string][]string{}
			for i, r := range recs {
				if i == 0 && r.Kind != journal.KindRollback {
					t.Fatalf("first record %+v, want the target set", r)
				}
				if r.Phase == "compensate" {
					status[r.Step] = append(status[r.Step], r.Status)
				}
			}
			for _, id := range ids {
				if !slices.Equal(status[id], []string{journal.StepStarted, journal.StepOK}) {
					t.Errorf("%s's records %v, want started then ok", id, status[id])
				}
			}
		})
	}
}

// heldEndJournal holds back the append of the first compensation's end
// record until released.
type heldEndJournal struct {
	fileJournal
	mu      sync.Mutex
	first   string
	release chan struct{}
	once    sync.Once
}

func (j *heldEndJournal) let() { j.once.Do(func() { close(j.release) }) }

func (j *heldEndJournal) Append(ctx context.Context, r journal.Record) (journal.Record, error) {
	if r.Kind == journal.KindStep && r.Phase == "compensate" && r.Status != journal.StepStarted {
		j.mu.Lock()
		hold := j.first == ""
		if hold {
			j.first = r.Step
		}
		j.mu.Unlock()
		if hold {
			<-j.release
		}
	}
	return j.fileJournal.Append(ctx, r)
}

// A compensation's slot is free the moment its call returns: with a
// parallelism of one, the next independent compensation is called while
// the first one's end record is still being made durable (here, held
// back until it is). What depends on a target still waits for its end
// record: a was made before b, which depends on it, so a's undo waits for
// b's record, whatever the slot.
func TestCompensationSlotIsFreeBeforeItsEndRecord(t *testing.T) {
	w := newWorld()
	steps := []*Step{w.step("a", Compensate), w.step("b", Compensate, "a"), w.step("c", Compensate), w.step("d", Compensate)}
	for _, s := range steps {
		w.exists[s.ID] = true
	}
	e, _ := newEngine(t)
	j := &heldEndJournal{fileJournal: e.Journal.(fileJournal), release: make(chan struct{})}
	e.Journal = j
	var (
		mu    sync.Mutex
		order []string
	)
	for _, s := range steps {
		inner := s.Compensate
		s.Compensate = func(ctx context.Context) (string, error) {
			mu.Lock()
			order = append(order, s.ID)
			second := len(order) == 2
			mu.Unlock()
			if second {
				j.mu.Lock()
				held := j.first
				j.mu.Unlock()
				if held == "" {
					t.Errorf("%s's compensation called before the first one's end record was even written", s.ID)
				}
				j.let()
			}
			return inner(ctx)
		}
	}
	done := make(chan struct{})
	var (
		out Outcome
		err error
	)
	go func() {
		defer close(done)
		out, err = e.Compensate(context.Background(), journal.NewOpID(), Graph(steps), steps, nil, 1)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Error("no second compensation was called while the first one's end record was held")
		j.let()
		<-done
	}
	if out != Compensated || err != nil {
		t.Fatalf("outcome %v: %v", out, err)
	}
	if len(w.exists) != 0 {
		t.Fatalf("left: %v", w.exists)
	}
	if ia, ib := slices.Index(order, "a"), slices.Index(order, "b"); ia < ib {
		t.Errorf("order %v: a undone before b, which depends on it", order)
	}
}

// A rollback starts as soon as the run stops, while the Verifies of the
// steps that were writing still read: what is verified is undone at once
// (here old, while slow's Verify is held), what is still verifying only
// once its Verify has ended. Unless one still verifying needs a person
// (its failure would stop the run for one instead of rolling back): then
// the rollback waits for every Verify, as before.
func TestRollbackStartsWhileVerifiesRead(t *testing.T) {
	for _, person := range []bool{false, true} {
		t.Run(fmt.Sprintf("intervention %v", person), func(t *testing.T) {
			w := newWorld()
			old, slow, bad := w.step("old", Compensate), w.step("slow", Compensate), w.step("bad", Compensate)
			slow.Intervention = person
			var (
				slowReading, slowRead, badFailed atomic.Bool
				letSlow                          = make(chan struct{})
				letOnce                          sync.Once
			)
			let := func() { letOnce.Do(func() { close(letSlow) }) }
			defer let()
			slowVerify := slow.Verify
			slow.Verify = func(ctx context.Context) error {
				slowReading.Store(true)
				defer slowRead.Store(true)
				if person {
					// Reads on past bad's failure for a while: a rollback
					// that did not wait for it would undo old meanwhile
					// (at once; this bound only ends the test's wait in
					// the right case, where nothing comes).
					waitFor(t, "bad's failure", badFailed.Load)
					select {
					case <-letSlow:
					case <-time.After(500 * time.Millisecond):
					}
					return slowVerify(ctx)
				}
				select {
				case <-letSlow:
				case <-time.After(20 * time.Second):
					t.Error("no compensation began while slow's Verify read")
				}
				return slowVerify(ctx)
			}
			bad.DependsOn = []string{"old"}
			w.failExec["bad"] = true
			badExec := bad.Execute
			bad.Execute = func(ctx context.Context, key string) error {
				waitFor(t, "slow's Verify reading", slowReading.Load)
				err := badExec(ctx, key)
				badFailed.Store(true)
				return err
			}
			for _, s := range []*Step{old, slow} {
				inner := s.Compensate
				s.Compensate = func(ctx context.Context) (string, error) {
					switch {
					case s.ID == "slow" && !slowRead.Load():
						t.Error("slow undone while its Verify still read")
					case s.ID == "old" && person && !slowRead.Load():
						t.Error("old undone while slow, which needs a person, still verified")
						let()
					case s.ID == "old":
						let()
					}
					return inner(ctx)
				}
			}
			e, _ := newEngine(t)
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: []*Step{old, slow, bad}, Parallelism: 3})
			if res.Outcome != Compensated {
				t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
			}
			if len(w.exists) != 0 {
				t.Errorf("left: %v", w.exists)
			}
			if !slices.Contains(res.Rollback, "slow") || !slices.Contains(res.Rollback, "old") {
				t.Errorf("rollback %q, want old and slow", res.Rollback)
			}
		})
	}
}
