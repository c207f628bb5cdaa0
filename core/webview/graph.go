package webview

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/bulwark-iac/bulwark/core/graphsvg"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// GraphPage is a stack's dependency graph, drawn from the spec its current
// revision recorded.
type GraphPage struct {
	FormatVersion string `json:"format_version"`
	Stack         string `json:"stack"`
	Revision      int    `json:"revision"`
	File          string `json:"file"`
	// Collapse is how groups are drawn: auto, all or none (?collapse=).
	Collapse string `json:"collapse"`
	// Notes are what the drawing could not know (a for_each over a value
	// the revision did not record, a module call whose files are not
	// recorded).
	Notes []string `json:"notes"`
	// SVG is the picture, Graphviz's SVG without its XML prologue.
	SVG template.HTML `json:"svg"`
	// From says what the picture is drawn from: "spec", the spec text
	// the revision recorded, when the view can read it; "state", the
	// stack's resource records, when the revision keeps its spec sealed
	// (what the CLI writes; the view holds no key).
	From string `json:"from"`
	// Expand are the groups drawn in full though Collapse collapses the
	// others (?expand=GROUP, repeatable).
	Expand []string `json:"expand"`
	// Operation is the operation whose actions the nodes show: the one
	// running now (the lock's live holder), else one left unfinished, whose
	// resume would carry them out; "" when none is pending.
	Operation string `json:"operation,omitempty"`
	// Empty says the stack has no current revision to draw.
	Empty bool `json:"empty"`
}

// errBadQuery is a 400: a query parameter the page does not take.
var errBadQuery = errors.New("bad query")

// graphs lays the graph pages out, one at a time (graphsvg.Renderer),
// with the layout program Options.Graphviz finds on the first graph asked
// for.
type graphs struct {
	find func() (string, error)
	once sync.Once
	r    *graphsvg.Renderer
	err  error
}

func (g *graphs) renderer() (*graphsvg.Renderer, error) {
	g.once.Do(func() {
		find := g.find
		if find == nil {
			find = graphsvg.Program
		}
		var program string
		if program, g.err = find(); g.err == nil {
			g.r = graphsvg.NewRenderer(program)
		}
	})
	return g.r, g.err
}

func (h *handler) graph(ctx context.Context, r *http.Request) (any, error) {
	name := r.PathValue("stack")
	word := r.URL.Query().Get("collapse")
	collapse, err := graphsvg.ParseCollapse(word)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadQuery, err)
	}
	if word == "" {
		word = "auto"
	}
	rec, err := h.src.Spec(ctx, name)
	if err != nil {
		return nil, err
	}
	p := &GraphPage{FormatVersion: FormatVersion, Stack: name, Collapse: word, Notes: []string{}}
	if rec == nil {
		p.Empty = true
		return p, nil
	}
	p.Revision, p.File = rec.Revision, rec.File
	var g *graphsvg.Graph
	if rec.Sealed {
		if g, err = h.stateGraph(ctx, name); err != nil {
			return nil, err
		}
		p.From = "state"
		p.Notes = append(p.Notes, "drawn from the state's records: the revision keeps its spec sealed and the view holds no key, so data entries are not drawn")
	} else {
		var notes []string
		if g, notes, err = specGraph(rec); err != nil {
			return nil, err
		}
		p.From = "spec"
		p.Notes = append(p.Notes, notes...)
	}
	p.Expand = nonNil(r.URL.Query()["expand"])
	groups := g.Groups()
	for _, e := range p.Expand {
		if !slices.Contains(groups, e) {
			return nil, fmt.Errorf("%w: expand %q: no such group in the graph of %s", errBadQuery, e, name)
		}
	}
	if p.Operation, err = h.pendingActions(ctx, name, g); err != nil {
		return nil, err
	}
	if p.Operation != "" {
		p.Notes = append(p.Notes, fmt.Sprintf("each resource is marked with its action in operation %s, not finished", p.Operation))
	}
	rd, err := h.graphs.renderer()
	if err != nil {
		return nil, err
	}
	svg, err := rd.Render(ctx, g.DOTWith(graphsvg.Options{Collapse: collapse, Expand: p.Expand, Link: h.groupLink(r, name, p.Expand)}))
	if err != nil {
		return nil, err
	}
	text := string(svg)
	if i := strings.Index(text, "<svg"); i >= 0 {
		text = text[i:]
	}
	// Graphviz escapes every label it writes into the SVG.
	p.SVG = template.HTML(text)
	return p, nil
}

// stateGraph draws the stack's resource records (graphsvg.FromState).
func (h *handler) stateGraph(ctx context.Context, name string) (*graphsvg.Graph, error) {
	rs, err := h.src.Resources(ctx, name)
	if err != nil {
		return nil, err
	}
	return graphsvg.FromState(name, rs), nil
}

// specGraph draws the spec a revision recorded, readable, and says what it
// could not know.
func specGraph(rec *RecordedSpec) (*graphsvg.Graph, []string, error) {
	sp, err := spec.Parse(rec.File, []byte(rec.Text))
	if err != nil {
		return nil, nil, fmt.Errorf("the spec of revision %d: %w", rec.Revision, err)
	}
	// The recorded values, the sensitive ones left unknown (they are
	// sealed here, and no graph needs a secret).
	vars := map[string]any{}
	for k, v := range rec.Variables {
		if !slices.Contains(rec.Sensitive, k) {
			vars[k] = v
		}
	}
	// A revision recorded since module files are recorded with the spec
	// (spec.Recorded) was parsed with its modules, from the recorded texts:
	// their resources are drawn as any other. An older one's module files
	// are not recorded: each call is drawn as one node, and said so.
	var calls []*spec.ModuleCall
	if _, files, _ := spec.SplitRecorded([]byte(rec.Text)); files == nil {
		calls = sp.Modules
		sp.Modules = nil
	}
	exp, unknown, err := resolve.ExpandUnknown(sp, vars)
	if err != nil {
		return nil, nil, fmt.Errorf("expand the spec of revision %d: %w", rec.Revision, err)
	}
	var notes []string
	for _, n := range unknown {
		notes = append(notes, n.Error())
	}
	g := graphsvg.FromSpec(exp)
	for _, c := range calls {
		g.Nodes = append(g.Nodes, graphsvg.Node{ID: "module." + c.Name, Type: "module " + c.Source})
		notes = append(notes, fmt.Sprintf("module call %s is drawn as one node: its files (%s) are not recorded with the revision", c.Name, c.Source))
	}
	return g, notes, nil
}

// groupLink is the link of a group on the page: the same page with the
// group added to ?expand= (expand) or taken out of it, the collapse word
// and the token kept.
func (h *handler) groupLink(r *http.Request, name string, expanded []string) func(string, bool) string {
	return func(group string, expand bool) string {
		q := url.Values{}
		if c := r.URL.Query().Get("collapse"); c != "" {
			q.Set("collapse", c)
		}
		for _, e := range expanded {
			if e != group {
				q.Add("expand", e)
			}
		}
		if expand {
			q.Add("expand", group)
		}
		if t := r.URL.Query().Get("token"); t != "" && h.opts.Token != "" {
			q.Set("token", t)
		}
		u := "/stacks/" + url.PathEscape(name) + "/graph"
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		return u
	}
}

// pendingActions marks g's nodes with the actions of the stack's pending
// operation: the one the lock's live holder runs, else the newest left
// unfinished. It returns that operation's id, "" when none is pending. The
// actions are the journal's step records (a step's resource and action),
// so the page shows what the operation is doing, not a new plan.
func (h *handler) pendingActions(ctx context.Context, name string, g *graphsvg.Graph) (string, error) {
	st, err := h.src.Status(ctx, name)
	if err != nil {
		return "", err
	}
	op := ""
	switch {
	case len(st.Running) > 0:
		op = st.Running[0]
	case len(st.Unfinished) > 0:
		op = st.Unfinished[len(st.Unfinished)-1]
	default:
		return "", nil
	}
	recs, _, err := h.src.Operation(ctx, name, op)
	if err != nil {
		return "", err
	}
	drawn := map[string]bool{}
	for _, n := range g.Nodes {
		drawn[n.ID] = true
	}
	actions := map[string]string{}
	for _, rec := range recs {
		if rec.Kind == journal.KindStep && rec.Resource != "" && rec.Action != "" && drawn[rec.Resource] {
			actions[rec.Resource] = rec.Action
		}
	}
	g.SetActions(actions, nil)
	return op, nil
}
