package benchharness

import (
	"fmt"
	"slices"
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
//   - in an apply, a resource is ready once what it depends on has been
//     written (its Create returned), not verified: the generated stacks'
//     resources are all ephemeral with policy compensate, which bulwark
//     starts early (engine.Step.EarlyStart: a failed Verify rolls the
//     early dependent back); in a teardown, likewise once what depends
//     on it is deleted (its Delete returned), not verified gone: the
//     generated resources are all ephemeral, whose Delete bulwark starts
//     early (engine.Step.EarlyDelete: a failed Verify of what depends on
//     it halts the teardown); a durable one would wait for verified;
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
		return time.Duration(1+EarlyTicks(g, parallelism)) * latency
	case CmdTeardown:
		return time.Duration(1+EarlyTicks(g.reversed(), parallelism)) * latency
	}
	return 0
}

// Ticks is the list schedule's length of g in latencies, from the first
// write to the last verify (0 for an empty graph): at each tick the ready
// resources, in index order, take up to parallelism slots; a resource
// written at tick t is verified at t+2 (its write, then its read), and its
// dependents are ready from then on. See Limit.
func Ticks(g Graph, parallelism int) int {
	return schedule(g, parallelism, 2)
}

// EarlyTicks is Ticks for resources whose dependents start once they are
// written, not verified (bulwark's early start of an ephemeral create, and
// in a teardown its early delete of an ephemeral resource): a
// resource written at tick t is still verified at t+2, and the schedule
// ends with the last verify, but its dependents are ready at t+1.
func EarlyTicks(g Graph, parallelism int) int {
	return schedule(g, parallelism, 1)
}

// schedule is the list schedule of g, its dependents ready readyAfter
// ticks after a resource is written, each resource verified 2 ticks after.
func schedule(g Graph, parallelism, readyAfter int) int {
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
	// releasedAt[t] are the resources whose dependents are ready at tick
	// t; verifiedAt[t] counts those verified at t.
	releasedAt := map[int][]int{}
	verifiedAt := map[int]int{}
	var ready []int // in index order
	for i := range g {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	done, end := 0, 0
	for t := 0; done < n; t++ {
		if k, ok := verifiedAt[t]; ok {
			delete(verifiedAt, t)
			done += k
			end = t
		}
		if vs, ok := releasedAt[t]; ok {
			delete(releasedAt, t)
			for _, v := range vs {
				for _, d := range dependents[v] {
					if waiting[d]--; waiting[d] == 0 {
						ready = insertSorted(ready, d)
					}
				}
			}
		}
		if done < n && len(ready) == 0 && len(verifiedAt) == 0 && len(releasedAt) == 0 {
			panic("benchharness.Ticks: the graph has a cycle")
		}
		k := min(parallelism, len(ready))
		if k > 0 {
			releasedAt[t+readyAfter] = append(releasedAt[t+readyAfter], ready[:k]...)
			verifiedAt[t+2] += k
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

// RollbackLimit is what an ideal, overhead-free engine would take for an
// apply of graph g in which the Create of resource failing fails, rolled
// back, when every provider call takes latency and at most parallelism
// writes are in flight:
//
//   - one latency for the reads before the first write, as in Limit;
//   - the apply's list schedule, as in Limit (dependents ready once what
//     they depend on is written), up to the moment the failing Create
//     returns its error (its write ends): no write starts from then on,
//     and every write started before has ended by then (they started at
//     the same tick or earlier and take one latency);
//   - then the undo of every resource whose Create succeeded: one Delete
//     each (no read-back, no Verify: nothing verifies a compensation),
//     taking latency in one of parallelism write slots, a resource's
//     Delete starting once every executed resource that depends on it has
//     been deleted; ready ones, the newest first, take free slots.
//
// It panics when failing is not a resource of g.
func RollbackLimit(g Graph, failing int, latency time.Duration, parallelism int) time.Duration {
	fail, undo := RollbackTicks(g, failing, parallelism)
	return time.Duration(1+fail+undo) * latency
}

// RollbackTicks is RollbackLimit in latencies, after the reads: fail is
// when the failing Create returns (from the first write), undo how long
// the undo of what was created takes from then.
func RollbackTicks(g Graph, failing, parallelism int) (fail, undo int) {
	if parallelism < 1 {
		panic(fmt.Sprintf("benchharness.RollbackTicks: parallelism %d", parallelism))
	}
	n := len(g)
	if failing < 0 || failing >= n {
		panic(fmt.Sprintf("benchharness.RollbackTicks: resource %d of %d", failing, n))
	}
	dependents := make([][]int, n)
	waiting := make([]int, n)
	for i, ds := range g {
		waiting[i] = len(ds)
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
	}
	var ready []int
	for i := range g {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	executed := make([]bool, n)
	// writtenAt[t]: the resources written at t-1, whose dependents are
	// ready at t (they start early, as in Limit).
	writtenAt := map[int][]int{}
	for t := 0; ; t++ {
		for _, v := range writtenAt[t] {
			for _, d := range dependents[v] {
				if waiting[d]--; waiting[d] == 0 {
					ready = insertSorted(ready, d)
				}
			}
		}
		delete(writtenAt, t)
		if len(ready) == 0 && len(writtenAt) == 0 {
			panic("benchharness.RollbackTicks: the failing resource is never written")
		}
		k := min(parallelism, len(ready))
		written := ready[:k]
		ready = ready[k:]
		if slices.Contains(written, failing) {
			for _, w := range written {
				executed[w] = w != failing
			}
			fail = t + 1
			break
		}
		for _, w := range written {
			executed[w] = true
		}
		writtenAt[t+1] = append(writtenAt[t+1], written...)
	}
	// The undo: the executed resources, a resource ready once every
	// executed dependent of it is deleted.
	left := make([]int, n) // executed dependents not yet deleted
	todo := 0
	var undoReady []int // newest (highest index) first
	for i := n - 1; i >= 0; i-- {
		if !executed[i] {
			continue
		}
		todo++
		for _, d := range dependents[i] {
			if executed[d] {
				left[i]++
			}
		}
		if left[i] == 0 {
			undoReady = append(undoReady, i)
		}
	}
	for todo > 0 {
		if len(undoReady) == 0 {
			panic("benchharness.RollbackTicks: the undo is stuck (a cycle)")
		}
		k := min(parallelism, len(undoReady))
		deleted := undoReady[:k]
		undoReady = slices.Clone(undoReady[k:])
		undo++
		todo -= k
		for _, v := range deleted {
			for _, d := range g[v] {
				if executed[d] {
					if left[d]--; left[d] == 0 {
						undoReady = append(undoReady, d)
					}
				}
			}
		}
		slices.SortFunc(undoReady, func(a, b int) int { return b - a })
	}
	return fail, undo
}
