package spec

import (
	"slices"

	"github.com/bulwark-iac/bulwark/core/dag"
)

// findCycles returns one dependency cycle per strongly connected component
// of more than one node, each the shortest cycle through the component's
// smallest node, starting and ending there (as dag.Cycles prints them).
//
// It does not use dag.Graph.Cycles, which returns a cycle per back edge of
// its search: on a hostile spec of a few thousand resources that is
// quadratic in time and memory (gigabytes of cycle paths from a 1 MiB spec).
// This is linear in the size of the graph and its output is bounded by the
// number of resources. nodes is in file order; deps lists each node's
// dependencies, all of them nodes, none the node itself.
func findCycles(nodes []string, deps map[string][]string) []dag.Cycle {
	// Tarjan's algorithm; recursion depth is bounded by the number of
	// resources a 1 MiB spec can hold.
	var (
		index   = map[string]int{}
		low     = map[string]int{}
		onStack = map[string]bool{}
		stack   []string
		sccs    [][]string
	)
	var visit func(n string)
	visit = func(n string) {
		index[n] = len(index)
		low[n] = index[n]
		stack = append(stack, n)
		onStack[n] = true
		for _, d := range deps[n] {
			if _, seen := index[d]; !seen {
				visit(d)
				low[n] = min(low[n], low[d])
			} else if onStack[d] {
				low[n] = min(low[n], index[d])
			}
		}
		if low[n] == index[n] {
			i := len(stack) - 1
			for stack[i] != n {
				i--
			}
			scc := slices.Clone(stack[i:])
			for _, m := range scc {
				onStack[m] = false
			}
			stack = stack[:i]
			if len(scc) > 1 {
				sccs = append(sccs, scc)
			}
		}
	}
	for _, n := range nodes {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}

	var out []dag.Cycle
	for _, scc := range sccs {
		in := map[string]bool{}
		for _, n := range scc {
			in[n] = true
		}
		start := slices.Min(scc)
		// Breadth-first from start, inside the component, until an edge
		// leads back to start; dependencies in name order for determinism.
		parent := map[string]string{}
		queue := []string{start}
		var last string
	search:
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			ds := slices.Clone(deps[n])
			slices.Sort(ds)
			for _, d := range ds {
				if !in[d] {
					continue
				}
				if d == start {
					last = n
					break search
				}
				if _, seen := parent[d]; !seen {
					parent[d] = n
					queue = append(queue, d)
				}
			}
		}
		c := dag.Cycle{start}
		for n := last; n != start; n = parent[n] {
			c = append(c, n)
		}
		// c is start followed by the path backwards; put it forwards.
		slices.Reverse(c[1:])
		out = append(out, append(c, start))
	}
	slices.SortFunc(out, func(a, b dag.Cycle) int {
		switch as, bs := a.String(), b.String(); {
		case as < bs:
			return -1
		case as > bs:
			return 1
		}
		return 0
	})
	return out
}
