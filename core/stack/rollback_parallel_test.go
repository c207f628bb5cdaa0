package stack_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// undoSpan is one compensation as the journal records it: the positions
// of its "started" record and of its end record in the operation's records.
type undoSpan struct {
	step       string
	start, end int
	t0, t1     time.Time
}

// undoSpans reads the compensations of operation op from the journal of
// stack s, in the order they started.
func undoSpans(t *testing.T, e *env, op string) []undoSpan {
	t.Helper()
	var spans []undoSpan
	open := map[string]int{}
	n := 0
	for _, r := range journalIn(t, stack.StackDir(e.stateDir, "s")) {
		if r.Op != op {
			continue
		}
		n++
		if r.Kind != journal.KindStep || r.Phase != "compensate" {
			continue
		}
		if r.Status == journal.StepStarted {
			open[r.Step] = len(spans)
			spans = append(spans, undoSpan{step: r.Step, start: n, t0: r.Time})
			continue
		}
		i, ok := open[r.Step]
		if !ok {
			t.Fatalf("compensation of %s ended (%s) without a started record", r.Step, r.Status)
		}
		spans[i].end, spans[i].t1 = n, r.Time
		delete(open, r.Step)
	}
	if len(open) > 0 {
		t.Fatalf("compensations never ended: %v", open)
	}
	return spans
}

// mostAtOnce is the most compensations the journal shows in flight at
// once: started and not yet ended, by the records' order.
func mostAtOnce(spans []undoSpan) int {
	most := 0
	for _, a := range spans {
		at := 0
		for _, b := range spans {
			if b.start <= a.start && a.start < b.end {
				at++
			}
		}
		most = max(most, at)
	}
	return most
}

// A failed apply's rollback undoes independent resources side by side, up
// to --parallelism at once and never more: the first deletes wait until
// that many are in flight (a rollback one at a time never gets there, and
// fails the test at the deadline), and the journal's records of the
// compensations overlap, started before the others ended, in time too.
func TestRollbackCompensatesInParallel(t *testing.T) {
	for _, tc := range []struct{ n, parallelism int }{{12, 4}, {6, 10}, {5, 1}} {
		t.Run(fmt.Sprintf("%d independent, parallelism %d", tc.n, tc.parallelism), func(t *testing.T) {
			e := newEnv(t)
			var rs []res
			var made []string
			for i := range tc.n {
				name := fmt.Sprintf("r%02d", i)
				rs = append(rs, res{name: name, typ: "network"})
				made = append(made, name)
			}
			// The failing one depends on every other, so it fails once
			// they are all made, and the rollback has them all to undo.
			rs = append(rs, res{name: "last", typ: "generic", deps: made})
			want := min(tc.n, tc.parallelism)
			var (
				mu       sync.Mutex
				inFlight int
				most     int
				opened   bool
			)
			open := make(chan struct{})
			e.w.OnDelete(func(name string) {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				if inFlight >= want && !opened {
					opened = true
					close(open)
				}
				mu.Unlock()
				select {
				case <-open:
				case <-time.After(30 * time.Second):
					t.Errorf("the delete of %s waited 30s for %d deletes at once; at most %d were in flight", name, want, most)
					mu.Lock()
					if !opened {
						opened = true
						close(open)
					}
					mu.Unlock()
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
			})
			r, err := e.apply(mkSpec(t, rs...), simulate("last"), parallelism(tc.parallelism))
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != engine.Compensated {
				t.Fatalf("outcome %v: %v", r.Outcome, r.Err)
			}
			if got := sorted(names(e.w.Deletes())); !slices.Equal(got, made) {
				t.Fatalf("deleted %v, want %v", got, made)
			}
			if most != want {
				t.Errorf("at most %d deletes were in flight, want %d", most, want)
			}
			// The failed one's undo (nothing to delete) comes first, alone:
			// everything else waits for it.
			spans := undoSpans(t, e, r.Op)
			if len(spans) > 0 && spans[0].step == "last" {
				spans = spans[1:]
			}
			if len(spans) != tc.n {
				t.Fatalf("%d compensations journaled, want %d", len(spans), tc.n)
			}
			// A compensation's slot goes to the next one as its call
			// returns, while its end record is made durable: the records
			// may show more in flight than the calls were (under load an
			// end record can be written after the next two calls
			// returned), never fewer than the deletes that were. The
			// bound on the calls themselves is most, counted above at the
			// provider.
			if got := mostAtOnce(spans); got < want {
				t.Errorf("the journal shows at most %d compensations in flight at once, want at least %d", got, want)
			}
			if want > 1 {
				// The first to start ended after the last of its wave
				// started: their records' times overlap too.
				first := spans[0]
				for _, s := range spans[1:want] {
					if s.t0.After(first.t1) {
						t.Errorf("%s's compensation started at %v, after %s's ended at %v", s.step, s.t0, first.step, first.t1)
					}
				}
			}
			if len(e.state(t, "s").Resources) != 0 {
				t.Errorf("state after the rollback: %v", e.state(t, "s").Names())
			}
		})
	}
}

// A parallel rollback keeps reverse-dependency order: a resource's
// compensation starts only once every resource that depends on it has been
// compensated (its end record is before the start record), on a graph of
// chains, a fan-in and a fan-out, at several parallelisms.
func TestParallelRollbackKeepsReverseDependencyOrder(t *testing.T) {
	rs := []res{
		{name: "net", typ: "network"},
		{name: "sub-a", typ: "network", deps: []string{"net"}},
		{name: "sub-b", typ: "network", deps: []string{"net"}},
		{name: "sub-c", typ: "network", deps: []string{"net"}},
		{name: "vm-a", typ: "compute", deps: []string{"sub-a"}},
		{name: "vm-b", typ: "compute", deps: []string{"sub-b"}},
		{name: "vm-c", typ: "compute", deps: []string{"sub-c", "sub-a"}},
		{name: "lb", typ: "generic", deps: []string{"vm-a", "vm-b", "vm-c"}},
		{name: "other", typ: "generic"},
		{name: "other-2", typ: "generic", deps: []string{"other"}},
		{name: "last", typ: "generic", deps: []string{"lb", "other-2"}},
	}
	deps := depsOf(rs...)
	for _, p := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			e := newEnv(t)
			r, err := e.apply(mkSpec(t, rs...), simulate("last"), parallelism(p))
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != engine.Compensated {
				t.Fatalf("outcome %v: %v", r.Outcome, r.Err)
			}
			spans := undoSpans(t, e, r.Op)
			at := map[string]undoSpan{}
			for _, s := range spans {
				at[s.step] = s
			}
			for name, ds := range deps {
				for _, d := range ds {
					a, b := at[name], at[d]
					if a.step == "" || b.step == "" {
						continue // not undone (the failed one)
					}
					if b.start < a.end {
						t.Errorf("%s's compensation started (record %d) before that of %s, which depends on it, ended (record %d)", d, b.start, name, a.end)
					}
				}
			}
			if err := dependentsFirst(names(e.w.Deletes()), deps); err != nil {
				t.Error(err)
			}
			if len(e.state(t, "s").Resources) != 0 {
				t.Errorf("state after the rollback: %v", e.state(t, "s").Names())
			}
		})
	}
}

// An attacker's rollback: many durable and protected resources, each with
// ephemeral ones around it on both sides of the graph, a rollback at a
// parallelism that runs them all at once. Not one Delete names a durable
// or protected resource; each stays recorded (retained) and exists; every
// ephemeral one this run made is deleted.
func TestParallelRollbackNeverDeletesDurableOrProtected(t *testing.T) {
	var rs []res
	kept := map[string]bool{}
	var all []string
	for i := range 8 {
		prot := "durable"
		if i%2 == 1 {
			prot = "protected"
		}
		base := fmt.Sprintf("eph-below-%d", i)
		data := fmt.Sprintf("data-%d", i)
		above := fmt.Sprintf("eph-above-%d", i)
		rs = append(rs,
			res{name: base, typ: "network"},
			res{name: data, typ: "dynamodb_table", prot: prot, deps: []string{base}},
			res{name: above, typ: "compute", deps: []string{data}},
		)
		kept[data] = true
		all = append(all, above)
	}
	rs = append(rs, res{name: "last", typ: "generic", deps: all})
	for _, p := range []int{4, 64} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			e := newEnv(t)
			r, err := e.apply(mkSpec(t, rs...), simulate("last"), parallelism(p))
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != engine.Compensated {
				t.Fatalf("outcome %v: %v", r.Outcome, r.Err)
			}
			for _, d := range e.w.Deletes() {
				if kept[d.Name] {
					t.Errorf("the rollback deleted %s (%v)", d.Name, d.Protection)
				}
			}
			if got, want := len(e.w.Deletes()), 16; got != want {
				t.Errorf("%d deletes, want %d (every ephemeral one)", got, want)
			}
			st := e.state(t, "s")
			for name := range kept {
				if st.Resources[name] == nil {
					t.Errorf("%s is no longer recorded", name)
				}
				if e.w.ByName(name) == nil {
					t.Errorf("%s no longer exists", name)
				}
			}
			if len(st.Resources) != len(kept) {
				t.Errorf("recorded after the rollback: %v, want only the %d kept", st.Names(), len(kept))
			}
			if err := agree(st, e.w.Snapshot()); err != nil {
				t.Error(err)
			}
		})
	}
}
