package graphsvg

import (
	"context"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/state"
)

// svgNode is a <g class="node ..."> of Graphviz's SVG: its title is the
// node's DOT id.
type svgNode struct {
	Class string `xml:"class,attr"`
	Title string `xml:"title"`
}

type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Groups  []struct {
		Class string    `xml:"class,attr"`
		Inner []svgNode `xml:"g"`
	} `xml:"g"`
}

// nodes parses the SVG as XML and returns its nodes by title.
func nodes(t *testing.T, svg []byte) map[string]string {
	t.Helper()
	var d svgDoc
	if err := xml.Unmarshal(svg, &d); err != nil {
		t.Fatalf("SVG is not XML: %v\n%s", err, svg)
	}
	out := map[string]string{}
	for _, g := range d.Groups {
		for _, n := range g.Inner {
			if strings.HasPrefix(n.Class, "node") {
				out[n.Title] = n.Class
			}
		}
	}
	return out
}

func sample(webs int) *Graph {
	g := &Graph{Name: "demo"}
	g.Nodes = append(g.Nodes, Node{ID: "db", Type: "mock_db", Protection: protection.Protected})
	for i := range webs {
		id := fmt.Sprintf("web[w%d]", i)
		g.Nodes = append(g.Nodes, Node{ID: id, Type: "mock_vm", Protection: protection.Ephemeral, Group: "web[*]"})
		g.Edges = append(g.Edges, Edge{id, "db"})
	}
	g.Nodes = append(g.Nodes,
		Node{ID: "net.vpc", Type: "mock_net", Protection: protection.Durable, Group: "module net"},
		Node{ID: "net.subnet", Type: "mock_net", Protection: protection.Protected, Group: "module net", Action: "update"},
		Node{ID: "data.ami", Type: "mock_ami", Data: true},
	)
	g.Edges = append(g.Edges, Edge{"net.subnet", "net.vpc"}, Edge{"db", "net.subnet"}, Edge{"db", "data.ami"})
	return g
}

func TestSVGOneNodePerResourceProtectedClass(t *testing.T) {
	ctx := context.Background()
	g := sample(3)
	svg, err := SVG(ctx, testProgram(t), g, CollapseNone)
	if err != nil {
		t.Fatal(err)
	}
	got := nodes(t, svg)
	if len(got) != len(g.Nodes) {
		t.Fatalf("got %d nodes %v, want %d", len(got), got, len(g.Nodes))
	}
	for _, n := range g.Nodes {
		class, ok := got[n.ID]
		if !ok {
			t.Fatalf("node %s missing from %v", n.ID, got)
		}
		if prot := strings.Contains(" "+class+" ", " protected "); prot != (n.Protection == protection.Protected) {
			t.Errorf("node %s class %q: protected=%v, level %s", n.ID, class, prot, n.Protection)
		}
	}
	if !strings.Contains(got["net.subnet"], "action-update") {
		t.Errorf("net.subnet class %q lacks its planned action", got["net.subnet"])
	}
	for _, want := range []string{"<title>cluster_0</title>", ">web[*]<", ">module net<"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("SVG lacks %q (the group clusters)", want)
		}
	}
}

func TestSVGCollapsedGroupsKeepProtection(t *testing.T) {
	ctx := context.Background()
	g := sample(20)
	svg, err := SVG(ctx, testProgram(t), g, CollapseAll)
	if err != nil {
		t.Fatal(err)
	}
	got := nodes(t, svg)
	want := []string{"db", "data.ami", "group:web[*]", "group:module net"}
	if len(got) != len(want) {
		t.Fatalf("got nodes %v, want %v", got, want)
	}
	for _, w := range want {
		if _, ok := got[w]; !ok {
			t.Fatalf("node %s missing from %v", w, got)
		}
	}
	if !strings.Contains(got["group:module net"], "protected") {
		t.Errorf("module net holds a protected resource, class %q", got["group:module net"])
	}
	if strings.Contains(got["group:web[*]"], "protected") {
		t.Errorf("web holds no protected resource, class %q", got["group:web[*]"])
	}
	if !strings.Contains(string(svg), "web[×20]") {
		t.Errorf("collapsed for_each not labelled web[×20]")
	}
}

func TestDOTAutoCollapse(t *testing.T) {
	small, big := sample(3).DOT(CollapseAuto), sample(AutoCollapseAbove+1).DOT(CollapseAuto)
	if !strings.Contains(small, "subgraph cluster_") || strings.Contains(small, "group:") {
		t.Errorf("small graph should be clustered, not collapsed:\n%s", small)
	}
	if !strings.Contains(big, `"group:web[*]"`) || strings.Contains(big, `"web[w0]"`) {
		t.Errorf("graph above %d nodes should be collapsed", AutoCollapseAbove)
	}
}

func TestDOTQuotesHostileNames(t *testing.T) {
	g := &Graph{Name: `a"b`, Nodes: []Node{{ID: `web[x"\N]`, Type: "t", Group: "web[*]"}}}
	svg, err := SVG(context.Background(), testProgram(t), g, CollapseNone)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nodes(t, svg)[`web[x"\N]`]; !ok {
		t.Fatalf("hostile name not kept:\n%s", svg)
	}
}

func TestParseCollapse(t *testing.T) {
	for in, want := range map[string]Collapse{"": CollapseAuto, "auto": CollapseAuto, "none": CollapseNone, "all": CollapseAll} {
		if got, err := ParseCollapse(in); err != nil || got != want {
			t.Errorf("ParseCollapse(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseCollapse("some"); err == nil {
		t.Error("ParseCollapse(some) took it")
	}
}

// BenchmarkRender300 lays out 300 resources, expanded into clusters (the
// worst case; collapsed is far smaller): a layout process each, Graphviz's
// module compiled (from the cache) in each.
func BenchmarkRender300(b *testing.B) {
	ctx := context.Background()
	r := NewRenderer(testProgram(b))
	g := &Graph{Name: "big"}
	for m := range 10 {
		for i := range 30 {
			id := fmt.Sprintf("m%d.web[%d]", m, i)
			g.Nodes = append(g.Nodes, Node{ID: id, Type: "mock_vm", Protection: protection.Level(1 + i%3), Group: fmt.Sprintf("module m%d", m)})
			if i > 0 {
				g.Edges = append(g.Edges, Edge{id, fmt.Sprintf("m%d.web[%d]", m, i-1)})
			}
			if m > 0 && i == 0 {
				g.Edges = append(g.Edges, Edge{id, fmt.Sprintf("m%d.web[29]", m-1)})
			}
		}
	}
	dot := g.DOT(CollapseNone)
	for b.Loop() {
		if _, err := r.Render(ctx, dot); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCallOf(t *testing.T) {
	for in, want := range map[string]string{
		`net.vpc`: "net", `app["eu"].db`: "app", `app["a.b"].db`: "app", `cache[0].disk[a]`: "cache",
		`outer.inner.x`: "outer", `web[a]`: "", `app["q\"].x"].db`: "app",
	} {
		if got := callOf(in); got != want {
			t.Errorf("callOf(%s) = %q, want %q", in, got, want)
		}
	}
}

// FromState groups records by their address alone as FromSpec does, keeps
// their levels and recorded dependencies, and leaves a deposed object out.
func TestFromStateGroupsByAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"db":                "",
		`web[a]`:            "web[*]",
		`web["a.b"]`:        "web[*]",
		"net.vpc":           "module net",
		`net["eu"].subnet`:  "module net",
		`app["a.b"].db[x]`:  "module app",
		`net.inner.deep[k]`: "module net",
		`edge["x.y"]`:       "edge[*]",
	} {
		if got := GroupOfAddress(addr); got != want {
			t.Errorf("GroupOfAddress(%q) = %q, want %q", addr, got, want)
		}
	}
	g := FromState("shop", []*state.Resource{
		{Name: "db", Type: "generic", Protection: protection.Protected},
		{Name: "web[a]", Type: "generic", Protection: protection.Ephemeral, DependsOn: []string{"db"}},
		{Name: "db~old", Type: "generic", Protection: protection.Protected, DeposedFrom: "db", DeposedBy: "op1"},
	})
	if len(g.Nodes) != 2 || g.Nodes[0].ID != "db" || g.Nodes[0].Protection != protection.Protected || g.Nodes[1].Group != "web[*]" {
		t.Fatalf("nodes %+v", g.Nodes)
	}
	if len(g.Edges) != 1 || g.Edges[0] != (Edge{"web[a]", "db"}) {
		t.Fatalf("edges %+v", g.Edges)
	}
}

// A collapsed group links to its expansion; a group Expand draws in full
// under CollapseAll keeps its members and links to collapsing it again;
// a plan's delete of a resource the graph lacks is added as a node.
func TestDOTWithExpandsOneGroupAndLinksBoth(t *testing.T) {
	g := &Graph{Name: "s", Nodes: []Node{
		{ID: "web[a]", Type: "compute", Group: "web[*]", Protection: protection.Ephemeral},
		{ID: "web[b]", Type: "compute", Group: "web[*]", Protection: protection.Ephemeral},
		{ID: "net.vpc", Type: "network", Group: "module net", Protection: protection.Protected},
	}}
	g.SetActions(map[string]string{"web[a]": "replace", "web[b]": "check", "old": "delete"}, map[string]Node{"old": {Type: "generic", Protection: protection.Ephemeral}})
	link := func(group string, expand bool) string { return fmt.Sprintf("?%v=%s", expand, group) }
	dot := g.DOTWith(Options{Collapse: CollapseAll, Expand: []string{"web[*]"}, Link: link})
	for _, want := range []string{
		`"web[a]" [label="web[a]\ncompute (ephemeral)\nreplace"`,
		`"web[b]" [label="web[b]\ncompute (ephemeral)\nnoop"`,
		`URL="?false=web[*]"`,
		`label="web[*] (collapse)"`,
		`"group:module net" [label=`,
		`URL="?true=module net", tooltip="expand module net"`,
		`"old" [label="old\ngeneric (ephemeral)\ndelete"`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %s:\n%s", want, dot)
		}
	}
	if strings.Contains(dot, `"net.vpc" [`) {
		t.Errorf("module net is drawn in full though only web[*] is expanded:\n%s", dot)
	}
	if got := g.Groups(); len(got) != 2 || got[0] != "web[*]" || got[1] != "module net" {
		t.Errorf("Groups() = %v", got)
	}
	svg, err := SVGWith(context.Background(), testProgram(t), g, Options{Collapse: CollapseAll, Link: link})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), `xlink:href="?true=web[*]"`) {
		t.Errorf("the collapsed group's node carries no link:\n%s", svg)
	}
}
