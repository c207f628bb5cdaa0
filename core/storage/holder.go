package storage

import (
	"fmt"
	"time"

	"github.com/bulwark-iac/bulwark/core/printable"
)

// Holder says who holds, or held, a stack's lock: the one type every
// backend reports (the file backend's lock, filestore/lock, records it as
// JSON).
type Holder struct {
	Op   string `json:"op"`
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// User names who runs the holder (see CurrentUser); "" in records
	// written before it was kept.
	User  string    `json:"user,omitempty"`
	Since time.Time `json:"since"`
	// Until is when the holder's lease runs out (s3); zero where the lock
	// lives as long as its holder (file, postgres).
	Until time.Time `json:"until,omitzero"`
}

func (h Holder) String() string {
	if h.PID == 0 && h.Op == "" {
		return "a process that left no readable record"
	}
	// The record was written by whoever holds the lock, or by hand into a
	// shared backend, and this line reaches other people's terminals (a
	// refused lock's error, status, a plan's note): its text fields are
	// printed inert (printable.Line), none can drive a terminal.
	op, host := printable.Line(h.Op), printable.Line(h.Host)
	// The user comes last, so that what read these lines before users
	// were kept (operation, pid, host, since) reads them as it did.
	who := ""
	if h.User != "" {
		who = ", user " + printable.Line(h.User)
	}
	if !h.Until.IsZero() {
		// A lease (s3): the lock can be taken over once it runs out.
		return fmt.Sprintf("operation %s (pid %d on %s, since %s, lease until %s%s)", op, h.PID, host, h.Since.UTC().Format(time.RFC3339), h.Until.UTC().Format(time.RFC3339), who)
	}
	return fmt.Sprintf("operation %s (pid %d on %s, since %s%s)", op, h.PID, host, h.Since.UTC().Format(time.RFC3339), who)
}

// LockedError is returned by Lock when another live holder has the lock:
// the one type every backend returns; errors.Is(err, ErrLocked) matches
// it.
type LockedError struct {
	Location string  // the lock's place: a file, or a backend's location
	Holder   *Holder // nil when the holder has not written its record yet, or it could not be read
}

func (e *LockedError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("stack is locked (%s) by another process", e.Location)
	}
	return fmt.Sprintf("stack is locked by %s", e.Holder)
}

// Is makes errors.Is(err, ErrLocked) match.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }
