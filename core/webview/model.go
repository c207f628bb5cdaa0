package webview

import (
	"slices"
	"sort"
	"time"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
)

// FormatVersion is the version of the /api documents, as docs/json.md
// versions the --json ones.
const FormatVersion = "1.0"

// StackRow is one stack on the list of a backend's stacks.
type StackRow struct {
	Name          string             `json:"name"`
	Resources     int                `json:"resources"`
	Revision      int                `json:"revision"`
	Interventions int                `json:"interventions"`
	LastOperation *inspect.OpSummary `json:"last_operation"`
	Locked        bool               `json:"locked"`
	// Error says why the stack could not be read (the others still are).
	Error string `json:"error"`
}

// StacksPage is `/`.
type StacksPage struct {
	FormatVersion string     `json:"format_version"`
	Stacks        []StackRow `json:"stacks"`
	// Plans are the saved plans the view serves (bulwark ui --plan).
	Plans []PlanRow `json:"plans"`
}

// Resource is one recorded resource on a stack's page.
type Resource struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Provider   string `json:"provider"`
	ID         string `json:"id"`
	Protection string `json:"protection"`
	// Ownership is how the stack came to own it: created, imported or
	// retained (kept by a rollback whose revision lacks it).
	Ownership string `json:"ownership"`
	CreatedBy string `json:"created_by"`
	UpdatedBy string `json:"updated_by"`
	// Deposed names the resource a create-first replacement left behind
	// ("" for none): what the next run deletes.
	DeposedFrom string `json:"deposed_from"`
	// Conflicts are the other stacks on the backend whose state records
	// the same object (same provider source, type and id): a resource has
	// at most one owner (DESIGN.md, "Claims"), so each is a conflict to
	// resolve (state forget in one of them, or import --from).
	Conflicts []Claim `json:"conflicts"`
}

// Claim is another stack's record of a resource.
type Claim struct {
	Stack   string `json:"stack"`
	Address string `json:"address"`
}

// StackPage is `/stacks/NAME`.
type StackPage struct {
	FormatVersion   string               `json:"format_version"`
	Stack           string               `json:"stack"`
	Revision        int                  `json:"revision"`
	Resources       []Resource           `json:"resources"`
	Interventions   []state.Intervention `json:"interventions"`
	Unfinished      []string             `json:"unfinished"`
	Running         []string             `json:"running"`
	Lock            *LockHolder          `json:"lock"`
	LastOperation   *inspect.OpSummary   `json:"last_operation"`
	JournalProblems []string             `json:"journal_problems"`
	// Conflicts counts the resources another stack also records.
	Conflicts int `json:"conflicts"`
	// ClaimProblems name the other stacks whose state could not be read
	// to look for conflicts (the page is shown without them).
	ClaimProblems []string `json:"claim_problems"`
	// Plans are the saved plans of this stack the view serves.
	Plans []PlanRow `json:"plans"`
}

// LockHolder is who holds (or last held) the stack's lock.
type LockHolder struct {
	Op    string    `json:"op"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
	Live  bool      `json:"live"`
}

// Operation is one operation on a stack's history page.
type Operation struct {
	inspect.OpSummary
	// Exit is the exit code its outcome gives (null while it runs).
	Exit *int `json:"exit"`
}

// HistoryPage is `/stacks/NAME/history`.
type HistoryPage struct {
	FormatVersion string                    `json:"format_version"`
	Stack         string                    `json:"stack"`
	Current       int                       `json:"current"`
	Operations    []Operation               `json:"operations"`
	Revisions     []inspect.RevisionSummary `json:"revisions"`
}

// Bar is one phase of one step on the time axis.
type Bar struct {
	Phase  string    `json:"phase"`  // check | execute | verify | compensate
	Status string    `json:"status"` // ok | failed | skipped | not_sent (no work went out) | started (no end recorded)
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Error  string    `json:"error"`
	// Critical: the bar is on the operation's critical path.
	Critical bool `json:"critical"`
	// CausedBy, on a compensate (an undo), names the failed step whose
	// failure started the rollback.
	CausedBy string `json:"caused_by,omitempty"`
	// Left and Width place the bar on the axis, in percent of the
	// operation's span.
	Left  float64 `json:"-"`
	Width float64 `json:"-"`
}

// Duration is how long the phase took.
func (b Bar) Duration() time.Duration { return b.End.Sub(b.Start) }

// Row is one step of an operation: its phases as bars.
type Row struct {
	Step     string `json:"step"`
	Resource string `json:"resource"`
	Action   string `json:"action"`
	Failed   bool   `json:"failed"`
	Bars     []Bar  `json:"phases"`
	// Critical: part of the step is on the critical path.
	Critical bool `json:"critical"`
	// UndoneFor names the failed step whose failure undid this one (its
	// compensate ran in the rollback), "" when it was not undone.
	UndoneFor string `json:"undone_for,omitempty"`
}

// TimelinePage is `/stacks/NAME/operations/ID`.
type TimelinePage struct {
	FormatVersion string    `json:"format_version"`
	Stack         string    `json:"stack"`
	Op            string    `json:"op"`
	Type          string    `json:"type"`
	Status        string    `json:"status"`
	Exit          *int      `json:"exit"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	Error         string    `json:"error"`
	// Compacted: the journal keeps only the operation's summary (an old
	// finished one, journal.Compact), so its steps are gone.
	Compacted bool `json:"compacted"`
	// Running: the journal has no end record for it (yet), and its
	// process holds the lock; Unfinished: no end record, and its process
	// is gone (a resume finishes it).
	Running    bool  `json:"running"`
	Unfinished bool  `json:"unfinished"`
	Steps      []Row `json:"steps"`
	// CriticalPath is the chain of steps whose durations, with the waits
	// between them, decided the operation's length, first to last (see
	// criticalPath); CriticalDuration is the time spent in its steps.
	CriticalPath     []PathStep    `json:"critical_path"`
	CriticalDuration time.Duration `json:"-"`
	CriticalMS       int64         `json:"critical_duration_ms"`
	// JournalProblems names the journal's lines that are not records
	// (the rest are read).
	JournalProblems []string `json:"journal_problems"`
}

// Duration is the operation's span on the axis.
func (p TimelinePage) Duration() time.Duration { return p.End.Sub(p.Start) }

// ExitFor is the exit code an operation that ended with status gives
// (docs/architecture.md, "Exit codes"); nil while it runs or for a status it
// does not know.
func ExitFor(status string) *int {
	code, ok := map[string]int{
		journal.OpSucceeded:          0,
		journal.OpFailed:             1,
		journal.OpRefused:            3,
		journal.OpCompensated:        11,
		journal.OpIntervention:       12,
		journal.OpRollbackIncomplete: 13,
	}[status]
	if !ok {
		return nil
	}
	return &code
}

func ownership(r *state.Resource) string {
	switch {
	case r.RetainedBy != "":
		return "retained"
	case r.Imported:
		return "imported"
	default:
		return "created"
	}
}

func newStackPage(st *inspect.StatusReport, rs []*state.Resource) *StackPage {
	p := &StackPage{FormatVersion: FormatVersion, Stack: st.Stack, Revision: st.Revision, Resources: []Resource{},
		Interventions: st.Interventions, Unfinished: nonNil(st.Unfinished), Running: nonNil(st.Running),
		LastOperation: st.LastOp, JournalProblems: nonNil(st.JournalProblems), ClaimProblems: []string{}}
	if p.Interventions == nil {
		p.Interventions = []state.Intervention{}
	}
	for _, r := range rs {
		p.Resources = append(p.Resources, Resource{Name: r.Name, Type: r.Type, Provider: r.Provider, ID: r.ID,
			Protection: r.Protection.String(), Ownership: ownership(r), CreatedBy: r.CreatedBy, UpdatedBy: r.UpdatedBy, DeposedFrom: r.DeposedFrom,
			Conflicts: []Claim{}})
	}
	if h := st.Lock; h != nil {
		p.Lock = &LockHolder{Op: h.Op, PID: h.PID, Host: h.Host, Since: h.Since, Live: st.LockLive}
	}
	return p
}

func newHistoryPage(h *inspect.HistoryReport) *HistoryPage {
	p := &HistoryPage{FormatVersion: FormatVersion, Stack: h.Stack, Current: h.Current, Operations: []Operation{}, Revisions: h.Revisions}
	if p.Revisions == nil {
		p.Revisions = []inspect.RevisionSummary{}
	}
	// Newest first, as a run page lists runs.
	for i := len(h.Operations) - 1; i >= 0; i-- {
		o := h.Operations[i]
		p.Operations = append(p.Operations, Operation{OpSummary: o, Exit: ExitFor(o.Status)})
	}
	slices.Reverse(p.Revisions)
	return p
}

// newTimeline lays out op's records (its own and its steps') on a time
// axis: one row per step, one bar per phase, placed from the journal's
// timestamps. A phase that started and has no end (a running or
// interrupted operation) ends at the operation's end, or its last record.
//
// deps are the dependencies the stack's state records (resource name → the
// names it depends on), for the critical path; nil for none.
func newTimeline(stackName, op string, recs []journal.Record, deps map[string][]string) *TimelinePage {
	p := &TimelinePage{FormatVersion: FormatVersion, Stack: stackName, Op: op, Steps: []Row{}, JournalProblems: []string{}}
	rows := map[string]*Row{}
	var order []string
	open := map[[2]string]int{} // step, phase -> index of its open bar
	var last time.Time
	for _, r := range recs {
		if r.Time.After(last) {
			last = r.Time
		}
		switch r.Kind {
		case journal.KindSummary:
			p.Compacted = true
			p.Type, p.Status, p.Error, p.Start, p.End = r.Type, r.Status, r.Error, r.Time, r.End
		case journal.KindOp:
			if p.Start.IsZero() {
				p.Start = r.Time
			}
			if r.Type != "" {
				p.Type = r.Type
			}
			p.Status, p.Error = r.Status, r.Error
			if r.Status != journal.OpRunning {
				p.End = r.Time
			}
		case journal.KindStep:
			id := r.Step
			if id == "" {
				id = r.Resource + "/" + r.Action
			}
			row := rows[id]
			if row == nil {
				row = &Row{Step: id, Resource: r.Resource, Action: r.Action}
				rows[id] = row
				order = append(order, id)
			}
			key := [2]string{id, r.Phase}
			if r.Status == journal.StepStarted {
				open[key] = len(row.Bars)
				row.Bars = append(row.Bars, Bar{Phase: r.Phase, Status: journal.StepStarted, Start: r.Time})
				continue
			}
			if i, ok := open[key]; ok {
				row.Bars[i].Status, row.Bars[i].End, row.Bars[i].Error = r.Status, r.Time, r.Error
				if r.Status == journal.StepNotSent {
					// Its start was journaled while it waited for a write
					// slot, and the run stopped before the call went out:
					// no work ran, so no span of work is drawn, only a
					// mark where it stopped (and the critical path skips it).
					row.Bars[i].Start = r.Time
				}
				delete(open, key)
			} else {
				row.Bars = append(row.Bars, Bar{Phase: r.Phase, Status: r.Status, Start: r.Time, End: r.Time, Error: r.Error})
			}
			if r.Status == journal.StepFailed {
				row.Failed = true
			}
		}
	}
	if p.End.IsZero() {
		p.End = last
	}
	if p.Start.IsZero() {
		p.Start = p.End
	}
	span := p.End.Sub(p.Start)
	for _, id := range order {
		row := rows[id]
		for i := range row.Bars {
			b := &row.Bars[i]
			if b.End.IsZero() {
				b.End = p.End
			}
			if span > 0 {
				b.Left = 100 * float64(b.Start.Sub(p.Start)) / float64(span)
				b.Width = 100 * float64(b.End.Sub(b.Start)) / float64(span)
			}
			b.Left = min(max(b.Left, 0), 100)
			b.Width = min(max(b.Width, 0.4), 100-b.Left) // a zero-length phase stays visible
		}
		p.Steps = append(p.Steps, *row)
	}
	sort.SliceStable(p.Steps, func(i, j int) bool { return first(p.Steps[i]).Before(first(p.Steps[j])) })
	p.Exit = ExitFor(p.Status)
	p.Running = !p.Compacted && (p.Status == journal.OpRunning || p.Status == "")
	linkUndos(p)
	p.CriticalPath = criticalPath(p, deps)
	for _, s := range p.CriticalPath {
		p.CriticalDuration += s.Duration
	}
	p.CriticalMS = p.CriticalDuration.Milliseconds()
	return p
}

func first(r Row) time.Time {
	if len(r.Bars) == 0 {
		return time.Time{}
	}
	return r.Bars[0].Start
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
