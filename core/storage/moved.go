package storage

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A stack that `bulwark state migrate` moves is fenced at its old place
// before anything is copied: the backend stores a marker (the file
// backend's `moved` file, PostgreSQL's moved_to, S3's stack.json
// moved_to), and from then on its Load and Lock refuse with a *MovedError
// naming the migration and the new place. The marker is written once and
// never taken back: whether the copy was finished is told by the new
// place (backends.Migrate), so no kill can leave two places that take
// writes.
//
// The marker is MovedMarker's JSON; a marker written by an earlier bulwark
// is the new place's URL alone.

// MovedMarker is what a fenced place stores.
type MovedMarker struct {
	// Migration is the operation id of the migration that fenced the
	// place ("" in a marker of an earlier bulwark).
	Migration string `json:"migration"`
	// To is the new place, as a --state URL without credentials.
	To string `json:"to"`
}

// String is the marker as stored.
func (m MovedMarker) String() string {
	b, _ := json.Marshal(m) // two strings: cannot fail
	return string(b)
}

// ParseMovedMarker reads a stored marker (JSON, or an earlier bulwark's
// bare URL).
func ParseMovedMarker(s string) MovedMarker {
	s = strings.TrimSpace(s)
	var m MovedMarker
	if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &m) == nil && m.To != "" {
		return m
	}
	return MovedMarker{To: s}
}

// MovedError refuses a place a migration fenced. errors.Is(err, ErrMoved)
// matches it.
type MovedError struct {
	Stack    string
	Location string // the fenced place
	MovedMarker
	// Where says where the marker is kept (for a person who must look).
	Where string
}

func (e *MovedError) Error() string {
	by := ""
	if e.Migration != "" {
		by = " by migration " + e.Migration
	}
	msg := fmt.Sprintf("stack %s at %s: %s to %s%s: nothing may change it here; use --state %s from now on",
		e.Stack, e.Location, ErrMoved, e.To, by, e.To)
	if e.Migration != "" {
		msg += fmt.Sprintf(" (if that migration was interrupted, `bulwark resume SPEC` or `bulwark state migrate SPEC --to %s` run here finishes it)", e.To)
	}
	if e.Where != "" {
		msg += "; the marker is " + e.Where
	}
	return msg
}

// Is makes errors.Is(err, ErrMoved) match.
func (e *MovedError) Is(target error) bool { return target == ErrMoved }

// CheckMoved is what a backend's Load and Lock do with the marker they
// found (marker "": none): a *MovedError, or nil when there is none or when
// the backend was opened by the very migration that wrote it
// (Options.Migration), which must go on reading and locking the place it
// fenced to finish the copy.
func CheckMoved(opts Options, location, marker, where string) error {
	if strings.TrimSpace(marker) == "" {
		return nil
	}
	m := ParseMovedMarker(marker)
	if m.Migration != "" && m.Migration == opts.Migration {
		return nil
	}
	return &MovedError{Stack: opts.Stack, Location: location, MovedMarker: m, Where: where}
}
