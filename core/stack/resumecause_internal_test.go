package stack

import (
	"errors"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
)

// An operation whose rollback a second Ctrl-C stopped was interrupted, not
// failed: resume's report matches it as engine.ErrInterrupted (issue 23
// item 7). A real failure stays that failure.
func TestOriginalErrorOfAnInterruption(t *testing.T) {
	op := func(msg string) []journal.Record {
		return []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRollbackIncomplete, Error: msg}}
	}
	for _, msg := range []string{
		"rollback incomplete: a: stopped by the interrupt before it finished (resume finishes it) (after: (not started): interrupted)",
		"rolled back after: interrupted",
	} {
		if err := originalError(op(msg)); !errors.Is(err, engine.ErrInterrupted) {
			t.Errorf("%q: cause %v, want ErrInterrupted", msg, err)
		}
	}
	msg := "rollback incomplete: a: boom (after: b: simulated failure (--simulate-failure b))"
	if err := originalError(op(msg)); errors.Is(err, engine.ErrInterrupted) || err.Error() != "b: simulated failure (--simulate-failure b)" {
		t.Errorf("%q: cause %v, want b's failure", msg, err)
	}
}
