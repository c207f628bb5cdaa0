package dag

import (
	"context"
	"sync"
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
func (g *Graph) Walk(ctx context.Context, parallelism int, stop func() bool, visit Visit) WalkResult {
	if parallelism < 1 {
		parallelism = 1
	}
	order, _ := g.TopoOrder()
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		state   = map[string]int{} // 0 pending, 1 running, 2 ok, 3 failed/blocked
		running int
		res     WalkResult
	)
	const (
		pending = iota
		runningState
		okState
		badState
	)
	blockedBy := func(n string) (ready, blocked bool) {
		ready = true
		for _, d := range g.DependsOn(n) {
			switch state[d] {
			case okState:
			case badState:
				return false, true
			default:
				ready = false
			}
		}
		return ready, false
	}
	mu.Lock()
	defer mu.Unlock()
	for {
		progressed := false
		stopped := stop != nil && stop()
		for _, n := range order {
			if state[n] != pending {
				continue
			}
			ready, blocked := blockedBy(n)
			if blocked || (stopped && ready) {
				state[n] = badState
				res.Blocked = append(res.Blocked, n)
				progressed = true
				continue
			}
			if !ready || running >= parallelism || ctx.Err() != nil {
				continue
			}
			state[n] = runningState
			running++
			progressed = true
			go func(n string) {
				ok := visit(ctx, n)
				mu.Lock()
				running--
				if ok {
					state[n] = okState
					res.Done = append(res.Done, n)
				} else {
					state[n] = badState
					res.Failed = append(res.Failed, n)
				}
				cond.Broadcast()
				mu.Unlock()
			}(n)
		}
		if progressed {
			continue
		}
		if running == 0 {
			// Whatever is still pending can never start (cancelled context or a
			// cycle): report it as blocked.
			for _, n := range order {
				if state[n] == pending {
					state[n] = badState
					res.Blocked = append(res.Blocked, n)
				}
			}
			for n := range g.nodes {
				if state[n] == pending {
					res.Blocked = append(res.Blocked, n)
				}
			}
			return res
		}
		cond.Wait()
	}
}
