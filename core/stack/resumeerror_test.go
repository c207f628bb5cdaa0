package stack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
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

// TestResumeNamesTheFailureWhenNoEndWasRecorded: when the operation's end
// could not be recorded (a full disk), the resume's report names the step
// failures the journal does hold, not "the operation was interrupted".
func TestResumeNamesTheFailureWhenNoEndWasRecorded(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, chain3...)
	e.w.FailCreate("c")
	e.w.FailNextDeletes("b", 1)
	r, err := e.apply(sp)
	if err != nil || r.Outcome != engine.RollbackIncomplete {
		t.Fatalf("apply: %v %v", err, r)
	}
	// As if the end record never made it to the disk.
	e.editJournal(t, func(r journal.Record) bool { return r.Kind != journal.KindOp || r.Error == "" })
	e.w.ClearFaults()
	rr, err := e.resume(sp)
	if code := stack.ExitCode(rr, err); err != nil || code != stack.ExitCompensated {
		t.Fatalf("resume: exit %d err %v", code, err)
	}
	if msg := rr.Err.Error(); !strings.Contains(msg, "c: injected failure: create c") || strings.Contains(msg, "interrupted") {
		t.Errorf("resume's error %q does not name the failure that started the rollback", msg)
	}
}
