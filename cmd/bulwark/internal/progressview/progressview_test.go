package progressview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/style"
	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
)

func clock() func() time.Time {
	t0 := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	return func() time.Time { return t0 }
}

// Each hook's line, without a terminal (no colour, no live line).
func TestLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(v *View)
		want   string
	}{
		{"create ok", func(v *View) {
			v.Step(engine.Event{Resource: "vpc", Action: "create", Status: "ok", Duration: 1234 * time.Microsecond}, "ephemeral")
		}, "  + vpc              create ok (1ms)\n"},
		{"started prints nothing", func(v *View) { v.Step(engine.Event{Resource: "vpc", Action: "create", Status: "started"}, "") }, ""},
		{"verify ok is silent", func(v *View) { v.Step(engine.Event{Resource: "vpc", Action: "verify", Status: "ok"}, "") }, ""},
		{"failed", func(v *View) {
			v.Step(engine.Event{Resource: "db", Action: "update", Status: "failed", Err: errors.New("boom")}, "")
		}, "  ✗ db               update FAILED: boom\n"},
		{"interrupted", func(v *View) {
			v.Step(engine.Event{Resource: "db", Action: "update", Status: "failed", Err: fmt.Errorf("call: %w", context.Canceled)}, "")
		}, "  ■ db               update stopped by the interrupt (resume finishes it)\n"},
		{"lock lost", func(v *View) {
			v.Step(engine.Event{Resource: "db", Action: "update", Status: "failed", Err: fmt.Errorf("%w: call: %w", engine.ErrLost, context.Canceled)}, "")
		}, "  ■ db               update stopped: the stack's lock was lost (resume finishes it)\n"},
		{"preserved names its level", func(v *View) {
			v.Step(engine.Event{Resource: "db", Action: "preserve", Status: "ok"}, "durable")
		}, "  = db               preserved (durable: a rollback keeps it)\n"},
		{"already in place prints nothing", func(v *View) { v.Step(engine.Event{Resource: "db", Action: "create", Status: "skipped"}, "") },
			""},
		{"undo ok", func(v *View) {
			v.Step(engine.Event{Resource: "lb", Action: "update", Status: "ok", Undo: true, Duration: 2 * time.Millisecond}, "")
		}, "  ↶ lb               undo update ok (2ms)\n"},
		{"undo failed", func(v *View) {
			v.Step(engine.Event{Resource: "lb", Action: "delete", Status: "failed", Undo: true, Err: errors.New("boom")}, "")
		}, "  ✗ lb               undo delete FAILED: boom\n"},
		{"nothing to undo", func(v *View) {
			v.Step(engine.Event{Resource: "db", Action: "delete", Status: "skipped", Undo: true}, "")
		},
			"  · db               nothing to undo\n"},
		{"an update's own step", func(v *View) { v.Step(engine.Event{Action: "backup", Status: "ok"}, "") }, "  · backup           ok\n"},
		{"conflict", func(v *View) { v.Conflict("op", plan.Change{Resource: "b", Reason: "owned by stack x"}) },
			"  ! b                conflict: owned by stack x\n"},
		{"refused", func(v *View) { v.Refused("op", plan.Change{Resource: "db"}) }, "  ! db               protected: refusing to delete\n"},
		{"refused, gone", func(v *View) { v.Refused("op", plan.Change{Resource: "db", Ownership: plan.Gone}) }, "  ! db               protected, not found: refusing to drop its record\n"},
		{"note", func(v *View) { v.Note("note: took over a stale lock left by pid 1") }, "note: took over a stale lock left by pid 1\n"},
		{"reads without a terminal print nothing", func(v *View) {
			v.ReadsStarted(2)
			v.ReadStarted("a")
			v.ReadEnded("a")
			v.ReadsEnded()
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tc.report(New(&b, false, false, clock()))
			if got := b.String(); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// On a terminal the live line shows what runs, and is cleared before any
// other line; colours paint the marks.
func TestLiveLineAndColour(t *testing.T) {
	var b bytes.Buffer
	v := New(&b, true, true, clock())
	v.Step(engine.Event{Resource: "vpc", Action: "create", Status: "started"}, "")
	v.Note("hello")
	v.Step(engine.Event{Resource: "vpc", Action: "create", Status: "ok"}, "")
	v.StepsEnded()
	want := style.ClearLine + style.Dim + "  … running: vpc 0.0s" + style.Reset +
		style.ClearLine + "hello\n" +
		"  " + style.Green + "+" + style.Reset + " vpc              create ok (0s)\n"
	if got := b.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// A step's end line is the line fmt.Fprintf writes for it, in colour and
// not, whatever the name's length and script.
func TestOKLineIsFprintf(t *testing.T) {
	for _, name := range []string{"a", "vpc", "exactly-16-chars", "longer-than-sixteen-characters", "réseau-é", "日本語の名前", "a%sb"} {
		for _, color := range []bool{false, true} {
			for _, d := range []time.Duration{0, 499 * time.Microsecond, 1234 * time.Microsecond, 2*time.Minute + 3500*time.Millisecond} {
				var got bytes.Buffer
				v := New(&got, color, false, clock())
				v.Step(engine.Event{Resource: name, Action: "create", Status: "ok", Duration: d}, "ephemeral")
				want := fmt.Sprintf("  %s %-16s %s ok (%s)\n", v.paint(style.Green, "+"), name, "create", d.Round(time.Millisecond))
				if got.String() != want {
					t.Errorf("%q colour %v %v:\n got %q\nwant %q", name, color, d, got.String(), want)
				}
			}
		}
	}
}

// BenchmarkStepOK is the line every changed resource prints.
func BenchmarkStepOK(b *testing.B) {
	v := New(io.Discard, false, false, clock())
	e := engine.Event{Resource: "r000001", Action: "create", Status: "ok", Duration: 3 * time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		v.Step(e, "ephemeral")
	}
}
