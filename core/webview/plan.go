package webview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/bulwark-iac/bulwark/core/plandoc"
	"github.com/bulwark-iac/bulwark/core/secrets"
)

// PlanMeta is what the saved plan's file says of itself.
type PlanMeta struct {
	File           string
	Operation      string
	CreatedAt      time.Time
	BulwarkVersion string
	SpecFile       string
	Serial         int64
	Lineage        string
}

// AttrRow is one attribute of a change: its value before and after.
type AttrRow struct {
	Name      string
	Before    any
	After     any
	HasBefore bool
	HasAfter  bool
	Changed   bool
	ForceNew  bool
	Sensitive bool
	Unknown   bool
}

// PlanResource is one resource on the page: the change and its rows.
type PlanResource struct {
	plandoc.ResourceChange
	// Attrs are the attributes the change writes (a create's or delete's:
	// all; an update's or replace's: those whose value changes).
	Attrs []AttrRow
	// Refused: the plan's refusal names it.
	Refused bool
}

// LevelCount is how many of the plan's resources stand at a level.
type LevelCount struct {
	Level string
	Count int
}

// PlanPage is a saved plan as a review page (`bulwark show FILE --html`).
type PlanPage struct {
	Meta PlanMeta
	// Doc is the saved plan's `show FILE --json` document, read back from
	// that JSON: the page shows the very values --json prints, sensitive
	// ones already secrets.Mask, and masks nothing by itself.
	Doc       plandoc.Plan
	Resources []PlanResource
	// Replacements are the plan's replaces: each deletes the resource the
	// state records under its address (in the cleanup phase when created
	// first, before the new one otherwise).
	Replacements []PlanResource
	Levels       []LevelCount
}

// NewPlanPage lays out doc, the bytes `show FILE --json` prints for the
// saved plan meta describes.
func NewPlanPage(meta PlanMeta, doc []byte) (*PlanPage, error) {
	p := &PlanPage{Meta: meta}
	if err := json.Unmarshal(doc, &p.Doc); err != nil {
		return nil, fmt.Errorf("read the plan's document: %w", err)
	}
	refused := map[string]bool{}
	for _, r := range []*plandoc.Refusal{p.Doc.Refused, p.Doc.Conflict} {
		if r != nil {
			for _, n := range r.Resources {
				refused[n] = true
			}
		}
	}
	levels := map[string]int{}
	for _, c := range p.Doc.ResourceChanges {
		r := PlanResource{ResourceChange: c, Attrs: attrRows(c), Refused: refused[c.Address]}
		levels[c.Protection]++
		p.Resources = append(p.Resources, r)
		if c.Action == plandoc.ActionReplace {
			p.Replacements = append(p.Replacements, r)
		}
	}
	for _, l := range []string{"protected", "durable", "ephemeral"} {
		if n := levels[l]; n > 0 {
			p.Levels = append(p.Levels, LevelCount{Level: l, Count: n})
		}
	}
	return p, nil
}

func attrRows(c plandoc.ResourceChange) []AttrRow {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, k := range s {
			m[k] = true
		}
		return m
	}
	force, sens, unknown, changed := in(c.ForceNew), in(c.Sensitive), in(c.Unknown), in(c.Changed)
	keys := map[string]bool{}
	for k := range c.Before {
		keys[k] = true
	}
	for k := range c.After {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var rows []AttrRow
	for _, k := range names {
		b, hb := c.Before[k]
		a, ha := c.After[k]
		diff := hb != ha || !reflect.DeepEqual(a, b) || changed[k] || unknown[k]
		switch c.Action {
		case plandoc.ActionCreate, plandoc.ActionDelete, plandoc.ActionImport:
		default:
			if !diff {
				continue
			}
		}
		rows = append(rows, AttrRow{Name: k, Before: b, After: a, HasBefore: hb, HasAfter: ha, Changed: diff,
			ForceNew: force[k], Sensitive: sens[k], Unknown: unknown[k]})
	}
	return rows
}

// RenderPlan writes p as one self-contained HTML document: its CSS inline,
// no script, nothing fetched; every byte through red, as every line
// bulwark prints.
func RenderPlan(w io.Writer, p *PlanPage, red *secrets.Redactor) error {
	if red == nil {
		red = secrets.NewRedactor()
	}
	css, err := assets.ReadFile("assets/view.css")
	if err != nil {
		return fmt.Errorf("read the view's CSS: %w", err)
	}
	t, err := template.New("standalone.html").Funcs(funcs()).ParseFS(assets, "assets/standalone.html", "assets/plan.html")
	if err != nil {
		return fmt.Errorf("parse the plan page: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, standalone{CSS: template.CSS(css), Page: p}); err != nil {
		return fmt.Errorf("render the plan page: %w", err)
	}
	_, err = io.WriteString(w, red.Redact(b.String()))
	return err
}

// standalone is what the one-file layout is given.
type standalone struct {
	CSS  template.CSS
	Page *PlanPage
}

// SavedPlan is a saved plan the view serves: its page, and Doc, the
// `show FILE --json` document the page was laid out from (served as is at
// /api/plans/N, through the redactor).
type SavedPlan struct {
	Page *PlanPage
	Doc  []byte
}

// NewSavedPlan lays out doc, the bytes `show FILE --json` prints for the
// saved plan meta describes, for the view to serve.
func NewSavedPlan(meta PlanMeta, doc []byte) (SavedPlan, error) {
	p, err := NewPlanPage(meta, doc)
	if err != nil {
		return SavedPlan{}, err
	}
	return SavedPlan{Page: p, Doc: bytes.Clone(doc)}, nil
}

// PlanRow is one saved plan on the stacks page and its stack's page.
type PlanRow struct {
	// N is its number: the page is /plans/N, the document /api/plans/N.
	N         int                 `json:"n"`
	File      string              `json:"file"`
	Stack     string              `json:"stack"`
	Operation string              `json:"operation"`
	CreatedAt time.Time           `json:"created_at"`
	Summary   plandoc.PlanSummary `json:"summary"`
	// Refused: an apply of it would stop before any step (refused or in
	// conflict).
	Refused bool `json:"refused"`
}

// errNoPlan is a 404: no saved plan has that number.
var errNoPlan = errors.New("no saved plan with that number (bulwark ui --plan FILE serves one)")

// planRows are the saved plans of stack (every one when stack is "").
func (h *handler) planRows(stack string) []PlanRow {
	rows := []PlanRow{}
	for i, sp := range h.opts.Plans {
		d := sp.Page.Doc
		if stack != "" && d.Stack != stack {
			continue
		}
		rows = append(rows, PlanRow{N: i + 1, File: sp.Page.Meta.File, Stack: d.Stack, Operation: sp.Page.Meta.Operation,
			CreatedAt: sp.Page.Meta.CreatedAt, Summary: d.Summary, Refused: d.Refused != nil || d.Conflict != nil})
	}
	return rows
}

// savedPlan is the plan the request's {n} numbers.
func (h *handler) savedPlan(r *http.Request) (SavedPlan, error) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 || n > len(h.opts.Plans) {
		return SavedPlan{}, fmt.Errorf("plan %q: %w", r.PathValue("n"), errNoPlan)
	}
	return h.opts.Plans[n-1], nil
}

// plan is /plans/N: the page `show FILE --html` writes, in the view's
// layout.
func (h *handler) plan(_ context.Context, r *http.Request) (any, error) {
	sp, err := h.savedPlan(r)
	if err != nil {
		return nil, err
	}
	return sp.Page, nil
}

// planDoc is /api/plans/N: the `show FILE --json` document, as it printed.
func (h *handler) planDoc(w http.ResponseWriter, r *http.Request) {
	sp, err := h.savedPlan(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.write(w, "application/json", sp.Doc)
}
