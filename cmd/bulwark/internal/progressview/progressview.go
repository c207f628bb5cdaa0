// Package progressview draws an operation's progress for a person: the
// stack.Reporter the commands hand core. Core reports through hooks and
// writes nothing itself; this view turns them into lines (a mark per step,
// coloured on a terminal unless NO_COLOR) and, on a terminal (live), a
// status line of what is running or being read and for how long, redrawn
// while steps run and cleared before any other line.
package progressview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/style"
	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// View is the human progress view.
type View struct {
	mu    sync.Mutex
	out   io.Writer
	color bool
	live  bool
	now   func() time.Time

	running map[string]time.Time // resource -> when its Execute started
	// reading is what the plan's reads are doing (ReadsStarted to
	// ReadsEnded): resource -> when its Read started, and how many of how
	// many are done.
	reading             map[string]time.Time
	readDone, readTotal int
	drawn               bool   // a status line is on screen
	line                []byte // the line being written (okLine), reused
	stop                chan struct{}
}

var _ stack.Reporter = (*View)(nil)

// New makes a view writing to out: in colour when color, with the live
// status line when live (a terminal); now is the clock (nil: time.Now).
func New(out io.Writer, color, live bool, now func() time.Time) *View {
	if now == nil {
		now = time.Now
	}
	return &View{out: out, color: color, live: live, now: now, running: map[string]time.Time{}}
}

// paint is s in colour code when the view is in colour. The colours and
// the marks of the steps are the plan's (internal/style).
func (p *View) paint(code, s string) string { return style.Paint(p.color, code, s) }

// OperationStarted and OperationEnded draw nothing: an operation's header
// is a Note, and its report is the command's.
func (p *View) OperationStarted(op, typ string)                            {}
func (p *View) OperationEnded(op, typ, status string, exit int, err error) {}

// StepsStarted begins redrawing the status line (live only); StepsEnded
// stops it.
func (p *View) StepsStarted() {
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

func (p *View) StepsEnded() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.clearLine()
}

// redraw writes the status line; p.mu is held.
func (p *View) redraw() {
	switch {
	case !p.live:
		p.clearLine()
	case len(p.running) > 0:
		fmt.Fprint(p.out, style.ClearLine+p.paint(style.Dim, "  … running: "+p.since(p.running, 0)))
		p.drawn = true
	case p.readTotal > 0:
		// The plan's reads: how many are done, and the slowest in flight.
		fmt.Fprint(p.out, style.ClearLine+p.paint(style.Cyan, fmt.Sprintf("  … reading %d/%d", p.readDone, p.readTotal))+
			p.paint(style.Dim, ": "+p.since(p.reading, 5)))
		p.drawn = true
	default:
		p.clearLine()
	}
}

// since lists names with how long each has run, longest first then by name,
// at most limit of them (0: all) and how many more.
func (p *View) since(started map[string]time.Time, limit int) string {
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
		parts[i] = fmt.Sprintf("%s %.1fs", printable.Line(n), now.Sub(started[n]).Seconds())
	}
	s := strings.Join(parts, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// ReadsStarted begins the live line of a plan's n reads (on a terminal
// only: nothing is printed otherwise); ReadsEnded clears it.
func (p *View) ReadsStarted(n int) {
	if !p.live || n == 0 {
		return
	}
	p.mu.Lock()
	p.reading, p.readDone, p.readTotal = map[string]time.Time{}, 0, n
	p.mu.Unlock()
	p.StepsStarted()
}

func (p *View) ReadStarted(name string) {
	if !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reading != nil {
		p.reading[name] = p.now()
	}
}

func (p *View) ReadEnded(name string) {
	if !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reading != nil {
		delete(p.reading, name)
		p.readDone++
	}
}

func (p *View) ReadsEnded() {
	if !p.live {
		return
	}
	p.mu.Lock()
	p.reading, p.readDone, p.readTotal = nil, 0, 0
	p.mu.Unlock()
	p.StepsEnded()
}

func (p *View) clearLine() {
	if p.drawn {
		fmt.Fprint(p.out, style.ClearLine)
		p.drawn = false
	}
}

// Step draws a step's transition: a line for each end (a verified step
// reads as one line), and the start into the live line.
func (p *View) Step(e engine.Event, protection string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLine()
	defer p.redraw()
	if e.Resource == "" {
		// An update's own steps (verify, compatibility, backup, stage) are
		// not resource transitions: one line for people.
		switch {
		case e.Status == "failed":
			fmt.Fprintf(p.out, "  %s %-16s FAILED: %s\n", p.paint(style.Red, "✗"), e.Action, inert(e.Err))
		case e.Status == "ok":
			fmt.Fprintf(p.out, "  · %-16s ok\n", e.Action)
		}
		return
	}
	sym := style.StepMark(e.Action)
	if sym == "" {
		sym = "·"
	}
	switch e.Status {
	case "started":
		p.running[e.Resource] = p.now()
	case journal.StepNotSent:
		// Stopped before its call went out: no line, as for the steps
		// stopped before they started (the report counts them).
		delete(p.running, e.Resource)
	case "skipped":
		delete(p.running, e.Resource)
		if e.Undo {
			fmt.Fprintf(p.out, "  · %-16s nothing to undo\n", printable.Line(e.Resource))
			return
		}
		// Already in place: no line (a no-op apply of 300 resources prints
		// its summary, not 300 lines); the report counts them.
	case "ok":
		if e.Action == "verify" {
			return // a verified step reads as one line
		}
		delete(p.running, e.Resource)
		if e.Action == "preserve" {
			fmt.Fprintf(p.out, "  %s %-16s %s\n", p.paint(style.Yellow, "="), printable.Line(e.Resource), p.paint(style.Yellow, "preserved ("+protection+": a rollback keeps it)"))
			return
		}
		p.okLine(sym, e)
	case "failed":
		delete(p.running, e.Resource)
		if errors.Is(e.Err, engine.ErrLost) {
			// The stack's lock was lost: the call was cancelled, its end
			// unrecorded; resume (once the lock is free) finishes it.
			fmt.Fprintf(p.out, "  %s %-16s %s %s\n", p.paint(style.Yellow, "■"), printable.Line(e.Resource), e.Action, p.paint(style.Yellow, "stopped: the stack's lock was lost (resume finishes it)"))
			return
		}
		if errors.Is(e.Err, context.Canceled) {
			// A second interrupt cancelled the call: not a failure of the
			// resource, and resume finishes the step.
			fmt.Fprintf(p.out, "  %s %-16s %s %s\n", p.paint(style.Yellow, "■"), printable.Line(e.Resource), e.Action, p.paint(style.Yellow, "stopped by the interrupt (resume finishes it)"))
			return
		}
		fmt.Fprintf(p.out, "  %s %-16s %s%s FAILED: %s\n", p.paint(style.Red, "✗"), printable.Line(e.Resource), undoLabel(e), e.Action, inert(e.Err))
	}
}

// UndoMark marks a rollback's step (a compensation): "↶ lb undo update
// ok", never to be read as the forward step it undoes.
const UndoMark = "↶"

// undoLabel is what precedes a step's action in its line: "undo " for a
// compensation ("↶ lb undo update ok": what the undo did), else nothing.
func undoLabel(e engine.Event) string {
	if e.Undo {
		return "undo "
	}
	return ""
}

// okLine prints a step's end, the line of every resource an apply
// changes: fmt.Fprintf(p.out, "  %s %-16s %s ok (%s)\n", …) built by
// appends into the View's buffer, since it is written for every step.
// p.mu is held.
func (p *View) okLine(sym string, e engine.Event) {
	b := append(p.line[:0], "  "...)
	if e.Undo {
		b = append(b, p.paint(style.Yellow, UndoMark)...)
	} else {
		b = append(b, p.paint(style.Green, sym)...)
	}
	b = append(b, ' ')
	// A name from the state (on a shared stack, a teammate's) is printed
	// inert; one without a control character, every name a spec allows,
	// is returned as it is, with no allocation.
	name := printable.Line(e.Resource)
	b = append(b, name...)
	for n := utf8.RuneCountInString(name); n < 16; n++ { // %-16s pads by code points
		b = append(b, ' ')
	}
	b = append(b, ' ')
	b = append(b, undoLabel(e)...)
	b = append(b, e.Action...)
	b = append(b, " ok ("...)
	b = append(b, e.Duration.Round(time.Millisecond).String()...)
	b = append(b, ")\n"...)
	p.line = b
	p.out.Write(b)
}

// Note prints one line of core's (stack.Reporter), after clearing the
// live line: inert (printable.Text), since a note may quote a record or a
// provider.
func (p *View) Note(text string) { p.note(printable.Text(text)) }

// note prints text as it is (the view's own lines, painted), after
// clearing the live line.
func (p *View) note(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLine()
	fmt.Fprintln(p.out, text)
}

// Conflict prints a resource an ownership conflict refuses.
func (p *View) Conflict(op string, c plan.Change) {
	p.note(fmt.Sprintf("  %s %-16s conflict: %s", p.paint(style.Red, "!"), printable.Line(c.Resource), printable.Text(c.Reason)))
}

// Refused prints a resource the protection ladder refuses to delete (or,
// gone already, whose record it refuses to drop).
func (p *View) Refused(op string, c plan.Change) {
	what := "protected: refusing to delete"
	if c.Ownership == plan.Gone {
		what = "protected, not found: refusing to drop its record"
	}
	p.note(fmt.Sprintf("  %s %-16s %s", p.paint(style.Red, "!"), printable.Line(c.Resource), what))
}

// inert is a step's error as the view prints it: its control characters
// written as escapes (printable.Text), since it may quote what a provider,
// the state or a teammate's spec said.
func inert(err error) string {
	if err == nil {
		return "<nil>"
	}
	return printable.Text(err.Error())
}
