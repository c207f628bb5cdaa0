package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/state"
)

// Integrity. What a backend stores and reads the state back from (a
// PostgreSQL row, an S3 object) is a record that carries a checksum of its
// content, as the file backend's state.json does: Enclose makes the stored
// form, and Disclose checks it on every read, so a record changed outside
// bulwark (a protection level lowered by hand in a row or an object, a
// damaged byte) is refused with an *IntegrityError naming the backend, the
// stack and the record, never used. The record's bytes are a backend's own
// business (JSON, its values sealed), and so is where it keeps them: the
// check is the same everywhere, here.
//
// A checksum finds a change made without bulwark; it does not stop one made
// by someone who recomputes it (as with state.json): the backend's own
// access control does that.
//
// The stored form is
//
//	{"checksum":"sha256:HEX","record":RECORD}
//
// where HEX is the sha256 of RECORD in compact form (insignificant
// whitespace removed, as state.json's checksum), so a record pretty-printed
// by a tool still checks; anything else changed does not.

// ErrIntegrity matches an *IntegrityError (which also matches
// state.ErrCorrupt).
var ErrIntegrity = errors.New("a stored record does not match its checksum")

// Where names a stored record for messages.
type Where struct {
	Backend string // the backend's Location
	Stack   string
	Record  string // what and where: `resource "db" (table bulwark.resources)`
	// Restore says where good copies are; empty: the backups the backend
	// keeps for the stack.
	Restore string
}

// DefaultRestore is where a remote backend's good copies are (the hint a
// file backend gives is its backups folder).
const DefaultRestore = "the backups that backend keeps for this stack (bulwark doctor lists them)"

// IntegrityError refuses a stored record that does not match its checksum,
// carries none, or does not parse as a checksummed record.
type IntegrityError struct {
	Where
	Recorded string // the checksum recorded ("" when none)
	Computed string // the checksum of what is stored
	Err      error  // what did not parse, if that is what is wrong
}

func (e *IntegrityError) Error() string {
	var what string
	switch {
	case e.Err != nil:
		what = fmt.Sprintf("is not a checksummed record (%v)", e.Err)
	case e.Recorded == "":
		what = "carries no checksum"
	default:
		what = fmt.Sprintf("does not match its checksum (recorded %s, its content sums to %s)", e.Recorded, e.Computed)
	}
	restore := e.Restore
	if restore == "" {
		restore = DefaultRestore
	}
	return fmt.Sprintf("load state %s: stack %s: %s %s: it was changed outside bulwark (by hand?) or damaged, and bulwark will not use it (a protection level lowered there could let a delete through; to change what bulwark records, change the spec and apply); restore the newest good copy from %s",
		e.Backend, e.Stack, e.Record, what, restore)
}

// Is makes errors.Is match ErrIntegrity and state.ErrCorrupt (a state that
// fails its checks, as Backend.Load promises).
func (e *IntegrityError) Is(target error) bool {
	return target == ErrIntegrity || target == state.ErrCorrupt
}

// Checksum is the checksum Enclose records of a JSON record: the sha256 of
// its compact form.
func Checksum(record []byte) (string, error) {
	var c bytes.Buffer
	c.Grow(len(record))
	if err := json.Compact(&c, record); err != nil {
		return "", err
	}
	sum := sha256.Sum256(c.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Enclose returns the stored form of record (a JSON value): the record
// with its checksum.
func Enclose(record []byte) ([]byte, error) {
	var c bytes.Buffer
	c.Grow(len(record))
	if err := json.Compact(&c, record); err != nil {
		return nil, fmt.Errorf("checksum a record: %w", err)
	}
	// Written by hand, not by json.Marshal, which would escape the
	// record's HTML characters and store bytes other than those summed.
	return AppendEnclosed(make([]byte, 0, c.Len()+96), c.Bytes()), nil
}

// AppendEnclosed appends to dst the stored form of record, as Enclose makes
// it, for a record already in compact form (json.Marshal's output, or a
// backend's own encoder's of the same bytes): it is summed as it is, not
// compacted again (a step's commit pays one sha256 of its change).
func AppendEnclosed(dst, record []byte) []byte {
	sum := sha256.Sum256(record)
	dst = append(dst, `{"checksum":"sha256:`...)
	dst = hex.AppendEncode(dst, sum[:])
	dst = append(dst, `","record":`...)
	dst = append(dst, record...)
	return append(dst, '}')
}

// MarshalEnclosed is Enclose of v's JSON.
func MarshalEnclosed(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Enclose(b)
}

// Disclose checks stored, a record's stored form, against its checksum and
// returns the record. A record that fails is an *IntegrityError naming at.
func Disclose(stored []byte, at Where) ([]byte, error) {
	rec, enclosed, err := disclose(stored, at)
	if err == nil && !enclosed {
		err = &IntegrityError{Where: at}
	}
	return rec, err
}

// DiscloseLegacy is Disclose that also takes a record stored before
// records carried checksums (anything but a checksummed record's form),
// returning it as it is, with legacy true. Only for a place that knows its
// records may predate checksums (s3store's stack.json says which).
func DiscloseLegacy(stored []byte, at Where) (record []byte, legacy bool, err error) {
	rec, enclosed, err := disclose(stored, at)
	if err != nil {
		return nil, false, err
	}
	if !enclosed {
		return stored, true, nil
	}
	return rec, false, nil
}

// disclose returns the record of stored, and whether stored has the
// checksummed form at all (false, no error: it has not).
func disclose(stored []byte, at Where) ([]byte, bool, error) {
	var env struct {
		Checksum *string         `json:"checksum"`
		Record   json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(stored, &env); err != nil {
		return nil, false, &IntegrityError{Where: at, Err: err}
	}
	if env.Checksum == nil && env.Record == nil {
		return nil, false, nil
	}
	if env.Checksum == nil || *env.Checksum == "" {
		return nil, false, &IntegrityError{Where: at}
	}
	if env.Record == nil {
		return nil, false, &IntegrityError{Where: at, Err: errors.New("no record")}
	}
	got, err := Checksum(env.Record)
	if err != nil {
		return nil, false, &IntegrityError{Where: at, Err: err}
	}
	if got != *env.Checksum {
		return nil, false, &IntegrityError{Where: at, Recorded: *env.Checksum, Computed: got}
	}
	return env.Record, true, nil
}
