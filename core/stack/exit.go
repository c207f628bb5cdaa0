package stack

import (
	"errors"

	"github.com/bulwark-iac/bulwark/core/storage"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
)

// Exit codes, as docs/architecture.md ("Exit codes") defines them.
const (
	ExitOK                 = 0
	ExitError              = 1
	ExitChanges            = 2
	ExitRefused            = 3
	ExitLocked             = 4
	ExitCompensated        = 11
	ExitIntervention       = 12
	ExitRollbackIncomplete = 13
)

// ExitCode maps an operation's result and error to bulwark's exit code.
func ExitCode(res *Result, err error) int {
	var refused *plan.RefusedError
	var interv *InterventionError
	var unknown *UnknownCreateError
	if err == nil && res != nil && errors.Is(res.Err, storage.ErrLost) {
		err = res.Err
	}
	switch {
	case errors.As(err, &refused):
		return ExitRefused
	case errors.Is(err, storage.ErrLocked):
		return ExitLocked
	case errors.Is(err, storage.ErrLost):
		// The lock was lost in the middle (see LostError): the stack is,
		// or was, another's to write; nothing was rolled back. Exit 4's
		// remedy is this one's: wait for the lock, then resume.
		return ExitLocked
	case errors.As(err, &interv):
		return ExitIntervention
	case errors.As(err, &unknown):
		// Only a person can say whether an interrupted Create made
		// anything (see UnknownCreateError).
		return ExitIntervention
	case err != nil:
		return ExitError
	case res == nil:
		return ExitOK
	}
	switch res.Outcome {
	case engine.Succeeded:
		return ExitOK
	case engine.Compensated:
		return ExitCompensated
	case engine.RollbackIncomplete:
		return ExitRollbackIncomplete
	case engine.NeedsIntervention:
		return ExitIntervention
	case engine.Unfinished:
		// An outcome that could not be recorded: a rollback, finished or
		// not, is retried to convergence by resume, which 13 says.
		if res.Run.Reached == engine.Compensated || res.Run.Reached == engine.RollbackIncomplete {
			return ExitRollbackIncomplete
		}
	}
	// Failed, or Unfinished (an outcome that could not be recorded).
	return ExitError
}

// ChangedNothing reports whether the operation executed no resource step
// (an update that failed in its own verify, compatibility, backup or stage
// step): nothing was changed, so there was nothing to roll back. A resumed
// operation is one with its interrupted earlier part: what that part
// executed counts (Inherited), so a resume that fails before its own first
// step does not claim the operation changed nothing.
func (r *Result) ChangedNothing() bool {
	for _, id := range r.Run.Executed {
		if !isMeta(id) {
			return false
		}
	}
	return len(r.Inherited) == 0
}
