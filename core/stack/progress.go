package stack

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// progress is an operation's reporting: it turns engine events into
// lifecycle events (JSON, to Options.Events) and hands a person's view
// (Options.Reporter) every transition, masked. It renders nothing: the
// lines, the live status line and the colours are the Reporter's.
type progress struct {
	mu     sync.Mutex
	r      Reporter
	events *events.Writer
	levels map[string]string // protection per resource, for messages
	red    *secrets.Redactor // masks sensitive values in errors
	now    func() time.Time

	// The operation under way (opStart to opEnd): when it started and what
	// its resource steps did, for its end line.
	opStarted time.Time
	tally     events.Summary
	// moveFrom is, for a state mv, its new address -> its old one: the
	// from of its move event. Set before the operation runs.
	moveFrom map[string]string
	// targets are the run's --target addresses: its operation lines carry
	// them, and the warning that it is partial.
	targets []string
}

// partial adds a targeted run's targets and warning to an operation line.
func (p *progress) partial(line *events.Operation) {
	if len(p.targets) > 0 {
		line.Targets, line.Warnings = p.targets, []string{PartialWarning}
	}
}

var (
	_ engine.Observer  = (*progress)(nil)
	_ observe.Progress = (*progress)(nil)
)

func newProgress(r Reporter, ev *events.Writer, red *secrets.Redactor, now func() time.Time) *progress {
	if r == nil {
		r = NopReporter{}
	}
	return &progress{r: r, events: ev, red: red, now: now}
}

// start and end bracket an operation's steps.
func (p *progress) start() { p.r.StepsStarted() }
func (p *progress) end()   { p.r.StepsEnded() }

// ReadsStarted begins a plan's n reads (none: nothing is reported);
// ReadStarted and ReadEnded bracket each, ReadsEnded ends them. Nil-safe.
// They make progress the observe.Progress of the session's reads.
func (p *progress) ReadsStarted(n int) {
	if p == nil || n == 0 {
		return
	}
	p.r.ReadsStarted(n)
}

func (p *progress) ReadStarted(name string) {
	if p != nil {
		p.r.ReadStarted(name)
	}
}

func (p *progress) ReadEnded(name string) {
	if p != nil {
		p.r.ReadEnded(name)
	}
}

func (p *progress) ReadsEnded() {
	if p != nil {
		p.r.ReadsEnded()
	}
}

func (p *progress) Observe(e engine.Event) {
	// A start, and the end of a step that sent nothing (not_sent: as a
	// step stopped before its start, it has no line), are not events.
	if e.Resource != "" && e.Status != "started" && e.Status != journal.StepNotSent {
		ev := events.Event{Op: e.Op, Resource: e.Resource, Type: e.Type, Action: e.Action, Status: e.Status, DurationMS: e.Duration.Milliseconds(), Undo: e.Undo}
		if e.Action == "move" {
			ev.From = p.moveFrom[e.Resource]
		}
		if e.Err != nil {
			ev.Error = p.red.Redact(engine.OneLine(e.Err.Error()))
		}
		p.events.Write(ev)
	}
	p.mu.Lock()
	if e.Resource != "" {
		p.count(e)
	}
	level := p.levels[e.Resource]
	p.mu.Unlock()
	e.Err = p.red.Error(e.Err)
	p.r.Step(e, level)
}

// count adds a resource step's end to the operation's tally; p.mu is held.
func (p *progress) count(e engine.Event) {
	t := &p.tally
	switch {
	case e.Status == "failed":
		t.Failed++
	case e.Status == "skipped" && !e.Undo:
		t.Unchanged++
	case e.Status != "ok" || e.Action == "verify":
	case e.Action == "preserve":
		t.Preserved++
	case e.Undo:
		t.RolledBack++
	default:
		switch e.Action {
		case "create":
			t.Created++
		case "update":
			t.Updated++
		case "replace":
			t.Replaced++
		case "delete":
			t.Deleted++
		case "import":
			t.Imported++
		case "forget":
			t.Forgotten++
		}
	}
}

// moved writes an event for each record the spec's moved: and removed:
// entries renamed or forgot, and counts the forgotten.
func (p *progress) moved(op string, moves []Move, forgets []Forget) {
	for _, m := range moves {
		p.events.Write(events.Event{Op: op, Resource: m.To, From: m.From, Type: m.Type, Action: "move", Status: "ok"})
	}
	for _, f := range forgets {
		p.events.Write(events.Event{Op: op, Resource: f.Address, Type: f.Type, Action: "forget", Status: "ok"})
	}
	p.mu.Lock()
	p.tally.Forgotten += len(forgets)
	p.mu.Unlock()
}

// opStart writes the lifecycle line of an operation's start.
func (p *progress) opStart(op, typ string) {
	p.mu.Lock()
	p.opStarted, p.tally = p.now(), events.Summary{}
	p.mu.Unlock()
	line := events.Operation{Op: op, Type: typ, Status: "running"}
	p.partial(&line)
	p.events.WriteOperation(line)
	p.r.OperationStarted(op, typ)
}

// opEnd writes the lifecycle line of an operation's end: its outcome, the
// exit code it means and what its steps did.
func (p *progress) opEnd(res *Result) {
	p.opEndLine(res.Op, res.Type, res.Outcome.String(), ExitCode(res, nil), res.Err)
}

// opRefused writes the end line of an operation refused before any step.
func (p *progress) opRefused(op, typ string, err error) {
	p.opEndLine(op, typ, "refused", ExitCode(nil, err), err)
}

func (p *progress) opEndLine(op, typ, status string, exit int, err error) {
	p.mu.Lock()
	sum, took := p.tally, p.now().Sub(p.opStarted)
	p.mu.Unlock()
	line := events.Operation{Op: op, Type: typ, Status: status, Exit: &exit, Summary: &sum, DurationMS: took.Milliseconds()}
	if err != nil {
		line.Error = p.red.Redact(engine.OneLine(err.Error()))
	}
	p.partial(&line)
	p.events.WriteOperation(line)
	p.r.OperationEnded(op, typ, status, exit, p.red.Error(err))
}

// dataRead writes the lifecycle line of a data entry's read, ended after
// took with err (nil: ok). err is masked as a step's error is; no value
// read is written.
func (p *progress) dataRead(op string, d *spec.Data, took time.Duration, err error) {
	if p == nil {
		return
	}
	line := events.DataRead{Op: op, Name: d.Name, Type: d.Type, Provider: d.Provider, Status: "ok", DurationMS: took.Milliseconds()}
	if err != nil {
		line.Status, line.Error = "failed", p.red.Redact(engine.OneLine(err.Error()))
	}
	p.events.WriteData(line)
}

// printf hands the view one line for a person (format ends in a newline,
// which the Reporter's Note leaves out).
func (p *progress) printf(format string, args ...any) {
	p.r.Note(strings.TrimSuffix(fmt.Sprintf(format, args...), "\n"))
}

// conflict reports the resources an ownership conflict refuses: an event
// each (action refuse) and the view's line.
func (p *progress) conflict(op string, cs []plan.Change) {
	for _, c := range cs {
		p.events.Write(events.Event{Op: op, Resource: c.Resource, Type: c.Type, Action: "refuse", Status: "failed", Error: "conflict: " + c.Reason})
		p.mu.Lock()
		p.tally.Refused++
		p.mu.Unlock()
		p.r.Conflict(op, c)
	}
}

// refuse reports resources a protection refusal names.
func (p *progress) refuse(op string, cs []plan.Change) {
	for _, c := range cs {
		why := "protected resource"
		if c.Ownership == plan.Gone {
			why = "protected resource, not found: its record is kept"
		}
		p.events.Write(events.Event{Op: op, Resource: c.Resource, Type: c.Type, Action: "refuse", Status: "failed", Error: why})
		p.mu.Lock()
		p.tally.Refused++
		p.mu.Unlock()
		p.r.Refused(op, c)
	}
}
