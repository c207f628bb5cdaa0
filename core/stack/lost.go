package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// LostError is an operation stopped because its lock was lost in the
// middle (a PostgreSQL connection cut, an S3 lease taken over): it stopped
// before its next write, undid nothing (it could not have journaled the
// undoing), and wrote nothing more. The journal leaves it running, its
// steps in flight recorded as started, so a resume under the lock's next
// holder, on any machine, resolves them by their idempotency keys exactly
// as after a crash. errors.Is(err, storage.ErrLost) matches it.
//
// Its exit code is 4 (locked), not 13: nothing was rolled back or left half
// rolled back by this run; the stack is, or was, another's to write, and
// what a person does is what exit 4 asks: wait until the lock is free, then
// resume.
type LostError struct {
	Stack    string
	Location string // the backend, without credentials
	Op, Type string // the operation that stopped
	Spec     string // its spec, for the resume command
	// InFlight are the steps whose work had started and whose end could
	// not be recorded: their provider calls were cancelled or finished
	// unrecorded, and resume resolves them.
	InFlight []string
	// Holder is who holds the lock now (nil: nobody, or unknown).
	Holder *storage.Holder
	// Cause is the backend's own error, saying why the lock was lost (nil
	// when it does not say).
	Cause error
}

func (e *LostError) Error() string {
	var b strings.Builder
	if e.Cause != nil {
		// The backend's error names its location and why.
		fmt.Fprintf(&b, "the lock on stack %s was lost (%v)", e.Stack, e.Cause)
	} else {
		fmt.Fprintf(&b, "the lock on stack %s (%s) was lost", e.Stack, e.Location)
	}
	fmt.Fprintf(&b, ": %s %s stopped before its next write and undid nothing", e.Type, e.Op)
	if len(e.InFlight) > 0 {
		fmt.Fprintf(&b, "; in flight, its end unrecorded: %s (resume resolves it by its idempotency key)", strings.Join(e.InFlight, ", "))
	} else {
		b.WriteString("; the journal records where it stopped")
	}
	resume := "bulwark resume"
	if e.Spec != "" {
		resume += " " + e.Spec
	}
	if e.Holder != nil {
		fmt.Fprintf(&b, "; the lock is now held by %s: run `%s` once it is free", e.Holder, resume)
	} else {
		fmt.Fprintf(&b, "; run `%s` once the lock is free (from this or any machine on the same backend)", resume)
	}
	return b.String()
}

// Is makes errors.Is(err, storage.ErrLost) match.
func (e *LostError) Is(target error) bool { return target == storage.ErrLost }

// Unwrap is the backend's error.
func (e *LostError) Unwrap() error { return e.Cause }

// lostError is the LostError of a run that Writer.Lost stopped (nil when
// the lock is still held and the run was not stopped by its loss).
func (s *session) lostError(op *engine.Operation, res engine.Result) error {
	if s.store == nil {
		return nil
	}
	if s.store.Lost() == nil && !res.Lost {
		return nil
	}
	cause := s.store.LostCause()
	e := &LostError{Stack: s.sp.Stack, Location: s.be.Location(), Op: op.ID, Type: op.Type, Spec: s.sp.File, Cause: cause}
	for _, id := range res.Executed {
		if !slices.Contains(res.Done, id) && !isMeta(id) {
			e.InFlight = append(e.InFlight, id)
		}
	}
	// Who took it, if anyone did: a read, never a write.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// (This process is not the new holder: a process holds a stack's lock
	// once at most. A resume elsewhere holds it under the same op id.)
	if h, err := s.be.Holder(ctx); err == nil && h != nil && (h.PID != s.holder.PID || h.Host != s.holder.Host) {
		e.Holder = h
	}
	return e
}

// isLostResult reports whether the lock's loss stopped the run of res.
func isLostResult(res *Result) bool { return errors.Is(res.Err, storage.ErrLost) }
