package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// delWorld is what a teardown's delete steps act on: every name exists
// until its Delete removes it, except a kept one, whose Delete answers ok
// and removes nothing (so its Verify fails).
type delWorld struct {
	mu     sync.Mutex
	exists map[string]bool
	keep   map[string]bool
	calls  []string
}

func newDelWorld(names ...string) *delWorld {
	w := &delWorld{exists: map[string]bool{}, keep: map[string]bool{}}
	for _, n := range names {
		w.exists[n] = true
	}
	return w
}

func (w *delWorld) called(call string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.calls, call)
}

func (w *delWorld) there(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.exists[name]
}

// step is a teardown's delete of name after deps (its dependents, deleted
// first): policy Continue, its start journaled with its Check, as the
// stack makes them; early says whether it may delete early.
func (w *delWorld) step(name string, early bool, deps ...string) *Step {
	return &Step{ID: name, Resource: name, Action: "delete", DependsOn: deps, Policy: Continue,
		StartWithCheck: true, EarlyDelete: early,
		Check: func(context.Context) (bool, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.calls = append(w.calls, "check "+name)
			return !w.exists[name], nil
		},
		Execute: func(context.Context, string) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.calls = append(w.calls, "delete "+name)
			if !w.keep[name] {
				delete(w.exists, name)
			}
			return nil
		},
		Verify: func(context.Context) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.exists[name] {
				return fmt.Errorf("%s still exists after delete", name)
			}
			return nil
		},
	}
}

// await waits for ch, failing the test at the deadline (and going on).
func await(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Errorf("gave up waiting: %s", what)
	}
}

// stepRecords are the journal's records of step id (phase status), the
// starts a "not_sent" ended left out.
func stepRecords(t *testing.T, path, id string) []string {
	t.Helper()
	recs, err := journal.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range journal.Sent(recs) {
		if r.Kind == journal.KindStep && r.Step == id {
			out = append(out, r.Phase+" "+r.Status)
		}
	}
	return out
}

// A step that may delete early begins (its Check reads) once its
// dependency's Delete has returned and its "execute ok" is durable, never
// while that Delete is in flight (the Check is the ownership read that
// decides its own Delete), and sends its Delete without waiting for the
// dependency's Verify. Every step is journaled as without it.
func TestEarlyDeleteBeginsOnceTheCallReturned(t *testing.T) {
	w := newDelWorld("a", "b")
	e, path := newEngine(t)
	a, b := w.step("a", false), w.step("b", true, "a")
	bChecked, bDeleted := make(chan struct{}), make(chan struct{})
	check := b.Check
	b.Check = func(ctx context.Context) (bool, error) {
		defer close(bChecked)
		if w.there("a") {
			t.Error("b's Check read before a's Delete returned")
		}
		if got := stepRecords(t, path, "a"); !slices.Contains(got, "execute ok") {
			t.Errorf("b's Check read before a's execute ok was durable (a: %v)", got)
		}
		return check(ctx)
	}
	del := a.Execute
	a.Execute = func(ctx context.Context, key string) error {
		err := del(ctx, key)
		select {
		case <-bChecked:
			t.Error("b's Check read while a's Delete was in flight")
		default:
		}
		return err
	}
	delB := b.Execute
	b.Execute = func(ctx context.Context, key string) error {
		defer close(bDeleted)
		return delB(ctx, key)
	}
	verify := a.Verify
	a.Verify = func(ctx context.Context) error {
		await(t, "b's Delete while a's Verify reads", bDeleted)
		return verify(ctx)
	}
	res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "teardown", Steps: []*Step{a, b}, Parallelism: 4})
	if res.Outcome != Succeeded {
		t.Fatalf("outcome %v, want succeeded (%v)", res.Outcome, res.Err)
	}
	if !slices.Equal(sorted(res.Done), []string{"a", "b"}) {
		t.Errorf("done %v, want a and b", res.Done)
	}
	for _, id := range []string{"a", "b"} {
		if got, want := stepRecords(t, path, id), []string{"execute started", "execute ok", "verify ok"}; !slices.Equal(got, want) {
			t.Errorf("%s journaled %v, want %v", id, got, want)
		}
	}
}

// A dependency's Verify that finds it still there halts the run: the early
// Delete already sent finishes and is recorded; a step that waits for
// verified (a durable resource below) never starts its work, nor does an
// independent step that reaches its call after the failure; the dependency
// fails, and the operation ends Failed.
func TestEarlyDeleteFailedVerifyHalts(t *testing.T) {
	w := newDelWorld("a", "b", "c", "z")
	w.keep["a"] = true
	e, path := newEngine(t)
	a := w.step("a", false)
	b := w.step("b", true, "a")  // ephemeral: deletes early
	c := w.step("c", false, "b") // durable below: waits for verified
	z := w.step("z", false)      // independent
	bVerified, cChecked, aFailed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	verifyB := b.Verify
	b.Verify = func(ctx context.Context) error {
		defer close(bVerified)
		return verifyB(ctx)
	}
	checkC := c.Check
	c.Check = func(ctx context.Context) (bool, error) {
		defer close(cChecked)
		return checkC(ctx)
	}
	verifyA := a.Verify
	a.Verify = func(ctx context.Context) error {
		// b is deleted and verified gone, c past its Check and at its
		// gate: only a's verification still holds c back.
		await(t, "b verified", bVerified)
		await(t, "c checked", cChecked)
		return verifyA(ctx)
	}
	// Its failure is observed once the run is halted.
	e.Observer = ObserverFunc(func(ev Event) {
		if ev.Step == "a" && ev.Action == "verify" && ev.Status == journal.StepFailed {
			close(aFailed)
		}
	})
	checkZ := z.Check
	z.Check = func(ctx context.Context) (bool, error) {
		await(t, "a's Verify failed", aFailed)
		return checkZ(ctx)
	}
	res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "teardown", Steps: []*Step{a, b, c, z}, Parallelism: 4})
	if res.Outcome != Failed {
		t.Fatalf("outcome %v, want failed (%v)", res.Outcome, res.Err)
	}
	if !slices.Equal(res.Failed, []string{"a"}) || res.Err == nil || !errors.Is(res.Err, res.Errors["a"]) {
		t.Errorf("failed %v (%v), want a alone", res.Failed, res.Err)
	}
	if !slices.Equal(res.Done, []string{"b"}) {
		t.Errorf("done %v, want b (its early Delete finished and was verified)", res.Done)
	}
	if !slices.Equal(sorted(res.Blocked), []string{"c", "z"}) {
		t.Errorf("blocked %v, want c and z", res.Blocked)
	}
	for _, name := range []string{"c", "z"} {
		if w.called("delete "+name) || !w.there(name) {
			t.Errorf("%s was deleted after a's Verify failed", name)
		}
	}
	want := map[string][]string{
		"a": {"execute started", "execute ok", "verify failed"},
		"b": {"execute started", "execute ok", "verify ok"},
		"c": nil,
		"z": nil, // its start, journaled with its Check, was ended not_sent
	}
	for id, recs := range want {
		if got := stepRecords(t, path, id); !slices.Equal(got, recs) {
			t.Errorf("%s journaled %v, want %v", id, got, recs)
		}
	}
}

// Where the dependency's failed Verify would not halt the run (it needs a
// person, or its failure rolls the run back), or the step itself may not
// delete early (not asked, or not policy Continue, or needs a person), the
// step waits for the dependency's Verify: its failure means the step never
// starts its work.
func TestEarlyDeleteWaitsWhereItMayNot(t *testing.T) {
	for _, tc := range []struct {
		name string
		dep  func(*Step)
		step func(*Step)
	}{
		{"dependency intervention", func(s *Step) { s.Intervention = true }, nil},
		{"dependency compensate", func(s *Step) { s.Policy = Compensate }, nil},
		{"step not early", nil, func(s *Step) { s.EarlyDelete = false }},
		{"step abort", nil, func(s *Step) { s.Policy = Abort }},
		{"step compensate", nil, func(s *Step) { s.Policy = Compensate }},
		{"step intervention", nil, func(s *Step) { s.Intervention = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newDelWorld("a", "b")
			w.keep["a"] = true
			e, _ := newEngine(t)
			a, b := w.step("a", false), w.step("b", true, "a")
			if tc.dep != nil {
				tc.dep(a)
			}
			if tc.step != nil {
				tc.step(b)
			}
			// a's Verify fails once b has checked: b is then past its
			// Check and at its gate, where an early delete would go on.
			checked := make(chan struct{})
			check := b.Check
			b.Check = func(ctx context.Context) (bool, error) {
				defer close(checked)
				return check(ctx)
			}
			verify := a.Verify
			a.Verify = func(ctx context.Context) error {
				await(t, "b checked", checked)
				return verify(ctx)
			}
			res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "teardown", Steps: []*Step{a, b}, Parallelism: 4})
			if res.Outcome == Succeeded {
				t.Errorf("outcome %v, want a's failure", res.Outcome)
			}
			if w.called("delete b") {
				t.Errorf("b deleted before a was verified gone: %v", w.calls)
			}
		})
	}
}

// A step counts as verified only once every step it depends on is: with
// its own end known and a dependency (deleted early before it) still
// verifying, its gate stays closed, so a step that waits for verified (a
// durable resource below) does not start; it opens with the dependency,
// ok only if that one is.
func TestGateCountsVerifiedOnlyOnceWhatItDependsOnIs(t *testing.T) {
	for _, depOK := range []bool{true, false} {
		t.Run(fmt.Sprintf("dependency ok %v", depOK), func(t *testing.T) {
			ga := &gate{done: make(chan struct{}), executed: make(chan struct{}), halts: true}
			gb := &gate{done: make(chan struct{}), executed: make(chan struct{}), halts: false}
			close(ga.executed) // a deleted, its Verify still reading
			sl := stepSlots{gates: map[string]*gate{"a": ga, "b": gb}}
			b := &Step{ID: "b", DependsOn: []string{"a"}, Policy: Continue, EarlyDelete: true}
			c := &Step{ID: "c", DependsOn: []string{"b"}, Policy: Continue} // durable: waits for verified
			if !sl.verified(context.Background(), b) {
				t.Fatal("b not ready on a's execute ok")
			}
			close(gb.executed)
			sl.openGate(b, true) // b verified gone, a not yet
			select {
			case <-gb.done:
				t.Fatal("b counted verified while a, which depends on it, still verifies")
			default:
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if sl.verified(ctx, c) {
				t.Fatal("c went on with a unverified")
			}
			ga.open(depOK)
			await(t, "b's gate once a's opened", gb.done)
			if gb.ok != depOK {
				t.Errorf("b's gate ok %v, want %v (a's)", gb.ok, depOK)
			}
			if got := sl.verified(context.Background(), c); got != depOK {
				t.Errorf("c ready %v once a ended ok=%v", got, depOK)
			}
		})
	}
}

// Which dependencies a step that deletes early waits for only until they
// executed, and which steps the engine lets delete early.
func TestEarlyDeleteWhereAllowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Step
		want bool
	}{
		{"continue", Step{Policy: Continue}, true},
		{"abort", Step{Policy: Abort}, true},
		{"compensate", Step{Policy: Compensate}, false},
		{"intervention", Step{Policy: Continue, Intervention: true}, false},
		{"cleanup", Step{Policy: Continue, Cleanup: true}, false},
	} {
		if got := haltsOnVerify(&tc.s); got != tc.want {
			t.Errorf("haltsOnVerify(%s) = %v, want %v", tc.name, got, tc.want)
		}
		tc.s.EarlyDelete = true
		if got, want := deletesEarly(&tc.s), tc.s.Policy == Continue && !tc.s.Intervention; got != want {
			t.Errorf("deletesEarly(%s) = %v, want %v", tc.name, got, want)
		}
	}
}
