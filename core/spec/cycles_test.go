package spec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/dag"
	"pgregory.net/rapid"
)

// TestFindCyclesAgreesWithDag checks findCycles on random graphs: it finds
// a cycle exactly when dag does, every cycle it returns is a real path
// starting at its smallest node, one per strongly connected component, and
// on graphs whose cycles are disjoint simple cycles it returns what
// dag.Cycles returns.
func TestFindCyclesAgreesWithDag(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "n")
		var nodes []string
		for i := range n {
			nodes = append(nodes, string(rune('a'+i)))
		}
		deps := map[string][]string{}
		g := dag.New()
		for _, from := range nodes {
			g.Add(from)
			for _, to := range nodes {
				if to != from && rapid.IntRange(0, 3).Draw(t, "edge") == 0 {
					deps[from] = append(deps[from], to)
					g.Connect(from, to)
				}
			}
		}
		got, want := findCycles(nodes, deps), g.Cycles()
		if (len(got) == 0) != (len(want) == 0) {
			t.Fatalf("findCycles = %v, dag.Cycles = %v", got, want)
		}
		inCycle := map[string]bool{}
		for _, c := range got {
			if len(c) < 3 || c[0] != c[len(c)-1] || c[0] != slices.Min(c) {
				t.Fatalf("malformed cycle %v", c)
			}
			for i := 0; i+1 < len(c); i++ {
				if !slices.Contains(deps[c[i]], c[i+1]) {
					t.Fatalf("cycle %v: %s does not depend on %s", c, c[i], c[i+1])
				}
				if inCycle[c[i]] {
					t.Fatalf("%s is in two reported cycles: %v", c[i], got)
				}
				inCycle[c[i]] = true
			}
		}
		// Each dag cycle lies in the component of one of ours.
		for _, c := range want {
			if !slices.ContainsFunc(got, func(r dag.Cycle) bool {
				return reaches(deps, c[0], r[0]) && reaches(deps, r[0], c[0])
			}) {
				t.Fatalf("dag cycle %v is in no component of %v", c, got)
			}
		}
	})
	// Disjoint simple cycles: the same answer as dag.
	nodes := []string{"c", "b", "a", "d", "y", "x"}
	deps := map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "x": {"y"}, "y": {"x"}}
	g := dag.New()
	for from, ds := range deps {
		for _, to := range ds {
			g.Connect(from, to)
		}
	}
	if got, want := fmt.Sprint(findCycles(nodes, deps)), fmt.Sprint(g.Cycles()); got != want {
		t.Errorf("findCycles = %s, dag.Cycles = %s", got, want)
	}
}

// reaches reports whether a path leads from one node to another.
func reaches(deps map[string][]string, from, to string) bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			return true
		}
		for _, d := range deps[n] {
			if !seen[d] {
				seen[d] = true
				queue = append(queue, d)
			}
		}
	}
	return false
}

// TestManyCyclesBounded is a spec whose graph has a cycle per back edge
// (every resource depends on the next and on the first): reported as one
// cycle, quickly.
func TestManyCyclesBounded(t *testing.T) {
	const n = 5000
	var b strings.Builder
	b.WriteString("version: 1\nstack: s\nproviders: {mock: {}}\nresources:\n")
	for i := range n {
		deps := fmt.Sprintf("r%05d, r00000", i+1)
		switch i {
		case 0:
			deps = "r00001"
		case n - 1:
			deps = "r00000"
		}
		fmt.Fprintf(&b, "- {name: r%05d, type: t, depends_on: [%s]}\n", i, deps)
	}
	start := time.Now()
	lines := parseHostile(t, []byte(b.String()))
	if len(lines) != 1 || lines[0] != "5:3: dependency cycle: r00000 -> r00001 -> r00000" {
		t.Errorf("got %d problems: %.300q", len(lines), lines)
	}
	t.Logf("%d resources in %v", n, time.Since(start))
}
