// Package dag holds the dependency graph of a stack: nodes named by string,
// edges from a node to the nodes it depends on. It finds cycles (as a path
// that can be printed), orders nodes so dependencies come first, and walks the
// graph with bounded parallelism, starting a node only when everything it
// depends on is done.
//
// A Graph is not safe for concurrent mutation; Walk only reads it.
package dag

import (
	"container/heap"
	"sort"
	"strings"
)

// Graph is a directed graph; an edge a -> b means a depends on b.
type Graph struct {
	nodes map[string]struct{}
	deps  map[string]map[string]struct{}
	rdeps map[string]map[string]struct{} // deps turned around: who depends on a node
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{nodes: map[string]struct{}{}, deps: map[string]map[string]struct{}{}, rdeps: map[string]map[string]struct{}{}}
}

// Add adds a node; adding one twice is harmless.
func (g *Graph) Add(n string) {
	g.nodes[n] = struct{}{}
}

// Connect records that from depends on to, adding both nodes.
func (g *Graph) Connect(from, to string) {
	g.Add(from)
	g.Add(to)
	if g.deps[from] == nil {
		g.deps[from] = map[string]struct{}{}
	}
	g.deps[from][to] = struct{}{}
	if g.rdeps[to] == nil {
		g.rdeps[to] = map[string]struct{}{}
	}
	g.rdeps[to][from] = struct{}{}
}

// Has reports whether n is a node.
func (g *Graph) Has(n string) bool {
	_, ok := g.nodes[n]
	return ok
}

// Nodes returns every node, sorted.
func (g *Graph) Nodes() []string {
	out := make([]string, 0, len(g.nodes))
	for n := range g.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DependsOn returns what n depends on directly, sorted.
func (g *Graph) DependsOn(n string) []string {
	out := make([]string, 0, len(g.deps[n]))
	for d := range g.deps[n] {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Dependents returns what depends on n directly, sorted.
func (g *Graph) Dependents(n string) []string {
	out := make([]string, 0, len(g.rdeps[n]))
	for from := range g.rdeps[n] {
		out = append(out, from)
	}
	sort.Strings(out)
	return out
}

// Cycle is a dependency cycle, first node repeated at the end.
type Cycle []string

func (c Cycle) String() string { return strings.Join(c, " -> ") }

// Cycles returns the cycles found by a depth-first search, each as a path
// starting at its smallest node, deduplicated, in sorted order. A graph with
// no cycle returns nil.
func (g *Graph) Cycles() []Cycle {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	seen := map[string]bool{}
	var out []Cycle
	var visit func(n string)
	visit = func(n string) {
		color[n] = grey
		stack = append(stack, n)
		for _, d := range g.DependsOn(n) {
			switch color[d] {
			case white:
				visit(d)
			case grey:
				i := len(stack) - 1
				for stack[i] != d {
					i--
				}
				c := canonical(stack[i:])
				if key := c.String(); !seen[key] {
					seen[key] = true
					out = append(out, c)
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
	}
	for _, n := range g.Nodes() {
		if color[n] == white {
			visit(n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// canonical rotates a cycle's nodes to start at the smallest and closes it.
func canonical(nodes []string) Cycle {
	min := 0
	for i, n := range nodes {
		if n < nodes[min] {
			min = i
		}
	}
	c := make(Cycle, 0, len(nodes)+1)
	c = append(c, nodes[min:]...)
	c = append(c, nodes[:min]...)
	return append(c, c[0])
}

// TopoOrder returns the nodes with every dependency before its dependents,
// ties broken by name (of the nodes ready, the smallest comes first), and
// false if the graph has a cycle. O((nodes + edges) log nodes).
func (g *Graph) TopoOrder() ([]string, bool) {
	indeg := make(map[string]int, len(g.nodes))
	ready := &names{}
	for n := range g.nodes {
		indeg[n] = len(g.deps[n])
		if indeg[n] == 0 {
			ready.s = append(ready.s, n)
		}
	}
	heap.Init(ready)
	out := make([]string, 0, len(g.nodes))
	for ready.Len() > 0 {
		n := heap.Pop(ready).(string)
		out = append(out, n)
		for m := range g.rdeps[n] {
			indeg[m]--
			if indeg[m] == 0 {
				heap.Push(ready, m)
			}
		}
	}
	return out, len(out) == len(g.nodes)
}

// names is a min-heap of node names.
type names struct{ s []string }

func (h *names) Len() int           { return len(h.s) }
func (h *names) Less(i, j int) bool { return h.s[i] < h.s[j] }
func (h *names) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *names) Push(x any)         { h.s = append(h.s, x.(string)) }
func (h *names) Pop() any {
	n := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return n
}

// Subgraph returns the graph restricted to keep, with an edge a -> b wherever
// a reached b in g through nodes outside keep, so order is preserved.
func (g *Graph) Subgraph(keep []string) *Graph {
	in := map[string]bool{}
	for _, n := range keep {
		in[n] = true
	}
	s := New()
	for _, n := range keep {
		if !g.Has(n) {
			continue
		}
		s.Add(n)
		seen := map[string]bool{}
		var reach func(m string)
		reach = func(m string) {
			for _, d := range g.DependsOn(m) {
				if seen[d] {
					continue
				}
				seen[d] = true
				if in[d] {
					s.Connect(n, d)
				} else {
					reach(d)
				}
			}
		}
		reach(n)
	}
	return s
}

// Reverse returns the graph with every edge turned around: walking it visits
// dependents before what they depend on, the order for deletion.
func (g *Graph) Reverse() *Graph {
	r := New()
	for n := range g.nodes {
		r.Add(n)
	}
	for from, ds := range g.deps {
		for to := range ds {
			r.Connect(to, from)
		}
	}
	return r
}
