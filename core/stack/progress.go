package stack

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/events"
)

// progress turns engine events into lifecycle events (JSON) and readable
// lines for a person.
type progress struct {
	mu     sync.Mutex
	out    io.Writer
	events *events.Writer
	levels map[string]string // protection per resource, for messages
}

var _ engine.Observer = (*progress)(nil)

var symbols = map[string]string{
	"create": "+", "update": "~", "replace": "±", "delete": "-", "verify": "✓", "preserve": "=", "refuse": "!",
}

func (p *progress) Observe(e engine.Event) {
	if e.Resource == "" {
		// An update's own steps (verify, compatibility, backup, stage) are
		// not resource transitions: no lifecycle event, one line for people.
		if e.Status == "ok" || e.Status == "failed" {
			p.mu.Lock()
			defer p.mu.Unlock()
			if e.Err != nil {
				fmt.Fprintf(p.out, "  ✗ %-16s FAILED: %v\n", e.Action, e.Err)
			} else {
				fmt.Fprintf(p.out, "  · %-16s ok\n", e.Action)
			}
		}
		return
	}
	if e.Status != "started" {
		ev := events.Event{Op: e.Op, Resource: e.Resource, Type: e.Type, Action: e.Action, Status: e.Status, DurationMS: e.Duration.Milliseconds()}
		if e.Err != nil {
			ev.Error = e.Err.Error()
		}
		p.events.Write(ev)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sym := symbols[e.Action]
	if sym == "" {
		sym = "·"
	}
	switch e.Status {
	case "started":
		// One line per result keeps logs readable; live per-resource progress
		// on a terminal is a separate feature.
	case "skipped":
		if e.Undo {
			fmt.Fprintf(p.out, "  · %-16s nothing to undo\n", e.Resource)
			return
		}
		fmt.Fprintf(p.out, "  = %-16s already in place, skipped\n", e.Resource)
	case "ok":
		if e.Action == "verify" {
			return // a verified step reads as one line
		}
		if e.Action == "preserve" {
			fmt.Fprintf(p.out, "  = %-16s preserved (%s: a rollback keeps it)\n", e.Resource, p.levels[e.Resource])
			return
		}
		fmt.Fprintf(p.out, "  %s %-16s %s ok (%s)\n", sym, e.Resource, e.Action, e.Duration.Round(time.Millisecond))
	case "failed":
		fmt.Fprintf(p.out, "  ✗ %-16s %s FAILED: %v\n", e.Resource, e.Action, e.Err)
	}
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format, args...)
}

// refuse reports resources a protection refusal names.
func (p *progress) refuse(op string, names []string, types map[string]string) {
	for _, n := range names {
		p.events.Write(events.Event{Op: op, Resource: n, Type: types[n], Action: "refuse", Status: "failed", Error: "protected resource"})
		p.printf("  ! %-16s protected: refusing to delete\n", n)
	}
}
