package jsonview

import (
	"time"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Status is `bulwark status --json`: what the stack's state records and
// what its journal says is pending, read without the lock.
type Status struct {
	FormatVersion string           `json:"format_version"`
	Stack         string           `json:"stack"`
	Revision      int              `json:"revision"`
	Resources     []StatusResource `json:"resources"`
	Interventions []Intervention   `json:"interventions"`
	LastOperation *Operation       `json:"last_operation"`
	Unfinished    []string         `json:"unfinished"`
	// Running names the operation the lock's live holder runs, which its
	// journal shows as not ended: in progress, not for `bulwark resume`.
	Running []string    `json:"running"`
	Lock    *LockHolder `json:"lock"`
	// JournalProblems names each journal line that is not a record, with
	// its repair (status then exits 1).
	JournalProblems []string `json:"journal_problems"`
	// UnknownCreates are the creates of unfinished operations whose outcome
	// is unknown: of a provider built for Terraform, which takes no
	// idempotency key, so resume stops at each for a person.
	UnknownCreates []UnknownCreate `json:"unknown_creates"`
}

// UnknownCreate is a create whose outcome is unknown, until a person
// imports what it made or says nothing was made (resume --not-created).
type UnknownCreate struct {
	Op       string    `json:"op"`
	Resource string    `json:"resource"`
	Type     string    `json:"type"`
	Provider string    `json:"provider"`
	Source   string    `json:"source"`
	Started  time.Time `json:"started"`
	Replace  bool      `json:"replace"`
}

// StatusResource is one resource the state records.
type StatusResource struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Provider   string `json:"provider"`
	Protection string `json:"protection"`
	ID         string `json:"id"`
	CreatedBy  string `json:"created_by"`
	// Retained: kept by a rollback though the revision it went back to
	// lacks it: still this stack's, never deleted by an apply; a teardown
	// deletes it under its level, `state forget` releases it.
	Retained bool `json:"retained"`
}

// Intervention is a failure that needs a person, until `bulwark ack OP`.
type Intervention struct {
	Op       string    `json:"op"`
	Resource string    `json:"resource"`
	Error    string    `json:"error"`
	Since    time.Time `json:"since"`
}

// Operation is one operation of the journal.
type Operation struct {
	ID     string     `json:"id"`
	Type   string     `json:"type"`
	Status string     `json:"status"`
	Start  time.Time  `json:"start"`
	End    *time.Time `json:"end"`
	Error  string     `json:"error"`
	// User names who ran it ("" when its journal records predate users).
	User string `json:"user"`
}

// LockHolder is who holds the stack's lock.
type LockHolder struct {
	Op    string    `json:"op"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	User  string    `json:"user"`
	Since time.Time `json:"since"`
}

// NewStatus is the document of a status report.
func NewStatus(r *inspect.StatusReport) *Status {
	out := &Status{FormatVersion: FormatVersion, Stack: r.Stack, Revision: r.Revision,
		Resources: []StatusResource{}, Interventions: interventions(r.Interventions),
		Unfinished: list(r.Unfinished), Running: list(r.Running), JournalProblems: list(r.JournalProblems),
		UnknownCreates: []UnknownCreate{}}
	for _, u := range r.UnknownCreates {
		out.UnknownCreates = append(out.UnknownCreates, UnknownCreate(u))
	}
	for _, res := range r.Resources {
		out.Resources = append(out.Resources, StatusResource(res))
	}
	if r.LastOp != nil {
		op := operation(*r.LastOp)
		out.LastOperation = &op
	}
	if h := r.Lock; h != nil {
		out.Lock = &LockHolder{Op: h.Op, PID: h.PID, Host: h.Host, User: h.User, Since: h.Since}
	}
	return out
}

func interventions(is []state.Intervention) []Intervention {
	out := []Intervention{}
	for _, i := range is {
		out = append(out, Intervention(i))
	}
	return out
}

func operation(o inspect.OpSummary) Operation {
	op := Operation{ID: o.ID, Type: o.Type, Status: o.Status, Start: o.Start, Error: o.Error, User: o.User}
	if !o.End.IsZero() {
		end := o.End
		op.End = &end
	}
	return op
}

// History is `bulwark history --json`: the stack's operations and
// revisions, oldest first.
type History struct {
	FormatVersion string             `json:"format_version"`
	Stack         string             `json:"stack"`
	Current       int                `json:"current"`
	Operations    []HistoryOperation `json:"operations"`
	Revisions     []Revision         `json:"revisions"`
}

// HistoryOperation is one line of history: an operation, or a compacted
// run of operations in a row that changed nothing (no-op applies), which
// the journal keeps as one line. Repeated and Last were added in 1.0
// (additive): 1 and null for one operation.
type HistoryOperation struct {
	Operation
	// Repeated is how many operations the line stands for; Operation's
	// id and start are the first's.
	Repeated int `json:"repeated"`
	// Last is the last of them (null when Repeated is 1).
	Last *LastOperation `json:"last"`
}

// LastOperation is the last operation a collapsed history line stands for.
type LastOperation struct {
	ID    string     `json:"id"`
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end"`
}

// Revision is one revision the state keeps.
type Revision struct {
	N        int       `json:"n"`
	Op       string    `json:"op"`
	Time     time.Time `json:"time"`
	File     string    `json:"file"`
	Provider string    `json:"provider"`
	Status   string    `json:"status"`
	User     string    `json:"user"` // who applied it ("" before users were kept)
	Current  bool      `json:"current"`
	// Targets are a partial apply's --target addresses (absent for a
	// whole apply): only they and what they depend on reached this spec.
	Targets []string `json:"targets,omitempty"`
	// Variables are the variable values it was applied with, a sensitive
	// one's as secrets.Mask.
	Variables map[string]any `json:"variables"`
}

// NewHistory is the document of a history report.
func NewHistory(r *inspect.HistoryReport) *History {
	out := &History{FormatVersion: FormatVersion, Stack: r.Stack, Current: r.Current, Operations: []HistoryOperation{}, Revisions: []Revision{}}
	for _, o := range r.Operations {
		h := HistoryOperation{Operation: operation(o), Repeated: max(o.Repeated, 1)}
		if o.Repeated > 1 {
			h.Last = &LastOperation{ID: o.LastID, Start: o.LastStart, End: h.End}
		}
		out.Operations = append(out.Operations, h)
	}
	for _, rv := range r.Revisions {
		out.Revisions = append(out.Revisions, Revision{N: rv.N, Op: rv.Op, Time: rv.Time, File: rv.File, Provider: rv.Provider,
			Status: rv.Status, User: rv.User, Current: rv.Current, Targets: rv.Targets, Variables: object(rv.Variables)})
	}
	return out
}

// Doctor is `bulwark doctor --json`.
type Doctor struct {
	FormatVersion string  `json:"format_version"`
	OK            bool    `json:"ok"`
	Problems      int     `json:"problems"`
	Checks        []Check `json:"checks"`
}

// Check is one thing doctor checked.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

// NewDoctor is the document of doctor's checks.
func NewDoctor(checks []inspect.Check) *Doctor {
	out := &Doctor{FormatVersion: FormatVersion, Checks: []Check{}}
	for _, c := range checks {
		out.Checks = append(out.Checks, Check(c))
		if !c.OK {
			out.Problems++
		}
	}
	out.OK = out.Problems == 0
	return out
}
