package stack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// TestResumeErrorsDoNotNest: every resume of a rollback that stays
// incomplete reports one clear error: this run's compensation failures,
// after the operation's original failure, once. It used to take the
// previous run's whole report as the cause, nesting one level deeper with
// each resume ("rollback incomplete: … (after: rollback incomplete: …
// (after: …))").
func TestResumeErrorsDoNotNest(t *testing.T) {
	e := newEnv(t)
	e.mustApply(t, mkSpec(t, rollbackStack[0]))
	sp := mkSpec(t, rollbackStack...)
	e.w.FailNextDeletes("compute", 5)
	e.w.FailNextDeletes("lb", 5)
	r, err := e.apply(sp, simulate("app"))
	if err != nil || r.Outcome != engine.RollbackIncomplete {
		t.Fatalf("apply: %v outcome %v", err, r.Outcome)
	}
	for i := 1; i <= 4; i++ {
		r, err = e.resume(sp)
		if code := stack.ExitCode(r, err); err != nil || code != stack.ExitRollbackIncomplete {
			t.Fatalf("resume %d: exit %d, err %v", i, code, err)
		}
		msg := r.Err.Error()
		if n := strings.Count(msg, "rollback incomplete"); n != 1 {
			t.Errorf("resume %d: %q says rollback incomplete %d times", i, msg, n)
		}
		if n := strings.Count(msg, "simulated failure"); n != 1 {
			t.Errorf("resume %d: %q names the original failure %d times", i, msg, n)
		}
		var rb *engine.RollbackError
		if !errors.As(r.Err, &rb) || rb.Failures["lb"] == nil {
			t.Fatalf("resume %d: %v keeps no failure of lb", i, r.Err)
		}
		if strings.Contains(rb.Cause.Error(), "rollback incomplete") {
			t.Errorf("resume %d: the cause is a rollback's report: %v", i, rb.Cause)
		}
	}
	r, err = e.resume(sp)
	if code := stack.ExitCode(r, err); err != nil || code != stack.ExitCompensated {
		t.Fatalf("last resume: exit %d, err %v", code, err)
	}
}
