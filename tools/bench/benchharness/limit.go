package benchharness

import (
	"fmt"
	"time"
)

// Graph is a stack's dependencies: Graph[i] are the resources i depends
// on, each below i, so index order is a topological order.
type Graph [][]int

// ShapeGraph is the graph of a generated stack of n resources.
func ShapeGraph(shape Shape, n int) Graph {
	g := make(Graph, n)
	for i := range g {
		g[i] = Dependencies(shape, n, i)
	}
	return g
}

// reversed is g with every edge turned round (i depends on what depended
// on it), indexed the other way round so that index order stays a
// topological order: teardown's graph.
func (g Graph) reversed() Graph {
	n := len(g)
	r := make(Graph, n)
	for i, ds := range g {
		for _, d := range ds {
			// In r, resource n-1-d waits for n-1-i.
			r[n-1-d] = append(r[n-1-d], n-1-i)
		}
	}
	return r
}

// Limit is what an ideal, overhead-free engine would take for command
// (CmdApply or CmdTeardown) on graph g when every provider call takes
// latency and at most parallelism writes are in flight:
//
//   - one latency first: the reads before the first write, all at once
//     (reads are not bounded). bulwark's contract refuses a plan whole
//     (the protection ladder, ownership conflicts) before its first step,
//     so an apply reads every resource before it writes any; a teardown
//     reads what it is about to delete, for the ownership check, before
//     its first delete;
//   - then one write per resource (a Create; in a teardown a Delete),
//     taking latency in one of parallelism write slots, followed by
//     Verify's read, taking latency off the write slots: the slot is free
//     when the write returns;
//   - a resource is ready once everything it waits for is verified: in an
//     apply, what it depends on; in a teardown, what depends on it (deleted
//     and verified gone);
//   - ready resources take free slots in topological order (list
//     scheduling: an idle slot is never left idle while a resource is ready).
//
// Since every write and every read takes the same time, the writes start
// at whole multiples of latency and every slot is free again at each: the
// simulation steps one latency at a time, and for these graphs list
// scheduling is the optimum. Limit is 0 for a command it does not model.
func Limit(g Graph, command string, latency time.Duration, parallelism int) time.Duration {
	switch command {
	case CmdApply:
	case CmdTeardown:
		g = g.reversed()
	default:
		return 0
	}
	return time.Duration(1+Ticks(g, parallelism)) * latency
}

// Ticks is the list schedule's length of g in latencies, from the first
// write to the last verify (0 for an empty graph): at each tick the ready
// resources, in index order, take up to parallelism slots; a resource
// written at tick t is verified at t+2 (its write, then its read), and its
// dependents are ready from then on. See Limit.
func Ticks(g Graph, parallelism int) int {
	if parallelism < 1 {
		panic(fmt.Sprintf("benchharness.Ticks: parallelism %d", parallelism))
	}
	n := len(g)
	if n == 0 {
		return 0
	}
	dependents := make([][]int, n)
	waiting := make([]int, n) // what each resource still waits for
	for i, ds := range g {
		waiting[i] = len(ds)
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
	}
	// verifiedAt[t] are the resources verified at tick t: their
	// dependents are ready at t.
	verifiedAt := map[int][]int{}
	var ready []int // in index order
	for i := range g {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	done, end := 0, 0
	for t := 0; done < n; t++ {
		if vs, ok := verifiedAt[t]; ok {
			delete(verifiedAt, t)
			for _, v := range vs {
				done++
				end = t
				for _, d := range dependents[v] {
					if waiting[d]--; waiting[d] == 0 {
						ready = insertSorted(ready, d)
					}
				}
			}
		}
		if done < n && len(ready) == 0 && len(verifiedAt) == 0 {
			panic("benchharness.Ticks: the graph has a cycle")
		}
		k := min(parallelism, len(ready))
		if k > 0 {
			verifiedAt[t+2] = append(verifiedAt[t+2], ready[:k]...)
			ready = ready[k:]
		}
	}
	return end
}

// insertSorted inserts v into the ascending s.
func insertSorted(s []int, v int) []int {
	i := len(s)
	for i > 0 && s[i-1] > v {
		i--
	}
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}
