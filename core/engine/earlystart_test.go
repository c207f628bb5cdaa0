package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// earlyPair is a (Compensate, with a Verify the test holds) and b, which
// depends on a and may start early, on world w. a's Verify returns
// verifyErr once b's Execute has run, or fails the test at the deadline:
// b must not need a verified to start its work.
func earlyPair(t *testing.T, w *world, verifyErr error) (a, b *Step) {
	t.Helper()
	a = w.step("a", Compensate)
	b = w.step("b", Compensate, "a")
	b.EarlyStart = true
	bRan := make(chan struct{})
	exec := b.Execute
	b.Execute = func(ctx context.Context, key string) error {
		defer close(bRan)
		return exec(ctx, key)
	}
	verify := a.Verify
	a.Verify = func(ctx context.Context) error {
		select {
		case <-bRan:
		case <-time.After(10 * time.Second):
			t.Error("b did not start its work while a's Verify ran")
		}
		if verifyErr != nil {
			return verifyErr
		}
		return verify(ctx)
	}
	return a, b
}

// A step that may start early runs its Execute while the Verify of what it
// depends on still reads.
func TestEarlyStartRunsBesideItsDependencysVerify(t *testing.T) {
	w := newWorld()
	e, _ := newEngine(t)
	a, b := earlyPair(t, w, nil)
	res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "apply", Steps: []*Step{a, b}, Parallelism: 4})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v, want succeeded (%v)", res.Outcome, res.Err)
	}
	if !slices.Equal(sorted(res.Done), []string{"a", "b"}) {
		t.Errorf("done %v, want a and b", res.Done)
	}
}

// When the dependency's Verify then fails, the run halts and the early
// dependent is compensated with it, dependents first; a step that waits
// for verified never starts.
func TestEarlyStartIsCompensatedWhenTheVerifyFails(t *testing.T) {
	w := newWorld()
	e, _ := newEngine(t)
	a, b := earlyPair(t, w, errors.New("a drifted"))
	c := w.step("c", Compensate, "a") // waits for a verified
	res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "apply", Steps: []*Step{a, b, c}, Parallelism: 4})
	if res.Outcome != Compensated {
		t.Fatalf("outcome %v, want compensated (%v)", res.Outcome, res.Err)
	}
	if !slices.Equal(res.Failed, []string{"a"}) || res.Err == nil || !strings.Contains(res.Err.Error(), "a drifted") {
		t.Errorf("failed %v, error %v: want a's verify reported", res.Failed, res.Err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.exists) != 0 {
		t.Errorf("left behind: %v", w.exists)
	}
	if slices.Contains(w.calls, "create c") {
		t.Errorf("c started on an unverified dependency: %v", w.calls)
	}
	ib, ia := slices.Index(w.calls, "delete b"), slices.Index(w.calls, "delete a")
	if ib < 0 || ia < 0 || ib > ia {
		t.Errorf("calls %v: want b deleted, then a", w.calls)
	}
}

// Where the dependency's failure would not roll the run back (Continue,
// Abort, Intervention), or the step itself may not start early, the step
// waits for the dependency's Verify: its failure means the step never
// starts its work.
func TestEarlyStartWaitsWhereNothingWouldUndoIt(t *testing.T) {
	for _, tc := range []struct {
		name       string
		dep        func(*Step)
		step       func(*Step)
		wantResult Outcome
	}{
		{"dependency continue", func(s *Step) { s.Policy = Continue }, nil, Failed},
		{"dependency abort", func(s *Step) { s.Policy = Abort }, nil, Failed},
		{"dependency intervention", func(s *Step) { s.Intervention = true }, nil, NeedsIntervention},
		{"step not early", nil, func(s *Step) { s.EarlyStart = false }, Compensated},
		{"step continue", nil, func(s *Step) { s.Policy = Continue }, Compensated},
		{"step intervention", nil, func(s *Step) { s.Intervention = true }, Compensated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			e, _ := newEngine(t)
			a := w.step("a", Compensate)
			b := w.step("b", Compensate, "a")
			b.EarlyStart = true
			if tc.dep != nil {
				tc.dep(a)
			}
			if tc.step != nil {
				tc.step(b)
			}
			// a's Verify fails once b has checked: b is then past its
			// Check and at its gate, where an early start would go on.
			checked := make(chan struct{})
			check := b.Check
			b.Check = func(ctx context.Context) (bool, error) {
				defer close(checked)
				return check(ctx)
			}
			a.Verify = func(context.Context) error {
				select {
				case <-checked:
				case <-time.After(10 * time.Second):
					t.Error("b never checked")
				}
				return errors.New("a drifted")
			}
			res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "apply", Steps: []*Step{a, b}, Parallelism: 4})
			if res.Outcome != tc.wantResult {
				t.Errorf("outcome %v, want %v (%v)", res.Outcome, tc.wantResult, res.Err)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if slices.Contains(w.calls, "create b") {
				t.Errorf("b started before a was verified: %v", w.calls)
			}
		})
	}
}

// The gate itself, without the race of a run: with its dependency executed
// and its Verify still reading, an early step goes on at once, and any
// other waits (here until its context ends, so it reports not ready).
func TestGateWaitsForExecutedOnlyWhereAllowed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		depUndoes bool
		early     bool
		policy    FailurePolicy
		interv    bool
		wantEarly bool
	}{
		{"early on a compensating dependency", true, true, Compensate, false, true},
		{"not early", true, false, Compensate, false, false},
		{"dependency does not undo", false, true, Compensate, false, false},
		{"step continue", true, true, Continue, false, false},
		{"step abort", true, true, Abort, false, false},
		{"step intervention", true, true, Compensate, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gate{done: make(chan struct{}), executed: make(chan struct{}), undoes: tc.depUndoes}
			close(g.executed) // executed, Verify still reading: done stays open
			sl := stepSlots{gates: map[string]*gate{"a": g}}
			s := &Step{ID: "b", DependsOn: []string{"a"}, EarlyStart: tc.early, Policy: tc.policy, Intervention: tc.interv}
			if tc.wantEarly {
				got := make(chan bool, 1)
				go func() { got <- sl.verified(context.Background(), s) }()
				select {
				case ok := <-got:
					if !ok {
						t.Error("not ready on an executed dependency")
					}
				case <-time.After(10 * time.Second):
					t.Fatal("still waiting on an executed dependency")
				}
				return
			}
			// Waiting for done, which never comes: only the ended context
			// lets it go, and it then says not ready.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if sl.verified(ctx, s) {
				t.Error("went on with its dependency executed, not verified")
			}
		})
	}
}

// A dependency that already ended decides, early or not: a failed one
// stops the step even though it had executed.
func TestGateEndedDependencyDecides(t *testing.T) {
	g := &gate{done: make(chan struct{}), executed: make(chan struct{}), undoes: true}
	close(g.executed)
	g.open(false)
	sl := stepSlots{gates: map[string]*gate{"a": g}}
	s := &Step{ID: "b", DependsOn: []string{"a"}, EarlyStart: true}
	for range 100 { // a select between two ready cases would pick either
		if sl.verified(context.Background(), s) {
			t.Fatal("went on after its dependency failed")
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
