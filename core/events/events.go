// Package events writes bulwark's lifecycle events: one JSON line per
// resource transition, for machines (stderr by default, or --events FILE).
//
//	{"ts":"…","op":"op_…","resource":"network","type":"network","action":"create","status":"ok","duration_ms":3}
//
// action is what the step does or would do (create, update, delete, verify,
// preserve, refuse); status is ok, failed or skipped (Check found it already
// done); error is present when it failed. Lines are written whole, one call to
// the writer each, from any number of goroutines.
package events

import (
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
}

// Writer writes events as JSON lines. A nil *Writer discards.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
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
	// Stamped under the lock, so the lines' times are in file order.
	if e.Time.IsZero() {
		e.Time = w.now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.w.Write(append(b, '\n'))
	return err
}
