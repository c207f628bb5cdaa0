package dag

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// trace records visits: the events in order ("start x", "end x") and the
// highest number of visits running at once.
type trace struct {
	mu     sync.Mutex
	events []string
	active int
	max    int
}

func (tr *trace) start(n string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, "start "+n)
	tr.active++
	if tr.active > tr.max {
		tr.max = tr.active
	}
}

func (tr *trace) end(n string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, "end "+n)
	tr.active--
}

func (tr *trace) index(ev string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for i, e := range tr.events {
		if e == ev {
			return i
		}
	}
	return -1
}

// fataler is what both *testing.T and *rapid.T offer.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkOrder fails when a node started before one of its dependencies ended.
func (tr *trace) checkOrder(t fataler, g *Graph) {
	t.Helper()
	for _, n := range g.Nodes() {
		s := tr.index("start " + n)
		if s < 0 {
			continue
		}
		for _, d := range g.DependsOn(n) {
			if e := tr.index("end " + d); e < 0 || e > s {
				t.Fatalf("%s started (event %d) before its dependency %s ended (event %d): %v", n, s, d, e, tr.events)
			}
		}
	}
}

// checkPartition fails unless every node is in exactly one of the result's lists.
func checkPartition(t fataler, g *Graph, res WalkResult) {
	t.Helper()
	seen := map[string]string{}
	for list, ns := range map[string][]string{"Done": res.Done, "Failed": res.Failed, "Blocked": res.Blocked} {
		for _, n := range ns {
			if prev, dup := seen[n]; dup {
				t.Fatalf("%s is in %s and in %s: %+v", n, prev, list, res)
			}
			if !g.Has(n) {
				t.Fatalf("%s in %s is not a node", n, list)
			}
			seen[n] = list
		}
	}
	if len(seen) != len(g.Nodes()) {
		t.Fatalf("result covers %d of %d nodes: %+v", len(seen), len(g.Nodes()), res)
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

func TestWalkResults(t *testing.T) {
	tests := []struct {
		name                  string
		g                     *Graph
		fail                  map[string]bool
		done, failed, blocked []string
	}{
		{"empty", New(), nil, nil, nil, nil},
		{"all ok", build("b>a", "c>b", "d"), nil, []string{"a", "b", "c", "d"}, nil, nil},
		{"failure blocks dependents transitively, independents run",
			build("b>a", "c>b", "x>y", "lone"), map[string]bool{"a": true},
			[]string{"lone", "x", "y"}, []string{"a"}, []string{"b", "c"}},
		{"failure in the middle", build("b>a", "c>b", "d>a"), map[string]bool{"b": true},
			[]string{"a", "d"}, []string{"b"}, []string{"c"}},
		{"one failed dependency of two blocks", build("c>a", "c>b"), map[string]bool{"b": true},
			[]string{"a"}, []string{"b"}, []string{"c"}},
		{"every leaf fails", build("c>a", "c>b"), map[string]bool{"a": true, "b": true},
			nil, []string{"a", "b"}, []string{"c"}},
		{"cycle nodes and what needs them are blocked", build("a>b", "b>a", "d>a", "c"), nil,
			[]string{"c"}, nil, []string{"a", "b", "d"}},
	}
	for _, tt := range tests {
		for _, par := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", tt.name, par), func(t *testing.T) {
				tr := &trace{}
				res := tt.g.Walk(context.Background(), par, nil, func(_ context.Context, n string) bool {
					tr.start(n)
					defer tr.end(n)
					return !tt.fail[n]
				})
				checkPartition(t, tt.g, res)
				tr.checkOrder(t, tt.g)
				opt := cmpopts.EquateEmpty()
				if diff := cmp.Diff(tt.done, sorted(res.Done), opt); diff != "" {
					t.Errorf("Done (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.failed, sorted(res.Failed), opt); diff != "" {
					t.Errorf("Failed (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.blocked, sorted(res.Blocked), opt); diff != "" {
					t.Errorf("Blocked (-want +got):\n%s", diff)
				}
				for _, b := range res.Blocked {
					if tr.index("start "+b) >= 0 {
						t.Errorf("blocked node %s was visited", b)
					}
				}
				if tr.max > par {
					t.Errorf("%d visits ran at once, parallelism %d", tr.max, par)
				}
			})
		}
	}
}

// Done lists nodes in completion order, so with parallelism 1 on a chain it
// is the dependency order.
func TestWalkDoneInCompletionOrder(t *testing.T) {
	g := build("b>a", "c>b", "d>c")
	res := g.Walk(context.Background(), 1, nil, func(context.Context, string) bool { return true })
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, res.Done); diff != "" {
		t.Errorf("Done (-want +got):\n%s", diff)
	}
}

// A node starts only after its dependency finished, even when the dependency
// is held open and parallelism would allow more; an independent node is not
// held up. synctest.Wait returns once every goroutine of the walk is blocked,
// so "b has not started" is a fact, not a guess after a delay.
func TestWalkWaitsForDependencies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := build("b>a", "c")
		tr := &trace{}
		release := make(chan struct{})
		done := make(chan WalkResult, 1)
		go func() {
			done <- g.Walk(context.Background(), 4, nil, func(_ context.Context, n string) bool {
				tr.start(n)
				defer tr.end(n)
				if n == "a" {
					<-release
				}
				return true
			})
		}()
		synctest.Wait() // a is held; the walk has started all it can
		if tr.index("end c") < 0 {
			t.Error("independent node c did not run while a was held")
		}
		if tr.index("start b") >= 0 {
			t.Error("b started while its dependency a was still running")
		}
		close(release)
		res := <-done
		tr.checkOrder(t, g)
		if diff := cmp.Diff([]string{"a", "b", "c"}, sorted(res.Done)); diff != "" {
			t.Errorf("Done (-want +got):\n%s", diff)
		}
	})
}

// At most parallelism visits run at once, and exactly that many do when
// enough nodes are ready. Every visit is held on a gate; synctest.Wait tells
// when the walk can start nothing more, and then the running visits are
// counted. One visit is released at a time until all have run.
func TestWalkBoundedParallelism(t *testing.T) {
	for _, tc := range []struct{ par, nodes, want int }{{1, 5, 1}, {2, 6, 2}, {3, 3, 3}, {0, 3, 1}, {-4, 3, 1}, {8, 3, 3}, {3, 7, 3}} {
		t.Run(fmt.Sprintf("p%d_n%d", tc.par, tc.nodes), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := New()
				for i := 0; i < tc.nodes; i++ {
					g.Add(fmt.Sprintf("n%d", i))
				}
				var mu sync.Mutex
				running := map[string]chan struct{}{}
				open := false // once the test failed, nothing waits
				done := make(chan WalkResult, 1)
				go func() {
					done <- g.Walk(context.Background(), tc.par, nil, func(_ context.Context, n string) bool {
						gate := make(chan struct{})
						mu.Lock()
						running[n] = gate
						if open {
							close(gate)
						}
						mu.Unlock()
						<-gate
						mu.Lock()
						delete(running, n)
						mu.Unlock()
						return true
					})
				}()
				for finished := 0; finished < tc.nodes; finished++ {
					synctest.Wait()
					mu.Lock()
					now := len(running)
					var next string
					for n := range running {
						if next == "" || n < next {
							next = n
						}
					}
					gate := running[next]
					mu.Unlock()
					want := min(tc.want, tc.nodes-finished)
					if now != want {
						t.Errorf("after %d finished: %d visits running at once, want %d", finished, now, want)
						mu.Lock()
						open = true
						for _, g := range running {
							close(g)
						}
						mu.Unlock()
						<-done
						return
					}
					close(gate)
				}
				res := <-done
				if len(res.Done) != tc.nodes {
					t.Errorf("Done %v", res.Done)
				}
			})
		})
	}
}

// stop is checked before each start: once it says so, nothing new starts,
// the running visits finish, and the rest is Blocked.
func TestWalkStop(t *testing.T) {
	tests := []struct {
		name      string
		g         *Graph
		stopAfter int // stop once this many visits ended
		par       int
		done      []string
		blocked   []string
	}{
		{"stop at once", build("b>a", "c"), 0, 1, nil, []string{"a", "b", "c"}},
		{"stop after the first of a chain", build("b>a", "c>b"), 1, 1, []string{"a"}, []string{"b", "c"}},
		{"stop after two of four independent, one at a time", build("a", "b", "c", "d"), 2, 1, []string{"a", "b"}, []string{"c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ended atomic.Int32
			var started []string
			var mu sync.Mutex
			res := tt.g.Walk(context.Background(), tt.par, func() bool { return int(ended.Load()) >= tt.stopAfter }, func(_ context.Context, n string) bool {
				mu.Lock()
				started = append(started, n)
				mu.Unlock()
				ended.Add(1)
				return true
			})
			checkPartition(t, tt.g, res)
			if diff := cmp.Diff(tt.done, sorted(res.Done), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Done (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.blocked, sorted(res.Blocked), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Blocked (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.done, sorted(started), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("visited (-want +got):\n%s", diff)
			}
		})
	}
}

// A visit running when stop turns true finishes and is reported.
func TestWalkStopLetsRunningFinish(t *testing.T) {
	g := build("a", "b", "c")
	var stop atomic.Bool
	inA, inB := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	done := make(chan WalkResult, 1)
	go func() {
		done <- g.Walk(context.Background(), 2, stop.Load, func(_ context.Context, n string) bool {
			switch n {
			case "a":
				close(inA)
			case "b":
				close(inB)
			}
			<-release
			return n != "b"
		})
	}()
	<-inA
	<-inB
	stop.Store(true)
	close(release)
	res := <-done
	if diff := cmp.Diff([]string{"a"}, res.Done); diff != "" {
		t.Errorf("Done (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b"}, res.Failed); diff != "" {
		t.Errorf("Failed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c"}, res.Blocked); diff != "" {
		t.Errorf("Blocked (-want +got):\n%s", diff)
	}
}

func TestWalkCancelledContext(t *testing.T) {
	t.Run("before the walk", func(t *testing.T) {
		g := build("b>a", "c")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		visited := false
		res := g.Walk(ctx, 2, nil, func(context.Context, string) bool { visited = true; return true })
		if visited {
			t.Error("a node was visited under a cancelled context")
		}
		checkPartition(t, g, res)
		if diff := cmp.Diff([]string{"a", "b", "c"}, sorted(res.Blocked)); diff != "" {
			t.Errorf("Blocked (-want +got):\n%s", diff)
		}
	})
	t.Run("during the walk", func(t *testing.T) {
		g := build("b>a", "c>b")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var visits []string
		res := g.Walk(ctx, 1, nil, func(vctx context.Context, n string) bool {
			visits = append(visits, n)
			if n == "a" {
				cancel()
				if vctx.Err() == nil {
					t.Error("visit does not see the walk's context")
				}
			}
			return true
		})
		checkPartition(t, g, res)
		if diff := cmp.Diff([]string{"a"}, visits); diff != "" {
			t.Errorf("visits (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"b", "c"}, sorted(res.Blocked)); diff != "" {
			t.Errorf("Blocked (-want +got):\n%s", diff)
		}
	})
}

// Property: on random DAGs with random failures and parallelism, every node
// ends in exactly one list, nothing starts before its dependencies ended,
// a node is visited iff none of its ancestors failed, parallelism is never
// exceeded, and the failures are exactly the failing nodes visited.
func TestWalkProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 14).Draw(rt, "nodes")
		g := New()
		name := func(i int) string { return fmt.Sprintf("n%02d", i) }
		for i := 0; i < n; i++ {
			g.Add(name(i))
			for j := 0; j < i; j++ { // edges only to lower indices: acyclic
				if rapid.IntRange(0, 3).Draw(rt, "edge") == 0 {
					g.Connect(name(i), name(j))
				}
			}
		}
		fail := map[string]bool{}
		for i := 0; i < n; i++ {
			fail[name(i)] = rapid.IntRange(0, 5).Draw(rt, "fail") == 0
		}
		par := rapid.IntRange(1, 5).Draw(rt, "parallelism")

		tr := &trace{}
		res := g.Walk(context.Background(), par, nil, func(_ context.Context, n string) bool {
			tr.start(n)
			defer tr.end(n)
			return !fail[n]
		})
		checkPartition(rt, g, res)
		tr.checkOrder(rt, g)
		if tr.max > par {
			rt.Fatalf("%d visits at once, parallelism %d", tr.max, par)
		}
		// What must be blocked: a node with a failed or blocked dependency.
		order, _ := g.TopoOrder()
		bad := map[string]bool{}
		var wantDone, wantFailed, wantBlocked []string
		for _, n := range order {
			blocked := false
			for _, d := range g.DependsOn(n) {
				blocked = blocked || bad[d]
			}
			switch {
			case blocked:
				bad[n] = true
				wantBlocked = append(wantBlocked, n)
			case fail[n]:
				bad[n] = true
				wantFailed = append(wantFailed, n)
			default:
				wantDone = append(wantDone, n)
			}
		}
		opt := cmpopts.EquateEmpty()
		if diff := cmp.Diff(sorted(wantDone), sorted(res.Done), opt); diff != "" {
			rt.Fatalf("Done (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(sorted(wantFailed), sorted(res.Failed), opt); diff != "" {
			rt.Fatalf("Failed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(sorted(wantBlocked), sorted(res.Blocked), opt); diff != "" {
			rt.Fatalf("Blocked (-want +got):\n%s", diff)
		}
		for _, n := range append(append([]string(nil), res.Done...), res.Failed...) {
			if tr.index("end "+n) < 0 {
				rt.Fatalf("%s reported but never ended", n)
			}
		}
	})
}

// Many walks with real concurrency, so the race detector sees them.
func TestWalkRepeatedRandom(t *testing.T) {
	const runs = 200
	for r := 0; r < runs; r++ {
		g := New()
		n := 3 + r%12
		for i := 0; i < n; i++ {
			g.Add(fmt.Sprintf("n%d", i))
			for j := 0; j < i; j++ {
				if (i*31+j*17+r)%4 == 0 {
					g.Connect(fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", j))
				}
			}
		}
		tr := &trace{}
		par := 1 + r%4
		res := g.Walk(context.Background(), par, nil, func(_ context.Context, n string) bool {
			tr.start(n)
			defer tr.end(n)
			sum := r
			for _, c := range n {
				sum += int(c) * 7
			}
			return sum%6 != 0 // about one node in six fails
		})
		checkPartition(t, g, res)
		tr.checkOrder(t, g)
		if tr.max > par {
			t.Fatalf("run %d: %d visits at once, parallelism %d", r, tr.max, par)
		}
	}
}

// goroutineID is the id runtime.Stack names the calling goroutine by.
func goroutineID() string {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	id, _, _ := strings.Cut(strings.TrimPrefix(s, "goroutine "), " ")
	return id
}

// The visits run on at most parallelism goroutines, reused from node to
// node (a goroutine per node grows a fresh stack each time), and none is
// left running once Walk returns.
func TestWalkReusesWorkers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		par, nodes int
		chain      bool
	}{
		{"flat", 4, 200, false},
		{"chain", 4, 50, true},
		{"more workers than nodes", 16, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := New()
				for i := 0; i < tc.nodes; i++ {
					g.Add(fmt.Sprintf("n%d", i))
					if tc.chain && i > 0 {
						g.Connect(fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i-1))
					}
				}
				var mu sync.Mutex
				ids := map[string]bool{}
				res := g.Walk(context.Background(), tc.par, nil, func(context.Context, string) bool {
					mu.Lock()
					ids[goroutineID()] = true
					mu.Unlock()
					return true
				})
				if len(res.Done) != tc.nodes {
					t.Fatalf("%d done, want %d", len(res.Done), tc.nodes)
				}
				if len(ids) > tc.par {
					t.Errorf("visits ran on %d goroutines, want at most %d", len(ids), tc.par)
				}
				synctest.Wait() // every worker has exited: synctest fails on one left blocked
			})
		})
	}
}

// A worker whose visit ends starts what that made ready itself: in a chain
// every node after the first is dispatched (stop is checked before its
// start) on the goroutine that visited its dependency and then visits it,
// with no handoff to Walk's caller and back between two nodes.
func TestWalkChainRunsOnWithoutHandoff(t *testing.T) {
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprint(par), func(t *testing.T) {
			g := New()
			const nodes = 20
			for i := 0; i < nodes; i++ {
				g.Add(fmt.Sprintf("n%02d", i))
				if i > 0 {
					g.Connect(fmt.Sprintf("n%02d", i), fmt.Sprintf("n%02d", i-1))
				}
			}
			caller := goroutineID()
			var mu sync.Mutex
			var stops, visits []string
			res := g.Walk(context.Background(), par, func() bool {
				mu.Lock()
				stops = append(stops, goroutineID())
				mu.Unlock()
				return false
			}, func(_ context.Context, n string) bool {
				mu.Lock()
				visits = append(visits, goroutineID())
				mu.Unlock()
				return true
			})
			if len(res.Done) != nodes {
				t.Fatalf("%d done, want %d", len(res.Done), nodes)
			}
			// The first start is the caller's; each later one is checked
			// by the worker that just ended the node before it.
			if len(stops) < nodes || stops[0] != caller {
				t.Fatalf("stop checked %d times, first on %s (caller %s)", len(stops), stops[0], caller)
			}
			for i := 1; i < nodes; i++ {
				if stops[i] != visits[i-1] || visits[i] != visits[i-1] {
					t.Errorf("node %d: started from goroutine %s, visited on %s, its dependency on %s", i, stops[i], visits[i], visits[i-1])
				}
			}
		})
	}
}

// A worker whose visit ends dispatches what that made ready only after
// asking stop: once stop says so (turned by the visit ending or by anyone
// while it ran, such as an interrupt), nothing that became ready then is
// visited, whatever the parallelism; it is reported Blocked.
func TestWalkWorkerDispatchAsksStop(t *testing.T) {
	tests := []struct {
		name    string
		g       *Graph
		stopIn  string // stop turns true while this node's visit runs
		waitFor string // which, if set, ends only once this one's visit stopped the walk
		done    []string
		blocked []string
	}{
		{"a chain", build("b>a", "c>b", "d>c"), "b", "", []string{"a", "b"}, []string{"c", "d"}},
		{"a fan-out from the stopping node", build("b>a", "c>a", "d>a", "e>d"), "a", "", []string{"a"}, []string{"b", "c", "d", "e"}},
		{"a diamond", build("b>a", "c>a", "d>b", "d>c"), "a", "", []string{"a"}, []string{"b", "c", "d"}},
		{"stopped by another visit while it ran", build("a2>a", "a3>a2", "b"), "b", "a", []string{"a", "b"}, []string{"a2", "a3"}},
	}
	for _, tt := range tests {
		for _, par := range []int{1, 2, 10} {
			if tt.waitFor != "" && par < 2 {
				continue // the two visits must run at once
			}
			t.Run(fmt.Sprintf("%s/%d", tt.name, par), func(t *testing.T) {
				var stop atomic.Bool
				stopped := make(chan struct{})
				// With waitFor, its visit begins before stopIn's stops the
				// walk: else the walk may hand it to a worker just before
				// the stop and the visit run just after, which is no
				// visit started after the stop, only one the test saw late.
				begun := make(chan struct{})
				var mu sync.Mutex
				var visited []string
				res := tt.g.Walk(context.Background(), par, stop.Load, func(_ context.Context, n string) bool {
					mu.Lock()
					if stop.Load() {
						t.Errorf("%s visited after the walk was stopped", n)
					}
					visited = append(visited, n)
					mu.Unlock()
					switch n {
					case tt.stopIn:
						if tt.waitFor != "" {
							<-begun
						}
						stop.Store(true)
						close(stopped)
					case tt.waitFor:
						close(begun)
						<-stopped
					}
					return true
				})
				checkPartition(t, tt.g, res)
				if diff := cmp.Diff(tt.done, sorted(visited)); diff != "" {
					t.Errorf("visited (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.done, sorted(res.Done)); diff != "" {
					t.Errorf("Done (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.blocked, sorted(res.Blocked)); diff != "" {
					t.Errorf("Blocked (-want +got):\n%s", diff)
				}
			})
		}
	}
}
