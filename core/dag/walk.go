package dag

import (
	"container/heap"
	"context"
	"sort"
	"sync"

	"github.com/bulwark-iac/bulwark/core/internal/stackhint"
)

// Visit decides what happens to one node during a Walk. It returns false to
// mark the node failed: nothing that depends on it is started.
type Visit func(ctx context.Context, node string) (ok bool)

// WalkResult says what a Walk did with each node.
type WalkResult struct {
	Done    []string // visited and ok, in completion order
	Failed  []string // visited and not ok, in completion order
	Blocked []string // not started: something they depend on failed or the walk stopped
}

// Walk visits every node of an acyclic graph, each after all its
// dependencies are done, at most parallelism at a time (at least one). When
// stop returns true (checked before each start) no further node starts; the
// ones running finish. Walk returns once nothing is running.
//
// Of the nodes ready to start, the one first in TopoOrder starts first. The
// cost is O((nodes + edges) log nodes) for the whole walk: each node keeps a
// count of the dependencies not yet done, and the nodes ready wait in a
// heap, so nothing is scanned again after each visit (a chain of 10,000
// would otherwise scan 10,000 nodes 10,000 times).
func (g *Graph) Walk(ctx context.Context, parallelism int, stop func() bool, visit Visit) WalkResult {
	if parallelism < 1 {
		parallelism = 1
	}
	order, _ := g.TopoOrder()
	const (
		pending = iota
		runningState
		okState
		badState
	)
	pos := make(map[string]int, len(order))
	for i, n := range order {
		pos[n] = i
	}
	var (
		mu        sync.Mutex
		cond      = sync.NewCond(&mu)
		state     = make(map[string]int, len(g.nodes))
		remaining = make(map[string]int, len(order)) // dependencies not done yet
		ready     = &Positions{}
		running   int
		res       WalkResult
	)
	for _, n := range order {
		remaining[n] = len(g.deps[n])
		if remaining[n] == 0 {
			ready.s = append(ready.s, pos[n])
		}
	}
	heap.Init(ready)
	// block marks n (pending) and everything pending that depends on it,
	// directly or not, as blocked, in TopoOrder.
	block := func(n string) {
		var found []string
		var walk func(string)
		walk = func(m string) {
			if state[m] != pending {
				return
			}
			state[m] = badState
			found = append(found, m)
			for d := range g.rdeps[m] {
				walk(d)
			}
		}
		walk(n)
		sort.Slice(found, func(i, j int) bool { return pos[found[i]] < pos[found[j]] })
		res.Blocked = append(res.Blocked, found...)
	}
	// The visits run on workers, at most parallelism of them, started as
	// needed and reused: a goroutine per node would grow a fresh stack for
	// each (a step's provider call and journal write go deep), copying it
	// every time it doubles. A worker whose visit ends starts what that
	// made ready itself, keeping the first for its own next visit: a node
	// whose only dependency just finished runs on at once, on the same
	// goroutine, with no handoff to the walk's caller and back (in a chain
	// of a thousand, two goroutine wakeups per node on the critical path).
	// The caller waits only for the walk's end.
	work := make(chan string, parallelism)
	idle := 0
	defer close(work)
	done := func(n string, ok bool) {
		running--
		if ok {
			state[n] = okState
			res.Done = append(res.Done, n)
			for m := range g.rdeps[n] {
				if state[m] != pending {
					continue
				}
				if remaining[m]--; remaining[m] == 0 {
					heap.Push(ready, pos[m])
				}
			}
		} else {
			state[n] = badState
			res.Failed = append(res.Failed, n)
			for m := range g.rdeps[n] {
				block(m)
			}
		}
	}
	// dispatch starts what is ready, in TopoOrder, up to parallelism
	// running; with keep, the first it starts is returned for the caller
	// (a worker) to visit itself. mu is held.
	var worker func()
	dispatch := func(keep bool) (next string, kept bool) {
		stopped := stop != nil && stop()
		for ready.Len() > 0 {
			if !stopped && (running >= parallelism || ctx.Err() != nil) {
				break
			}
			n := order[heap.Pop(ready).(int)]
			if state[n] != pending {
				continue // blocked since it became ready
			}
			if stopped {
				block(n)
				continue
			}
			state[n] = runningState
			running++
			switch {
			case keep && !kept:
				next, kept = n, true
				continue
			case idle > 0:
				idle--
			default:
				go worker()
			}
			work <- n // never blocks: at most parallelism are running
		}
		return next, kept
	}
	worker = func() {
		stackhint.Grow() // a visit goes deep (a step's provider call, its journal write)
		for n := range work {
			for {
				ok := visit(ctx, n)
				mu.Lock()
				done(n, ok)
				next, kept := dispatch(true)
				if !kept {
					idle++
					if running == 0 {
						cond.Broadcast() // the walk's end: its caller reports
					}
				}
				mu.Unlock()
				if !kept {
					break
				}
				n = next
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	dispatch(false)
	for running > 0 {
		cond.Wait()
	}
	// Whatever is still pending can never start (cancelled context, a stop
	// or a cycle): report it as blocked.
	for _, n := range order {
		if state[n] == pending {
			state[n] = badState
			res.Blocked = append(res.Blocked, n)
		}
	}
	var rest []string
	for n := range g.nodes {
		if state[n] == pending {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	res.Blocked = append(res.Blocked, rest...)
	return res
}

// Positions is a min-heap (container/heap) of positions in an order
// (TopoOrder's here; a rollback's CompensationOrder in package engine).
type Positions struct{ s []int }

func (h *Positions) Len() int           { return len(h.s) }
func (h *Positions) Less(i, j int) bool { return h.s[i] < h.s[j] }
func (h *Positions) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *Positions) Push(x any)         { h.s = append(h.s, x.(int)) }
func (h *Positions) Pop() any {
	n := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return n
}
