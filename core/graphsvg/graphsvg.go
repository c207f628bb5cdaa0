// Package graphsvg draws a stack's dependency graph as SVG: it writes the
// graph as DOT, with for_each instances and module calls as clusters (or,
// collapsed, as one node each), and lays it out with Graphviz's own dot
// engine compiled to WebAssembly, run by the program bulwark-graphviz
// beside bulwark (package dotlayout; Renderer).
package graphsvg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// AutoCollapseAbove is the number of nodes above which CollapseAuto draws
// each for_each group and module call as one node.
const AutoCollapseAbove = 100

// Collapse says when groups are drawn as one node.
type Collapse int

const (
	// CollapseAuto collapses every group when the graph has more than
	// AutoCollapseAbove nodes, and none otherwise.
	CollapseAuto Collapse = iota
	// CollapseNone draws every resource, groups as clusters.
	CollapseNone
	// CollapseAll draws each group as one node.
	CollapseAll
)

// ParseCollapse reads the --collapse flag's word: auto, none or all.
func ParseCollapse(s string) (Collapse, error) {
	switch s {
	case "", "auto":
		return CollapseAuto, nil
	case "none":
		return CollapseNone, nil
	case "all":
		return CollapseAll, nil
	}
	return 0, fmt.Errorf("collapse %q: want auto, none or all", s)
}

// Node is one resource or data entry.
type Node struct {
	ID         string // the resource's address ("web[a]", "net.subnet") or "data.NAME"
	Type       string
	Protection protection.Level
	Data       bool
	// Group is the cluster the node belongs to ("" for none): "module NAME"
	// for a module call's resources, "NAME[*]" for a for_each's instances.
	Group string
	// Action is the planned action ("create", "update", "replace",
	// "delete", "noop"), empty when no plan is at hand.
	Action string
}

// Edge says From depends on To.
type Edge struct{ From, To string }

// Graph is what is drawn.
type Graph struct {
	Name  string
	Nodes []Node
	Edges []Edge
}

// FromSpec builds the graph of an expanded spec (resolve.Expand or
// ExpandUnknown): its resources, its data entries and their dependencies.
func FromSpec(sp *spec.Spec) *Graph {
	g := &Graph{Name: sp.Stack}
	for _, r := range sp.Resources {
		g.Nodes = append(g.Nodes, Node{ID: r.Name, Type: r.Type, Protection: r.Protection, Group: groupOf(r)})
	}
	for _, d := range sp.Data {
		g.Nodes = append(g.Nodes, Node{ID: "data." + d.Name, Type: d.Type, Data: true})
	}
	for _, d := range sp.Data {
		for _, dep := range d.DependsOn {
			g.Edges = append(g.Edges, Edge{"data." + d.Name, "data." + dep})
		}
	}
	dg := sp.Graph()
	for _, n := range dg.Nodes() {
		for _, d := range dg.DependsOn(n) {
			g.Edges = append(g.Edges, Edge{n, d})
		}
	}
	if len(sp.Data) > 0 {
		for _, r := range sp.Resources {
			for _, d := range resolve.DataRefs(r.Config) {
				g.Edges = append(g.Edges, Edge{r.Name, "data." + d})
			}
		}
	}
	return g
}

// FromState builds the graph of a stack's recorded resources: each one's
// address, type and level, and the dependencies the state records for it
// (the expanded spec's depends_on, references included, as the apply
// recorded them). It needs no spec, so no key: it draws what a stack holds
// when its revision's spec is sealed. A deposed object (the old half of a
// replacement in progress) is not drawn: its address's current record is.
// Data entries are not recorded in the state, so none is drawn.
func FromState(stack string, rs []*state.Resource) *Graph {
	g := &Graph{Name: stack}
	for _, r := range rs {
		if r.DeposedFrom != "" {
			continue
		}
		g.Nodes = append(g.Nodes, Node{ID: r.Name, Type: r.Type, Protection: r.Protection, Group: GroupOfAddress(r.Name)})
		for _, d := range r.DependsOn {
			g.Edges = append(g.Edges, Edge{r.Name, d})
		}
	}
	return g
}

// GroupOfAddress is the cluster of a resource known by its address alone:
// "module NAME" when the address is inside a module call (app.db,
// app["eu"].db), else "NAME[*]" for a for_each instance (web["a"]), else
// "". It agrees with what FromSpec groups.
func GroupOfAddress(name string) string {
	if call := callOf(name); call != "" {
		return "module " + call
	}
	if base, _, keyed := strings.Cut(name, "["); keyed {
		return base + "[*]"
	}
	return ""
}

// groupOf is the cluster of a resource: its outermost module call, else
// its for_each.
func groupOf(r *spec.Resource) string {
	if r.Via != "" {
		if call := callOf(r.Name); call != "" {
			return "module " + call
		}
	}
	if r.Addr.Keyed {
		return r.Addr.Name + "[*]"
	}
	return ""
}

// callOf is the outermost module call a module resource's name starts
// with, without its key: "app" for app["eu"].db and for app["a.b"].db
// (a dot inside a key does not end the call).
func callOf(name string) string {
	depth, quoted := 0, false
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == '.' && depth == 0:
			base, _, _ := strings.Cut(name[:i], "[")
			return base
		}
	}
	return ""
}

// collapsedLabel is a collapsed group's name: "web[×20]", "module net[×5]".
func collapsedLabel(group string, n int) string {
	base := strings.TrimSuffix(group, "[*]")
	return fmt.Sprintf("%s[×%d]", base, n)
}

// DOT writes the graph as DOT, grouped or collapsed as c says. Every node
// carries a class the SVG keeps: "resource" or "data", "group" for a
// collapsed one, "level-LEVEL", "protected" when it is (or holds) a
// protected resource, and "action-ACTION" when planned.
func (g *Graph) DOT(c Collapse) string { return g.DOTWith(Options{Collapse: c}) }

// Options say how DOTWith draws the groups.
type Options struct {
	Collapse Collapse
	// Expand are groups ("web[*]", "module net") drawn in full even when
	// Collapse collapses the others.
	Expand []string
	// Link, when set, gives each group a link (Graphviz's URL, an <a
	// xlink:href> in the SVG): a collapsed group's node links to
	// Link(group, true), the link that expands it; a cluster expanded by
	// Expand links to Link(group, false), the one that collapses it again.
	Link func(group string, expand bool) string
}

// Groups are the graph's groups, in the order DOT draws them.
func (g *Graph) Groups() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Group != "" && !seen[n.Group] {
			seen[n.Group] = true
			out = append(out, n.Group)
		}
	}
	return out
}

// SetActions marks each node with its planned action (actions maps an
// address to a plan's action word; "check" is drawn as "noop"). A planned
// resource the graph does not hold (a delete of one the spec no longer
// has) is added as a node of its own, with its type and level from
// missing.
func (g *Graph) SetActions(actions map[string]string, missing map[string]Node) {
	have := map[string]bool{}
	for i := range g.Nodes {
		if a, ok := actions[g.Nodes[i].ID]; ok {
			g.Nodes[i].Action = ActionWord(a)
		}
		have[g.Nodes[i].ID] = true
	}
	var extra []string
	for id := range actions {
		if !have[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		n := missing[id]
		n.ID, n.Action = id, ActionWord(actions[id])
		if n.Group == "" {
			n.Group = GroupOfAddress(id)
		}
		g.Nodes = append(g.Nodes, n)
	}
}

// ActionWord is how an action is drawn: the plan's "check" (nothing to
// do) as "noop".
func ActionWord(a string) string {
	if a == "check" {
		return "noop"
	}
	return a
}

// DOTWith is DOT with per-group expansion and links.
func (g *Graph) DOTWith(o Options) string {
	c := o.Collapse
	collapseAll := c == CollapseAll || (c == CollapseAuto && len(g.Nodes) > AutoCollapseAbove)
	expand := map[string]bool{}
	for _, e := range o.Expand {
		expand[e] = true
	}
	collapsed := func(group string) bool { return collapseAll && !expand[group] }
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=LR;\n  fontname=\"Helvetica\";\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11];\n  edge [color=\"#777777\"];\n", quote(g.Name))

	// Where each node is drawn: itself, or its group's node.
	drawnAs := map[string]string{}
	groups := map[string][]Node{}
	var groupOrder []string
	for _, n := range g.Nodes {
		drawnAs[n.ID] = n.ID
		if n.Group == "" {
			continue
		}
		if _, ok := groups[n.Group]; !ok {
			groupOrder = append(groupOrder, n.Group)
		}
		groups[n.Group] = append(groups[n.Group], n)
		if collapsed(n.Group) {
			drawnAs[n.ID] = "group:" + n.Group
		}
	}
	for _, n := range g.Nodes {
		if n.Group == "" {
			b.WriteString("  " + nodeLine(n) + "\n")
		}
	}
	for i, gr := range groupOrder {
		members := groups[gr]
		if collapsed(gr) {
			line := groupLine(gr, members)
			if o.Link != nil {
				line = strings.TrimSuffix(line, "];") + fmt.Sprintf(", URL=%s, tooltip=%s];", quote(o.Link(gr, true)), quote("expand "+gr))
			}
			b.WriteString("  " + line + "\n")
			continue
		}
		label := gr
		link := ""
		if collapseAll && o.Link != nil {
			label += " (collapse)"
			link = fmt.Sprintf("    URL=%s;\n    tooltip=%s;\n", quote(o.Link(gr, false)), quote("collapse "+gr))
		}
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n%s    class=\"cluster\";\n    style=\"rounded,dashed\";\n    color=\"#999999\";\n", i, quote(label), link)
		for _, n := range members {
			b.WriteString("    " + nodeLine(n) + "\n")
		}
		b.WriteString("  }\n")
	}
	seen := map[Edge]bool{}
	for _, e := range g.Edges {
		from, to := drawnAs[e.From], drawnAs[e.To]
		if from == "" || to == "" || from == to {
			continue
		}
		de := Edge{from, to}
		if seen[de] {
			continue
		}
		seen[de] = true
		fmt.Fprintf(&b, "  %s -> %s;\n", quoteID(from), quoteID(to))
	}
	b.WriteString("}\n")
	return b.String()
}

// fill is the colour of a protection level.
func fill(l protection.Level) string {
	switch l {
	case protection.Protected:
		return "#f8d0d0"
	case protection.Durable:
		return "#fbe8b8"
	}
	return "#e4eef8"
}

// ActionColor is the border of a planned action.
func ActionColor(a string) string {
	switch a {
	case "create", "import":
		return "#2e7d32"
	case "update":
		return "#b26a00"
	case "replace", "delete":
		return "#c62828"
	}
	return "#555555"
}

func nodeLine(n Node) string {
	if n.Data {
		return fmt.Sprintf("%s [label=%s, shape=note, style=filled, fillcolor=\"#eeeeee\", class=\"data\"];",
			quoteID(n.ID), quote(n.ID+"\n"+n.Type+" (read)"))
	}
	label := n.ID + "\n" + n.Type + " (" + n.Protection.String() + ")"
	if n.Protection == protection.Protected {
		label = "\U0001F512 " + label
	}
	if n.Action != "" {
		label += "\n" + n.Action
	}
	return fmt.Sprintf("%s [label=%s, fillcolor=%s, color=%s, penwidth=%s, class=%s];",
		quoteID(n.ID), quote(label), quote(fill(n.Protection)), quote(ActionColor(n.Action)),
		penwidth(n.Protection, n.Action), quote(classes("resource", n.Protection, []string{n.Action})))
}

// groupLine is one node for a collapsed group: the strongest level of its
// members, so a protected resource is never hidden in a plain box.
func groupLine(group string, members []Node) string {
	top := protection.Ephemeral
	types := map[string]bool{}
	actions := map[string]bool{}
	for _, m := range members {
		if m.Protection > top {
			top = m.Protection
		}
		types[m.Type] = true
		if m.Action != "" {
			actions[m.Action] = true
		}
	}
	label := collapsedLabel(group, len(members))
	if top == protection.Protected {
		label = "\U0001F512 " + label
	}
	var ts []string
	for t := range types {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	label += "\n" + strings.Join(ts, ", ") + " (" + top.String() + ")"
	var as []string
	for a := range actions {
		as = append(as, a)
	}
	sort.Strings(as)
	if len(as) > 0 {
		label += "\n" + strings.Join(as, ", ")
	}
	action := ""
	if len(as) == 1 {
		action = as[0]
	}
	return fmt.Sprintf("%s [label=%s, shape=box3d, fillcolor=%s, color=%s, penwidth=%s, class=%s];",
		quoteID("group:"+group), quote(label), quote(fill(top)), quote(ActionColor(action)),
		penwidth(top, action), quote(classes("resource group", top, as)))
}

func penwidth(l protection.Level, action string) string {
	if l == protection.Protected || action != "" && action != "noop" {
		return "2"
	}
	return "1"
}

func classes(kind string, l protection.Level, actions []string) string {
	cs := []string{kind, "level-" + l.String()}
	if l == protection.Protected {
		cs = append(cs, "protected")
	}
	for _, a := range actions {
		if a != "" {
			cs = append(cs, "action-"+a)
		}
	}
	return strings.Join(cs, " ")
}

// quoteID writes a node id as a DOT string: in an id, DOT takes only \"
// as an escape, so a backslash stays as it is.
func quoteID(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// quote writes s as a DOT string: quotes and backslashes escaped (so a key
// holding "\N" is not read as an escape), a newline as a line break.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// ProgramName is the file name of the program that lays DOT out:
// bulwark-graphviz (core/graphsvg/dotlayout), bulwark-graphviz.exe on
// Windows.
func ProgramName() string {
	if runtime.GOOS == "windows" {
		return programBase + ".exe"
	}
	return programBase
}

const programBase = "bulwark-graphviz"

// ProgramInstall says how to install the layout program, for the error a
// missing one gives.
const ProgramInstall = "make install puts it there, or go install github.com/bulwark-iac/bulwark/cmd/bulwark/cmd/bulwark-graphviz@VERSION with the GOBIN bulwark was installed with"

// MissingProgramError is Program's error: no layout program beside the
// running executable.
type MissingProgramError struct {
	Path string // where it was looked for
	Err  error
}

func (e *MissingProgramError) Error() string {
	return fmt.Sprintf("drawing the graph as SVG needs %s beside bulwark, at %s (%v): %s", ProgramName(), e.Path, e.Err, ProgramInstall)
}

func (e *MissingProgramError) Unwrap() error { return e.Err }

// Program returns the layout program beside the running executable (its
// symbolic links followed), the one place it is looked for: never $PATH,
// so what lays the graph out is installed with bulwark, by whoever
// installed bulwark. It is a *MissingProgramError when there is none.
func Program() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("find %s: the running executable: %w", ProgramName(), err)
	}
	p := filepath.Join(filepath.Dir(exe), ProgramName())
	fi, err := os.Stat(p)
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		return "", &MissingProgramError{Path: p, Err: err}
	}
	return p, nil
}

// maxErrOutput is how much of the program's stderr an error quotes.
const maxErrOutput = 4 << 10

// Renderer lays DOT out with Graphviz's dot engine, running the layout
// program (Program) once per drawing: Graphviz's WebAssembly module is
// compiled in that process, not in bulwark's (dotlayout says why). It is
// safe for use by several goroutines: drawings take turns, so a burst of
// requests to the web view runs one layout process at a time.
type Renderer struct {
	program string
	turn    chan struct{}
}

// NewRenderer returns a Renderer that runs program (Program's answer).
func NewRenderer(program string) *Renderer {
	return &Renderer{program: program, turn: make(chan struct{}, 1)}
}

// Render lays out the DOT text and returns SVG.
func (r *Renderer) Render(ctx context.Context, dot string) ([]byte, error) {
	select {
	case r.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.turn }()
	cmd := exec.CommandContext(ctx, r.program)
	cmd.Stdin = strings.NewReader(dot)
	var out bytes.Buffer
	stderr := &limitedBuffer{max: maxErrOutput}
	cmd.Stdout, cmd.Stderr = &out, stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("lay out graph: %s (%w)", strings.TrimPrefix(msg, programBase+": "), err)
		}
		return nil, fmt.Errorf("lay out graph: %s: %w", r.program, err)
	}
	return out.Bytes(), nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string { return b.buf.String() }

// SVG draws g as SVG with the layout program.
func SVG(ctx context.Context, program string, g *Graph, c Collapse) ([]byte, error) {
	return SVGWith(ctx, program, g, Options{Collapse: c})
}

// SVGWith is SVG with per-group expansion and links (DOTWith).
func SVGWith(ctx context.Context, program string, g *Graph, o Options) ([]byte, error) {
	return NewRenderer(program).Render(ctx, g.DOTWith(o))
}
