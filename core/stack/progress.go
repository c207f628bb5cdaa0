package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/secrets"
)

// progress turns engine events into lifecycle events (JSON) and readable
// lines for a person. On a terminal (live) it also keeps a status line
// showing what is running and for how long, redrawn while steps run.
type progress struct {
	mu     sync.Mutex
	out    io.Writer
	events *events.Writer
	levels map[string]string // protection per resource, for messages
	red    *secrets.Redactor // masks sensitive values in errors
	color  bool
	live   bool
	now    func() time.Time

	running map[string]time.Time // resource -> when its Execute started
	// reading is what the plan's reads are doing (readsStart to readsEnd):
	// resource -> when its Read started, and how many of how many are done.
	reading             map[string]time.Time
	readDone, readTotal int
	drawn               bool // a status line is on screen
	stop                chan struct{}

	// The operation under way (opStart to opEnd): when it started and what
	// its resource steps did, for its end line.
	opStarted time.Time
	tally     events.Summary
}

var _ engine.Observer = (*progress)(nil)

var symbols = map[string]string{
	"create": "+", "update": "~", "replace": "±", "delete": "-", "verify": "✓", "preserve": "=", "refuse": "!",
}

const (
	ansiReset  = "\033[0m"
	ansiGreen  = "\033[32m"
	ansiRed    = "\033[31m"
	ansiYellow = "\033[33m"
	ansiDim    = "\033[2m"
	ansiCyan   = "\033[36m"
	ansiClear  = "\r\033[K"
)

func newProgress(out io.Writer, ev *events.Writer, color, live bool, now func() time.Time) *progress {
	return &progress{out: out, events: ev, color: color, live: live, now: now, running: map[string]time.Time{}}
}

func (p *progress) paint(code, s string) string {
	if !p.color {
		return s
	}
	return code + s + ansiReset
}

// start begins redrawing the status line (live only); end stops it.
func (p *progress) start() {
	if !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		return
	}
	p.stop = make(chan struct{})
	go func(stop chan struct{}) {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.redraw()
				p.mu.Unlock()
			}
		}
	}(p.stop)
}

func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.clearLine()
}

// redraw writes the status line; p.mu is held.
func (p *progress) redraw() {
	switch {
	case !p.live:
		p.clearLine()
	case len(p.running) > 0:
		fmt.Fprint(p.out, ansiClear+p.paint(ansiDim, "  … running: "+p.since(p.running, 0)))
		p.drawn = true
	case p.readTotal > 0:
		// The plan's reads: how many are done, and the slowest in flight.
		fmt.Fprint(p.out, ansiClear+p.paint(ansiCyan, fmt.Sprintf("  … reading %d/%d", p.readDone, p.readTotal))+
			p.paint(ansiDim, ": "+p.since(p.reading, 5)))
		p.drawn = true
	default:
		p.clearLine()
	}
}

// since lists names with how long each has run, longest first then by name,
// at most limit of them (0: all) and how many more.
func (p *progress) since(started map[string]time.Time, limit int) string {
	names := make([]string, 0, len(started))
	for n := range started {
		names = append(names, n)
	}
	now := p.now()
	if limit > 0 {
		sort.Slice(names, func(i, j int) bool {
			a, b := started[names[i]], started[names[j]]
			if !a.Equal(b) {
				return a.Before(b)
			}
			return names[i] < names[j]
		})
	} else {
		sort.Strings(names)
	}
	more := 0
	if limit > 0 && len(names) > limit {
		more, names = len(names)-limit, names[:limit]
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.1fs", n, now.Sub(started[n]).Seconds())
	}
	s := strings.Join(parts, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// readsStart begins the live line of a plan's n reads (on a terminal only:
// nothing is printed otherwise); readsEnd clears it. Nil-safe.
func (p *progress) readsStart(n int) {
	if p == nil || !p.live || n == 0 {
		return
	}
	p.mu.Lock()
	p.reading, p.readDone, p.readTotal = map[string]time.Time{}, 0, n
	p.mu.Unlock()
	p.start()
}

func (p *progress) readBegin(name string) {
	if p == nil || !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reading != nil {
		p.reading[name] = p.now()
	}
}

func (p *progress) readEnd(name string) {
	if p == nil || !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reading != nil {
		delete(p.reading, name)
		p.readDone++
	}
}

func (p *progress) readsEnd() {
	if p == nil || !p.live {
		return
	}
	p.mu.Lock()
	p.reading, p.readDone, p.readTotal = nil, 0, 0
	p.mu.Unlock()
	p.end()
}

func (p *progress) clearLine() {
	if p.drawn {
		fmt.Fprint(p.out, ansiClear)
		p.drawn = false
	}
}

func (p *progress) Observe(e engine.Event) {
	if e.Resource != "" && e.Status != "started" {
		ev := events.Event{Op: e.Op, Resource: e.Resource, Type: e.Type, Action: e.Action, Status: e.Status, DurationMS: e.Duration.Milliseconds(), Undo: e.Undo}
		if e.Err != nil {
			ev.Error = p.red.Redact(engine.OneLine(e.Err.Error()))
		}
		p.events.Write(ev)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Resource != "" {
		p.count(e)
	}
	p.clearLine()
	defer p.redraw()
	e.Err = p.red.Error(e.Err)
	if e.Resource == "" {
		// An update's own steps (verify, compatibility, backup, stage) are
		// not resource transitions: no lifecycle event, one line for people.
		switch {
		case e.Status == "failed":
			fmt.Fprintf(p.out, "  %s %-16s FAILED: %v\n", p.paint(ansiRed, "✗"), e.Action, e.Err)
		case e.Status == "ok":
			fmt.Fprintf(p.out, "  · %-16s ok\n", e.Action)
		}
		return
	}
	sym := symbols[e.Action]
	if sym == "" {
		sym = "·"
	}
	switch e.Status {
	case "started":
		p.running[e.Resource] = p.now()
	case "skipped":
		delete(p.running, e.Resource)
		if e.Undo {
			fmt.Fprintf(p.out, "  · %-16s nothing to undo\n", e.Resource)
			return
		}
		fmt.Fprintf(p.out, "  %s %-16s %s\n", p.paint(ansiDim, "="), e.Resource, p.paint(ansiDim, "already in place, skipped"))
	case "ok":
		if e.Action == "verify" {
			return // a verified step reads as one line
		}
		delete(p.running, e.Resource)
		if e.Action == "preserve" {
			fmt.Fprintf(p.out, "  %s %-16s %s\n", p.paint(ansiYellow, "="), e.Resource, p.paint(ansiYellow, "preserved ("+p.levels[e.Resource]+": a rollback keeps it)"))
			return
		}
		fmt.Fprintf(p.out, "  %s %-16s %s ok (%s)\n", p.paint(ansiGreen, sym), e.Resource, e.Action, e.Duration.Round(time.Millisecond))
	case "failed":
		delete(p.running, e.Resource)
		if errors.Is(e.Err, context.Canceled) {
			// A second interrupt cancelled the call: not a failure of the
			// resource, and resume finishes the step.
			fmt.Fprintf(p.out, "  %s %-16s %s %s\n", p.paint(ansiYellow, "■"), e.Resource, e.Action, p.paint(ansiYellow, "stopped by the interrupt (resume finishes it)"))
			return
		}
		fmt.Fprintf(p.out, "  %s %-16s %s FAILED: %v\n", p.paint(ansiRed, "✗"), e.Resource, e.Action, e.Err)
	}
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

// opStart writes the lifecycle line of an operation's start.
func (p *progress) opStart(op, typ string) {
	p.mu.Lock()
	p.opStarted, p.tally = p.now(), events.Summary{}
	p.mu.Unlock()
	p.events.WriteOperation(events.Operation{Op: op, Type: typ, Status: "running"})
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
	p.events.WriteOperation(line)
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLine()
	fmt.Fprintf(p.out, format, args...)
}

// refuse reports resources a protection refusal names.
// conflict reports the resources an ownership conflict refuses: an event
// each (action refuse) and a line for a person.
func (p *progress) conflict(op string, cs []plan.Change) {
	for _, c := range cs {
		p.events.Write(events.Event{Op: op, Resource: c.Resource, Type: c.Type, Action: "refuse", Status: "failed", Error: "conflict: " + c.Reason})
		p.mu.Lock()
		p.tally.Refused++
		p.mu.Unlock()
		p.printf("  %s %-16s conflict: %s\n", p.paint(ansiRed, "!"), c.Resource, c.Reason)
	}
}

func (p *progress) refuse(op string, names []string, types map[string]string) {
	for _, n := range names {
		p.events.Write(events.Event{Op: op, Resource: n, Type: types[n], Action: "refuse", Status: "failed", Error: "protected resource"})
		p.mu.Lock()
		p.tally.Refused++
		p.mu.Unlock()
		p.printf("  %s %-16s protected: refusing to delete\n", p.paint(ansiRed, "!"), n)
	}
}
