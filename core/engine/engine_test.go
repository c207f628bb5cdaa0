package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// world is an in-process fake of what steps mutate.
type world struct {
	mu       sync.Mutex
	exists   map[string]bool
	calls    []string
	failExec map[string]bool
	failComp map[string]bool
	running  int
	maxPar   int
}

func newWorld() *world {
	return &world{exists: map[string]bool{}, failExec: map[string]bool{}, failComp: map[string]bool{}}
}

func (w *world) log(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, s)
}

// step makes a create step for name depending on deps.
func (w *world) step(name string, policy FailurePolicy, deps ...string) *Step {
	return &Step{
		ID: name, Resource: name, Action: "create", DependsOn: deps, Policy: policy,
		Check: func(context.Context) (bool, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.exists[name], nil
		},
		Execute: func(ctx context.Context, key string) error {
			w.mu.Lock()
			w.running++
			w.maxPar = max(w.maxPar, w.running)
			w.calls = append(w.calls, "create "+name)
			fail := w.failExec[name]
			if !fail {
				w.exists[name] = true
			}
			w.running--
			w.mu.Unlock()
			if key == "" {
				return errors.New("no key")
			}
			if fail {
				return fmt.Errorf("injected failure of %s", name)
			}
			return nil
		},
		Verify: func(context.Context) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !w.exists[name] {
				return errors.New("not there")
			}
			return nil
		},
		Compensate: func(context.Context) (string, error) {
			w.log("delete " + name)
			if w.failComp[name] {
				return "delete", errors.New("delete failed")
			}
			w.mu.Lock()
			delete(w.exists, name)
			w.mu.Unlock()
			return "delete", nil
		},
	}
}

func newEngine(t *testing.T) (*Engine, string) {
	path := filepath.Join(t.TempDir(), journal.FileName)
	j, err := journal.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &Engine{Journal: fileJournal{j}}, path
}

// fileJournal is a journal file as the engine's Journal: a local file
// write, which the context does not bound.
type fileJournal struct{ *journal.Journal }

func (j fileJournal) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	return j.Journal.Append(r)
}

// chain is network <- compute <- lb, plus bucket independent.
func chain(w *world, policy FailurePolicy) []*Step {
	return []*Step{
		w.step("network", policy),
		w.step("bucket", policy),
		w.step("compute", policy, "network"),
		w.step("lb", policy, "compute"),
	}
}

func TestOutcomes(t *testing.T) {
	tests := []struct {
		name         string
		policy       FailurePolicy
		intervention bool
		failExec     string
		failComp     string
		want         Outcome
		wantExists   []string
	}{
		{name: "all succeed", policy: Compensate, want: Succeeded, wantExists: []string{"bucket", "compute", "lb", "network"}},
		{name: "compensate undoes executed", policy: Compensate, failExec: "compute", want: Compensated, wantExists: nil},
		{name: "abort undoes nothing", policy: Abort, failExec: "compute", want: Failed, wantExists: []string{"bucket", "network"}},
		{name: "continue skips dependents", policy: Continue, failExec: "compute", want: Failed, wantExists: []string{"bucket", "network"}},
		{name: "failed compensation", policy: Compensate, failExec: "compute", failComp: "network", want: RollbackIncomplete, wantExists: []string{"network"}},
		{name: "intervention stops without undo", policy: Compensate, intervention: true, failExec: "compute", want: NeedsIntervention, wantExists: []string{"bucket", "network"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			if tt.failExec != "" {
				w.failExec[tt.failExec] = true
			}
			if tt.failComp != "" {
				w.failComp[tt.failComp] = true
			}
			steps := chain(w, tt.policy)
			for _, s := range steps {
				s.Intervention = tt.intervention
			}
			e, _ := newEngine(t)
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1})
			if res.Outcome != tt.want {
				t.Fatalf("outcome = %v (%v), want %v", res.Outcome, res.Err, tt.want)
			}
			var got []string
			for n := range w.exists {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.wantExists) {
				t.Fatalf("exists = %v, want %v", got, tt.wantExists)
			}
			if tt.want != Succeeded && res.Err == nil {
				t.Fatal("no error for a failed operation")
			}
		})
	}
}

func TestRerunIsNoOp(t *testing.T) {
	w := newWorld()
	e, _ := newEngine(t)
	op := func() *Operation {
		return &Operation{ID: journal.NewOpID(), Type: "apply", Steps: chain(w, Compensate), Parallelism: 4}
	}
	if res := e.Run(context.Background(), op()); res.Outcome != Succeeded {
		t.Fatal(res.Err)
	}
	before := len(w.calls)
	res := e.Run(context.Background(), op())
	if res.Outcome != Succeeded || len(res.Skipped) != 4 || len(res.Executed) != 0 {
		t.Fatalf("re-run: %+v", res)
	}
	if len(w.calls) != before {
		t.Fatalf("re-run executed: %v", w.calls[before:])
	}
}

func TestRollbackErrorKeepsEveryFailureAndCause(t *testing.T) {
	w := newWorld()
	w.failExec["lb"] = true
	w.failComp["network"] = true
	w.failComp["compute"] = true
	e, _ := newEngine(t)
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: chain(w, Compensate), Parallelism: 1})
	var rb *RollbackError
	if !errors.As(res.Err, &rb) {
		t.Fatalf("err = %T %v", res.Err, res.Err)
	}
	if len(rb.Failures) != 2 || rb.Failures["network"] == nil || rb.Failures["compute"] == nil {
		t.Fatalf("failures = %v", rb.Failures)
	}
	var se *StepError
	if !errors.As(rb.Cause, &se) || se.Failures["lb"] == nil {
		t.Fatalf("cause = %v", rb.Cause)
	}
	// network's failure did not stop storage's compensation.
	if !slices.Contains(w.calls, "delete bucket") {
		t.Fatalf("calls = %v", w.calls)
	}
}

func TestCompensationOrderReversesDependencies(t *testing.T) {
	w := newWorld()
	w.failExec["lb"] = true
	e, path := newEngine(t)
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: chain(w, Compensate), Parallelism: 4})
	if res.Outcome != Compensated {
		t.Fatal(res.Err)
	}
	var deletes []string
	for _, c := range w.calls {
		if len(c) > 7 && c[:7] == "delete " {
			deletes = append(deletes, c[7:])
		}
	}
	idx := func(n string) int { return slices.Index(deletes, n) }
	if idx("lb") > idx("compute") || idx("compute") > idx("network") || idx("bucket") < 0 {
		t.Fatalf("delete order %v breaks dependencies", deletes)
	}
	// The target set is journaled before the first compensation.
	recs, err := journal.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	sawTargets := false
	for _, r := range recs {
		if r.Kind == journal.KindRollback {
			sawTargets = true
			if len(r.Targets) != 4 {
				t.Fatalf("targets = %v", r.Targets)
			}
		}
		if r.Phase == "compensate" && !sawTargets {
			t.Fatal("compensation journaled before the target set")
		}
	}
}

func TestJournalHasStartedBeforeEveryExecuteAndKeyIsItsID(t *testing.T) {
	w := newWorld()
	e, path := newEngine(t)
	keys := map[string]string{}
	var mu sync.Mutex
	steps := chain(w, Compensate)
	for _, s := range steps {
		inner := s.Execute
		s.Execute = func(ctx context.Context, key string) error {
			mu.Lock()
			keys[s.ID] = key
			mu.Unlock()
			return inner(ctx, key)
		}
	}
	e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 4})
	recs, _ := journal.Read(path)
	for id, key := range keys {
		found := false
		for _, r := range recs {
			if r.ID == key && r.Step == id && r.Phase == "execute" && r.Status == journal.StepStarted {
				found = true
			}
		}
		if !found {
			t.Fatalf("key %s of %s is not the id of its started record", key, id)
		}
	}
	if recs[0].Status != journal.OpRunning || recs[len(recs)-1].Status != journal.OpSucceeded {
		t.Fatalf("op records: first %+v last %+v", recs[0], recs[len(recs)-1])
	}
}

func TestParallelismIsBounded(t *testing.T) {
	w := newWorld()
	var steps []*Step
	for i := 0; i < 20; i++ {
		steps = append(steps, w.step(fmt.Sprintf("r%02d", i), Compensate))
	}
	gate := make(chan struct{})
	var started sync.WaitGroup
	started.Add(3)
	var inflight, peak int
	var mu sync.Mutex
	for i, s := range steps {
		s.Execute = func(ctx context.Context, key string) error {
			mu.Lock()
			inflight++
			peak = max(peak, inflight)
			mu.Unlock()
			if i < 3 {
				started.Done()
				<-gate
			}
			mu.Lock()
			inflight--
			mu.Unlock()
			return nil
		}
		s.Verify = nil
	}
	go func() { started.Wait(); close(gate) }()
	e, _ := newEngine(t)
	res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 3})
	if res.Outcome != Succeeded {
		t.Fatal(res.Err)
	}
	if peak != 3 {
		t.Fatalf("peak parallelism %d, want 3 (3 independent steps must run at once, never more)", peak)
	}
}
