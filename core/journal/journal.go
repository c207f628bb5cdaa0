// Package journal is the append-only record of every operation bulwark runs:
// one JSON line per transition, each with its own ULID and the id of its
// operation ("op_" + ULID), so reading the file in order is reading history
// in order.
//
// Append returns only once the record is on disk (written and fsynced).
// Concurrent appends share fsyncs (group commit): while one caller syncs,
// the records written meanwhile wait and are made durable by the next sync,
// so no record is acknowledged before it is durable. A record torn by a crash
// in the middle of a write is never acknowledged; Open cuts it off, and Read
// ignores it.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// FileName is the journal's name in a stack's folder.
const FileName = "journal.jsonl"

// Operation record statuses.
const (
	OpRunning            = "running"
	OpSucceeded          = "succeeded"
	OpFailed             = "failed"
	OpCompensated        = "compensated"
	OpRollbackIncomplete = "rollback_incomplete"
	OpIntervention       = "intervention"
	OpRefused            = "refused"
)

// Step record statuses.
const (
	StepStarted = "started"
	StepOK      = "ok"
	StepFailed  = "failed"
	StepSkipped = "skipped"
)

// Record kinds.
const (
	KindOp       = "op"       // an operation starts or ends
	KindStep     = "step"     // a phase of a step starts or ends
	KindRollback = "rollback" // the rollback target set, journaled before the first delete
	KindAck      = "ack"      // a person acknowledged an intervention
)

// Record is one journal line.
type Record struct {
	ID       string    `json:"id"`
	Op       string    `json:"op"`
	Time     time.Time `json:"ts"`
	Kind     string    `json:"kind"`
	Type     string    `json:"type,omitempty"` // operation type, on op records
	Status   string    `json:"status"`
	Step     string    `json:"step,omitempty"`
	Resource string    `json:"resource,omitempty"`
	Action   string    `json:"action,omitempty"`
	Phase    string    `json:"phase,omitempty"` // check | execute | verify | compensate
	Key      string    `json:"key,omitempty"`   // idempotency key an execute carries
	ResultID string    `json:"result_id,omitempty"`
	Targets  []string  `json:"targets,omitempty"`
	Spec     string    `json:"spec,omitempty"`
	Revision int       `json:"revision,omitempty"` // target revision of a rollback
	Error    string    `json:"error,omitempty"`
	// Lineage is the lineage of the stack whose operation wrote the record
	// ("" in records written before lineages).
	Lineage string `json:"lineage,omitempty"`
}

// NewOpID returns a fresh operation id: "op_" + ULID.
func NewOpID() string { return "op_" + ulid.Make().String() }

// Journal appends to one journal file. It is safe for concurrent use.
type Journal struct {
	f   *os.File
	now func() time.Time

	mu      sync.Mutex // guards writes and written
	written uint64     // records written (not necessarily synced)

	syncMu sync.Mutex // one fsync at a time
	synced uint64     // records known durable
	err    error      // a failed sync poisons the journal
}

// Open opens path for appending, creating it with mode 0600, and cuts off a
// torn last line left by a crash. now stamps records (time.Now if nil).
func Open(path string, now func() time.Time) (*Journal, error) {
	if now == nil {
		now = time.Now
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if err := cutTornTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	return &Journal{f: f, now: now}, nil
}

// cutTornTail truncates whatever follows the last newline and leaves the
// offset at the end.
func cutTornTail(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	end := size
	buf := make([]byte, 4096)
	for end > 0 {
		n := int64(len(buf))
		if end < n {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end != size {
		if err := f.Truncate(end); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	_, err = f.Seek(end, io.SeekStart)
	return err
}

// Append stamps r with a fresh ULID and the time, writes it as one line and
// returns once it is durable.
func (j *Journal) Append(r Record) (Record, error) {
	j.mu.Lock()
	r.ID = ulid.Make().String()
	r.Time = j.now().UTC()
	line, err := json.Marshal(r)
	if err != nil {
		j.mu.Unlock()
		return r, fmt.Errorf("journal: encode: %w", err)
	}
	line = append(line, '\n')
	if _, err := j.f.Write(line); err != nil {
		j.mu.Unlock()
		return r, fmt.Errorf("journal: write: %w", err)
	}
	j.written++
	mine := j.written
	j.mu.Unlock()

	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.err != nil {
		return r, j.err
	}
	if j.synced >= mine {
		return r, nil // someone else's fsync covered this record
	}
	j.mu.Lock()
	upTo := j.written
	j.mu.Unlock()
	if err := j.f.Sync(); err != nil {
		j.err = fmt.Errorf("journal: sync: %w", err)
		return r, j.err
	}
	j.synced = upTo
	return r, nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// Read returns every complete record in path, in order. A missing file has
// no records; a torn last line is ignored; a bad line elsewhere is an error.
func Read(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i < len(b)-1 {
		b = b[:i+1] // torn tail
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("read journal %s:%d: %w", path, line, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
