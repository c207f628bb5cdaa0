// Package events writes bulwark's lifecycle events: one JSON line per
// resource transition, for machines (stderr by default, or --events FILE).
//
//	{"ts":"…","op":"op_…","resource":"network","type":"network","action":"create","status":"ok","duration_ms":3}
//
// action is what the step does or would do (create, update, delete, verify,
// preserve, refuse); status is ok, failed or skipped (Check found it already
// done); error is present when it failed; undo is true on a rollback's steps.
// Each operation also writes one line (an Operation, "kind":"operation") when
// it starts and one when it ends:
//
//	{"ts":"…","op":"op_…","kind":"operation","format_version":"1.0","type":"apply","status":"running","exit":null,"summary":null,"duration_ms":0}
//
// A plan's read of a data entry (the spec's data:) writes one line (a
// DataRead, "kind":"data") when it ends, before the operation's start line:
// the reads are the plan's, made before any step. It carries no value read:
//
//	{"ts":"…","op":"op_…","kind":"data","address":"data.net","name":"net","type":"lookup","provider":"mock","status":"ok","duration_ms":1}
//
// Lines are written whole, one call to the writer each, from any number of
// goroutines, with no HTML escaping.
package events

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Event is one lifecycle event.
type Event struct {
	Time       time.Time `json:"ts"`
	Op         string    `json:"op"`
	Resource   string    `json:"resource"`
	Type       string    `json:"type"`
	Action     string    `json:"action"`
	Status     string    `json:"status"`
	DurationMS int64     `json:"duration_ms"`
	Error      string    `json:"error,omitempty"`
	// Undo is set on a rollback's steps (a compensation), which otherwise
	// read like the operation's own.
	Undo bool `json:"undo,omitempty"`
	// From is the address a "move" event's resource had before (a moved:
	// entry of the spec).
	From string `json:"from,omitempty"`
}

// FormatVersion is the version of the event lines' shape, carried by the
// operation lines (docs/json.md): a new minor only adds fields.
const FormatVersion = "1.0"

// KindOperation is an Operation line's kind.
const KindOperation = "operation"

// Operation is the line an operation writes when it starts (status
// running, exit and summary null) and when it ends (its outcome: succeeded,
// failed, compensated, rollback_incomplete, intervention, unfinished, or
// refused when the plan was refused before any step; the exit code bulwark
// exits with; what its steps did).
type Operation struct {
	Time          time.Time `json:"ts"`
	Op            string    `json:"op"`
	Kind          string    `json:"kind"`
	FormatVersion string    `json:"format_version"`
	Type          string    `json:"type"`
	Status        string    `json:"status"`
	Exit          *int      `json:"exit"`
	Summary       *Summary  `json:"summary"`
	DurationMS    int64     `json:"duration_ms"`
	Error         string    `json:"error,omitempty"`
	// Targets are a targeted run's --target addresses, and Warnings then
	// say that the run is partial; both absent otherwise. (Added in 1.0,
	// additively.)
	Targets  []string `json:"targets,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// KindData is a data read line's kind.
const KindData = "data"

// DataRead is the line a read of a data entry writes when it ends: which
// entry (address data.NAME, its name, data source type and provider's local
// name), ok or failed, how long it took, and the error (masked where it is
// made, as a step's is). The values read are never on it: plan --json
// shows them, masked.
type DataRead struct {
	Time       time.Time `json:"ts"`
	Op         string    `json:"op"`
	Kind       string    `json:"kind"`
	Address    string    `json:"address"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	Provider   string    `json:"provider"`
	Status     string    `json:"status"`
	DurationMS int64     `json:"duration_ms"`
	Error      string    `json:"error,omitempty"`
}

// Summary counts an operation's resource steps by how they ended.
type Summary struct {
	Created    int `json:"created"`
	Updated    int `json:"updated"`
	Replaced   int `json:"replaced"`
	Deleted    int `json:"deleted"`
	Imported   int `json:"imported"`
	Forgotten  int `json:"forgotten"`
	Unchanged  int `json:"unchanged"`
	Failed     int `json:"failed"`
	RolledBack int `json:"rolled_back"`
	Preserved  int `json:"preserved"`
	Refused    int `json:"refused"`
}

// Writer writes events as JSON lines. A nil *Writer discards.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	buf []byte // the line being written, reused (under mu)
}

// NewWriter returns a Writer on w; now stamps events (time.Now if nil).
func NewWriter(w io.Writer, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	return &Writer{w: w, now: now}
}

// Write stamps e (when it has no time) and writes it as one line.
func (w *Writer) Write(e Event) error {
	if w == nil || w.w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = w.now().UTC()
	}
	line, err := e.appendJSON(w.buf[:0])
	if err != nil {
		return err
	}
	w.buf = line
	_, err = w.w.Write(line)
	return err
}

// WriteOperation stamps o (when it has no time), sets its kind and format
// version, and writes it as one line.
func (w *Writer) WriteOperation(o Operation) error {
	return w.write(func(now time.Time) any {
		if o.Time.IsZero() {
			o.Time = now
		}
		o.Kind, o.FormatVersion = KindOperation, FormatVersion
		return o
	})
}

// WriteData stamps d (when it has no time), sets its kind and address, and
// writes it as one line.
func (w *Writer) WriteData(d DataRead) error {
	return w.write(func(now time.Time) any {
		if d.Time.IsZero() {
			d.Time = now
		}
		d.Kind, d.Address = KindData, "data."+d.Name
		return d
	})
}

// write marshals what line returns, stamped under the lock so the lines'
// times are in file order.
func (w *Writer) write(line func(now time.Time) any) error {
	if w == nil || w.w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(line(w.now().UTC())); err != nil {
		return err
	}
	_, err := w.w.Write(buf.Bytes())
	return err
}
