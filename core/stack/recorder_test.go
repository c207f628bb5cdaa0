package stack_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// recorder is the tests' stack.Reporter: one plain line per hook it is
// handed (no rendering, no colour, no live line), into a buffer the tests
// read when they fail and search for secrets in clear.
type recorder struct{ out *syncBuffer }

var _ stack.Reporter = recorder{}

func (r recorder) line(format string, args ...any) { fmt.Fprintf(r.out, format+"\n", args...) }

func (r recorder) OperationStarted(op, typ string) { r.line("operation %s %s started", typ, op) }
func (r recorder) OperationEnded(op, typ, status string, exit int, err error) {
	r.line("operation %s %s %s (exit %d): %v", typ, op, status, exit, err)
}
func (r recorder) StepsStarted() {}
func (r recorder) StepsEnded()   {}
func (r recorder) Step(e engine.Event, protection string) {
	if e.Err != nil {
		r.line("step %s %s %s (%s): %v", e.Resource, e.Action, e.Status, protection, e.Err)
		return
	}
	r.line("step %s %s %s (%s)", e.Resource, e.Action, e.Status, protection)
}
func (r recorder) ReadsStarted(n int)          { r.line("reads %d", n) }
func (r recorder) ReadStarted(resource string) {}
func (r recorder) ReadEnded(resource string)   {}
func (r recorder) ReadsEnded()                 {}
func (r recorder) Conflict(op string, c plan.Change) {
	r.line("conflict %s: %s", c.Resource, c.Reason)
}
func (r recorder) Refused(op string, c plan.Change) { r.line("refused %s: protected", c.Resource) }
func (r recorder) Note(text string)                 { r.line("note %s", text) }

// An apply reports through the Reporter alone, in order: the plan's reads,
// the operation's start, its header as a Note, each step, its end with the
// exit code.
func TestApplyReportsThroughTheReporter(t *testing.T) {
	e := newEnv(t)
	res := e.mustApply(t, mkSpec(t, res{name: "a", typ: "network"}))
	got := strings.Split(strings.TrimSpace(e.out.String()), "\n")
	want := []string{
		"reads 1",
		"operation apply " + res.Op + " started",
		"note apply s (" + res.Op + "): 1 resource(s), up to 10 at once",
		"step a create started (ephemeral)",
		"step a create ok (ephemeral)",
		"step a verify ok (ephemeral)",
		"operation apply " + res.Op + " succeeded (exit 0): <nil>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
