package dag

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// build makes a graph from "a>b" edges (a depends on b) and bare "a" nodes.
func build(spec ...string) *Graph {
	g := New()
	for _, s := range spec {
		if from, to, ok := strings.Cut(s, ">"); ok {
			g.Connect(from, to)
		} else {
			g.Add(s)
		}
	}
	return g
}

// edges lists a graph's edges as "a>b", sorted.
func edges(g *Graph) []string {
	var out []string
	for _, n := range g.Nodes() {
		for _, d := range g.DependsOn(n) {
			out = append(out, n+">"+d)
		}
	}
	return out
}

func TestGraphBasics(t *testing.T) {
	g := build("b>a", "c>a", "c>b", "d", "b>a")
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, g.Nodes()); diff != "" {
		t.Errorf("Nodes (-want +got):\n%s", diff)
	}
	tests := []struct {
		n          string
		deps, dpts []string
	}{
		{"a", nil, []string{"b", "c"}},
		{"b", []string{"a"}, []string{"c"}},
		{"c", []string{"a", "b"}, nil},
		{"d", nil, nil},
		{"zz", nil, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.deps, g.DependsOn(tt.n), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("DependsOn(%s) (-want +got):\n%s", tt.n, diff)
		}
		if diff := cmp.Diff(tt.dpts, g.Dependents(tt.n), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Dependents(%s) (-want +got):\n%s", tt.n, diff)
		}
	}
	if !g.Has("d") || g.Has("zz") {
		t.Errorf("Has: d=%v zz=%v", g.Has("d"), g.Has("zz"))
	}
}

func TestTopoOrder(t *testing.T) {
	tests := []struct {
		name string
		g    *Graph
		want []string
		ok   bool
	}{
		{"empty", New(), nil, true},
		{"no edges: by name", build("c", "a", "b"), []string{"a", "b", "c"}, true},
		{"chain", build("a>b", "b>c"), []string{"c", "b", "a"}, true},
		{"ties by name among ready", build("b>c", "a"), []string{"a", "c", "b"}, true},
		{"diamond", build("top>l", "top>r", "l>base", "r>base"), []string{"base", "l", "r", "top"}, true},
		{"demo stack", build("storage>network", "table>network", "compute>storage", "compute>table", "lb>compute"),
			[]string{"network", "storage", "table", "compute", "lb"}, true},
		{"cycle", build("a>b", "b>a"), nil, false},
		{"cycle with a free node", build("a>b", "b>a", "c"), []string{"c"}, false},
		{"self loop", build("a>a", "b"), []string{"b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.g.TopoOrder()
			if ok != tt.ok {
				t.Errorf("ok = %v, want %v", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("TopoOrder (-want +got):\n%s", diff)
			}
			if ok {
				checkTopo(t, tt.g, got)
			}
		})
	}
}

// checkTopo fails unless order holds every node once, dependencies first.
func checkTopo(t *testing.T, g *Graph, order []string) {
	t.Helper()
	pos := map[string]int{}
	for i, n := range order {
		if _, dup := pos[n]; dup {
			t.Fatalf("%s twice in %v", n, order)
		}
		pos[n] = i
	}
	if len(pos) != len(g.Nodes()) {
		t.Fatalf("order %v misses nodes of %v", order, g.Nodes())
	}
	for _, n := range order {
		for _, d := range g.DependsOn(n) {
			if pos[d] > pos[n] {
				t.Errorf("%s comes before its dependency %s in %v", n, d, order)
			}
		}
	}
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name string
		g    *Graph
		want []string
	}{
		{"none", build("a>b", "b>c", "a>c"), nil},
		{"empty graph", New(), nil},
		{"two nodes", build("a>b", "b>a"), []string{"a -> b -> a"}},
		{"starts at the smallest node", build("c>b", "b>a", "a>c"), []string{"a -> c -> b -> a"}},
		{"found from a node outside it", build("x>b", "b>c", "c>b"), []string{"b -> c -> b"}},
		{"self loop", build("a>a"), []string{"a -> a"}},
		{"two cycles, sorted", build("y>z", "z>y", "a>b", "b>a", "m"), []string{"a -> b -> a", "y -> z -> y"}},
		{"two cycles sharing a node", build("a>b", "b>a", "b>c", "c>a"), []string{"a -> b -> a", "a -> b -> c -> a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range tt.g.Cycles() {
				got = append(got, c.String())
				if c[0] != c[len(c)-1] {
					t.Errorf("cycle %v is not closed", c)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Cycles (-want +got):\n%s", diff)
			}
			if _, ok := tt.g.TopoOrder(); ok != (len(tt.want) == 0) {
				t.Errorf("TopoOrder ok = %v while Cycles = %v", ok, got)
			}
		})
	}
}

func TestSubgraph(t *testing.T) {
	tests := []struct {
		name  string
		g     *Graph
		keep  []string
		nodes []string
		edges []string
	}{
		{"direct edge kept", build("a>b", "b>c"), []string{"a", "b"}, []string{"a", "b"}, []string{"a>b"}},
		{"reach through a dropped node", build("a>b", "b>c"), []string{"a", "c"}, []string{"a", "c"}, []string{"a>c"}},
		{"reach through a long dropped chain", build("a>x", "x>y", "y>z", "z>c"), []string{"c", "a"}, []string{"a", "c"}, []string{"a>c"}},
		{"stops at a kept node", build("a>b", "b>c"), []string{"a", "b", "c"}, []string{"a", "b", "c"}, []string{"a>b", "b>c"}},
		{"unrelated nodes stay unconnected", build("a>x", "b>y"), []string{"a", "b"}, []string{"a", "b"}, nil},
		{"unknown names ignored", build("a>b"), []string{"a", "nope"}, []string{"a"}, nil},
		{"diamond through dropped middles", build("t>l", "t>r", "l>b", "r>b"), []string{"t", "b"}, []string{"b", "t"}, []string{"t>b"}},
		{"nothing kept", build("a>b"), nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.g.Subgraph(tt.keep)
			if diff := cmp.Diff(tt.nodes, s.Nodes(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.edges, edges(s), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
			order, ok := s.TopoOrder()
			if !ok {
				t.Fatalf("subgraph of a DAG has a cycle")
			}
			// The order of the kept nodes agrees with the original graph's.
			full, _ := tt.g.TopoOrder()
			checkTopo(t, s, order)
			pos := map[string]int{}
			for i, n := range full {
				pos[n] = i
			}
			for _, e := range edges(s) {
				from, to, _ := strings.Cut(e, ">")
				if pos[to] > pos[from] {
					t.Errorf("edge %s contradicts the original order %v", e, full)
				}
			}
		})
	}
}

func TestReverse(t *testing.T) {
	g := build("b>a", "c>a", "c>b", "lonely")
	r := g.Reverse()
	if diff := cmp.Diff([]string{"a>b", "a>c", "b>c"}, edges(r)); diff != "" {
		t.Errorf("reversed edges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(g.Nodes(), r.Nodes()); diff != "" {
		t.Errorf("reversed nodes (-want +got):\n%s", diff)
	}
	order, ok := r.TopoOrder()
	if !ok || cmp.Diff([]string{"c", "b", "a", "lonely"}, order) != "" {
		t.Errorf("deletion order %v, %v; want dependents first [c b a lonely]", order, ok)
	}
	if diff := cmp.Diff(edges(g), edges(r.Reverse())); diff != "" {
		t.Errorf("reverse twice (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b>a", "c>a", "c>b"}, edges(g)); diff != "" {
		t.Errorf("Reverse changed its receiver:\n%s", diff)
	}
}
