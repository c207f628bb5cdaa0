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
//
// A write that fails, or writes only part of a record, is cut back off the
// file at once, and a failed write or fsync poisons the Journal: every later
// Append fails without writing, so no record ever follows a fragment. A bad
// line that got into the file anyway (a foreign edit, an old bulwark) makes
// Read fail with a *CorruptError naming the file and line and saying how to
// repair it. The journal file is never followed through a symbolic link.
//
// A step's "execute started" may be ended by a "not_sent" record
// (StepNotSent) when the run stopped before its call went out; every reader
// of an operation's records takes them through Sent, which drops the pair.
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
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bulwark-iac/bulwark/core/nofollow"
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
	// StepNotSent ends an "execute started" whose work never went out:
	// the step journaled its start while it waited for a write slot (so
	// that the fsync overlaps the wait), and the run stopped before its
	// Execute was called (an interrupt, another step's failure, a
	// cancelled context). Its Key is the id of the "started" record it
	// ends. Every reader takes the pair as a step that never started (see
	// Sent): nothing was sent under that key, so nothing is looked for by
	// it, nothing is rolled back for it, and no outcome is unknown.
	StepNotSent = "not_sent"
)

// Sent returns recs without the "execute started" records that a
// StepNotSent record ended (matched by its Key, the started record's id),
// and without the StepNotSent records themselves (one that names no start
// of recs ends nothing there): what is left reads as if those steps had
// never started, which is what happened. recs is returned as it is when it
// holds no StepNotSent record; otherwise a new slice.
func Sent(recs []Record) []Record {
	// A not_sent ends only the start it names of its own operation and
	// step: one naming another step's start (a damaged or edited journal)
	// ends nothing, so it can never hide a call that went out.
	type start struct{ op, step, id string }
	var void map[start]bool
	for _, r := range recs {
		if r.Kind == KindStep && r.Status == StepNotSent {
			if void == nil {
				void = map[start]bool{}
			}
			if r.Key != "" {
				void[start{r.Op, r.Step, r.Key}] = true
			}
		}
	}
	if void == nil {
		return recs
	}
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		if r.Kind == KindStep && (r.Status == StepNotSent || (r.Status == StepStarted && void[start{r.Op, r.Step, r.ID}])) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Record kinds.
const (
	KindOp       = "op"       // an operation starts or ends
	KindStep     = "step"     // a phase of a step starts or ends
	KindRollback = "rollback" // the rollback target set, journaled before the first delete
	KindAck      = "ack"      // a person acknowledged an intervention
	// KindState carries a state change that no other record of its commit
	// carries (see Record.Change); it is no operation's, and readers of
	// history skip it.
	KindState = "state"
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
	Key      string    `json:"key,omitempty"`   // a not_sent record: the id of the "started" record it ends
	ResultID string    `json:"result_id,omitempty"`
	Targets  []string  `json:"targets,omitempty"`
	Spec     string    `json:"spec,omitempty"`
	Revision int       `json:"revision,omitempty"` // target revision of a rollback
	// Replace, on an operation's start record, holds the addresses the run
	// named with --replace: its consent, which a resume of it goes on with.
	Replace []string `json:"replace,omitempty"`
	// Scope, on an operation's start record, holds the addresses the run
	// was limited to with --target (plan, apply, teardown): a resume of it
	// stays inside them, never wider.
	Scope []string `json:"scope,omitempty"`
	// User, on an operation's start record and its summary line, names
	// who ran it (BULWARK_USER, else the account's name, else $USER).
	User string `json:"user,omitempty"`
	// Data, on an operation's start record, holds what its plan read of
	// the spec's data entries (sensitive values sealed): a resume of it
	// configures with those values, never with a second read.
	Data  json.RawMessage `json:"data,omitempty"`
	Error string          `json:"error,omitempty"`
	// Lineage is the lineage of the stack whose operation wrote the record
	// ("" in records written before lineages).
	Lineage string `json:"lineage,omitempty"`
	// End and Steps are set on a summary record (KindSummary): when the
	// compacted operation ended and how many records it had.
	End   time.Time `json:"end,omitzero"`
	Steps int       `json:"steps,omitempty"`
	// Unchanged is set on the summary of an operation that changed
	// nothing (see Unchanged); Repeated, Last and LastTime on a summary
	// that stands for more than one such operation in a row (Repeated of
	// them): its Op and Time are the first's, Last and LastTime the last
	// one's id and start, End the last one's end.
	Unchanged bool      `json:"unchanged,omitempty"`
	Repeated  int       `json:"repeated,omitempty"`
	Last      string    `json:"last,omitempty"`
	LastTime  time.Time `json:"last_ts,omitzero"`

	// Rest, Serial and Change are written by a storage backend that keeps
	// the state's changes in the journal, its write-ahead log (see
	// core/storage/filestore). The records of one commit are written
	// together; Rest counts those that follow a record in its commit, so a
	// commit is whole only up to its last record (Rest 0), which carries
	// the state Serial the commit made and its Change (sealed), if any.
	Rest   int             `json:"rest,omitempty"`
	Serial int64           `json:"serial,omitempty"`
	Change json.RawMessage `json:"change,omitempty"`
}

// NewOpID returns a fresh operation id: "op_" + ULID.
func NewOpID() string { return "op_" + ulid.Make().String() }

// Journal appends to one journal file. It is safe for concurrent use.
type Journal struct {
	f    *os.File
	w    io.Writer    // f; tests put a failing writer here
	sync func() error // f.Sync; tests put a failing one here
	now  func() time.Time

	mu      sync.Mutex // guards pending, queued, off and broken
	pending []byte     // lines built and not written yet, in build order
	queued  uint64     // records built (pending or written)
	off     int64      // end of the last whole record written
	broken  error      // a failed write or sync poisons the journal

	syncMu sync.Mutex // one write and fsync at a time; guards what follows
	synced uint64     // records known durable
	spare  []byte     // the buffer pending takes turns with
}

// Open opens path for appending, creating it with mode 0600, and cuts off a
// torn last line left by a crash. A path that is a symbolic link, not a
// regular file, or a file with other hard links is refused. now stamps
// records (time.Now if nil).
func Open(path string, now func() time.Time) (*Journal, error) {
	if now == nil {
		now = time.Now
	}
	if err := nofollow.CheckDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	f, err := nofollow.Open(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	end, err := cutTornTail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	return &Journal{f: f, w: f, sync: f.Sync, now: now, off: end}, nil
}

// cutTornTail truncates whatever follows the last newline and leaves the
// offset at the end, which it returns.
func cutTornTail(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
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
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end != size {
		if err := f.Truncate(end); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
	}
	_, err = f.Seek(end, io.SeekStart)
	return end, err
}

// Append stamps r with a fresh ULID and the time, writes it as one line and
// returns once it is durable. After a failed write or fsync every Append
// fails, writing nothing.
func (j *Journal) Append(r Record) (Record, error) {
	err := j.AppendLines(func(dst []byte) ([]byte, error) {
		r.ID = ulid.Make().String()
		r.Time = j.now().UTC()
		line, err := r.AppendJSON(dst)
		if err != nil {
			return nil, fmt.Errorf("journal: encode: %w", err)
		}
		return append(line, '\n'), nil
	})
	return r, err
}

// Now is the journal's clock, in UTC.
func (j *Journal) Now() time.Time { return j.now().UTC() }

// AppendLines writes what build appends to dst (whole lines, each ending
// in a newline; dst is the journal's buffer of lines not written yet, and
// build returns it extended) and returns once that is durable, sharing writes and fsyncs with
// concurrent callers (group commit): the lines built while another
// caller's write and fsync are in flight are written together, in one
// write and one fsync, by the first of their callers to get the next turn.
// build runs under the journal's lock, so what it numbers is numbered in
// the file's order; an error from build writes nothing and is returned as
// it is. After a failed write or fsync every call fails, writing nothing.
func (j *Journal) AppendLines(build func(dst []byte) ([]byte, error)) error {
	j.mu.Lock()
	if j.broken != nil {
		j.mu.Unlock()
		return j.broken
	}
	pending, err := build(j.pending)
	if err != nil {
		j.mu.Unlock()
		return err // what build appended is past j.pending's length: dropped
	}
	j.pending = pending
	j.queued++
	mine := j.queued
	j.mu.Unlock()

	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= mine {
		return nil // someone else's write and fsync carried this record
	}
	j.mu.Lock()
	if j.broken != nil {
		j.mu.Unlock()
		return j.broken
	}
	// Everything built so far, this caller's record among it. Only the
	// holder of syncMu writes, so the file keeps the order of build.
	batch, upTo := j.pending, j.queued
	j.pending = j.spare[:0]
	j.mu.Unlock()
	if n, err := j.w.Write(batch); err != nil || n != len(batch) {
		if err == nil {
			err = io.ErrShortWrite
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		j.broken = j.cutBack(fmt.Errorf("journal %s: write: %w", j.f.Name(), err))
		j.pending = nil
		return j.broken
	}
	j.mu.Lock()
	j.off += int64(len(batch))
	j.mu.Unlock()
	j.spare = batch
	if err := j.sync(); err != nil {
		err = fmt.Errorf("journal %s: sync: %w (this command records nothing more)", j.f.Name(), err)
		j.mu.Lock()
		if j.broken == nil {
			j.broken = err
		}
		j.mu.Unlock()
		return err
	}
	j.synced = upTo
	return nil
}

// Broken is the error that poisoned the journal, or nil.
func (j *Journal) Broken() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.broken
}

// Size is the offset of the end of the last whole record written.
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.off
}

// cutBack removes what a failed write left after the last whole record, so
// no fragment stays in the file for a later record to be glued onto. Called
// with mu held; returns the error that poisons the journal.
func (j *Journal) cutBack(err error) error {
	terr := j.f.Truncate(j.off)
	if terr == nil {
		_, terr = j.f.Seek(j.off, io.SeekStart)
	}
	if terr != nil {
		// The fragment stays at the tail, with no newline: the next Open
		// cuts it off as a torn record, and nothing follows it meanwhile.
		return fmt.Errorf("%w; cutting the partial record off also failed: %v (this command records nothing more)", err, terr)
	}
	return fmt.Errorf("%w (the partial record was cut off; this command records nothing more)", err)
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// ErrCorrupt matches a *CorruptError with errors.Is.
var ErrCorrupt = errors.New("journal has a bad line")

// CorruptError is a line of the journal that is not a journal record: a
// fragment, a foreign edit, something that does not parse.
type CorruptError struct {
	Path string // where the journal is: a file, or a backend's table or object
	Line int    // the line (a file), or the record's place there (a row's seq)
	Err  error
	// Fix, when set, says how to repair the record where its backend keeps
	// it (a row of a database); empty: the file's line, deleted with sed.
	Fix string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal %s:%d is not a journal record (%v): %s and run `bulwark doctor` again", e.Path, e.Line, e.Err, e.Repair())
}

// Repair says how to repair the record: Fix, else how to delete the file's
// line (keeping a copy first).
func (e *CorruptError) Repair() string {
	if e.Fix != "" {
		return e.Fix
	}
	return fmt.Sprintf("keep a copy of the file, then delete line %d (e.g. `sed -i '%dd' %s`)", e.Line, e.Line, e.Path)
}

func (e *CorruptError) Unwrap() error { return e.Err }

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Read returns every complete record in path, in order. A missing file has
// no records; a torn last line is ignored; a bad line elsewhere is a
// *CorruptError. A path that is a symbolic link is refused.
func Read(path string) ([]Record, error) {
	recs, bad, err := Scan(path)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0]
	}
	return recs, nil
}

// Scan is Read for those that must go on past bad lines (status, doctor):
// it returns the good records and a *CorruptError for each bad line. err is
// for a file that cannot be read at all.
func Scan(path string) (recs []Record, bad []*CorruptError, err error) {
	recs, _, bad, err = ScanEnds(path)
	return recs, bad, err
}

// ScanEnds is Scan that also returns, for each good record, the offset just
// past its line (where the file would be cut to end with it). It holds
// every record in memory: a reader that needs less streams with Each.
func ScanEnds(path string) (recs []Record, ends []int64, bad []*CorruptError, err error) {
	bad, err = Each(path, Options{}, func(r *Record, end int64) error {
		recs = append(recs, *r)
		ends = append(ends, end)
		return nil
	})
	return recs, ends, bad, err
}

// Options narrow what Each decodes.
type Options struct {
	// Kinds, when set, are the record kinds wanted: a line that cannot be
	// one of them (it has no "kind" key with one of these values at any
	// depth) is skipped without being decoded, so reading the operations'
	// records of a long journal costs a byte search per step record.
	// Skipped lines are not checked: a bad one is reported only by a
	// reader that decodes it.
	Kinds []string
	// NoChange skips decoding the state changes records carry
	// (Record.Change stays nil): what a reader of history needs.
	NoChange bool
}

// maxLine bounds one journal line: a record whose change puts one large
// resource is long, but never this long; a longer line is reported bad.
const maxLine = 64 << 20

// Each calls fn with each complete record of path, in order, and the
// offset just past its line, reading the file a buffer at a time: memory is
// one line, not the journal. A missing file has no records; a torn last
// line (no newline) is ignored; a bad line elsewhere is returned as a
// *CorruptError and skipped. r is reused after fn returns: fn copies what it
// keeps. An error from fn stops the scan and is returned. A path that is a
// symbolic link is refused.
func Each(path string, o Options, fn func(r *Record, end int64) error) ([]*CorruptError, error) {
	if err := nofollow.CheckDir(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	f, err := nofollow.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	return EachIn(f, path, o, fn)
}

// EachIn is Each over an open file (named path in errors).
func EachIn(rd io.Reader, path string, o Options, fn func(r *Record, end int64) error) ([]*CorruptError, error) {
	var bad []*CorruptError
	br := bufio.NewReaderSize(rd, 256<<10)
	var long []byte // a line longer than the buffer, gathered
	line := 0
	var off int64
	var r Record
	var dec struct {
		*Record
		Change *skipJSON `json:"change,omitempty"`
	}
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > maxLine {
				return bad, fmt.Errorf("read journal %s: line %d is longer than %d bytes", path, line+1, maxLine)
			}
			long = append(long, chunk...)
			continue
		}
		if err == io.EOF {
			return bad, nil // what is left has no newline: a torn tail
		}
		if err != nil {
			return bad, fmt.Errorf("read journal %s: %w", path, err)
		}
		text := chunk
		if long != nil {
			text = append(long, chunk...)
			long = nil
		}
		line++
		off += int64(len(text))
		text = text[:len(text)-1]
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		if len(o.Kinds) > 0 && !mayBeKind(text, o.Kinds) {
			continue
		}
		r = Record{}
		if o.NoChange {
			dec.Record = &r
			err = json.Unmarshal(text, &dec)
		} else {
			err = json.Unmarshal(text, &r)
		}
		if err != nil {
			bad = append(bad, &CorruptError{Path: path, Line: line, Err: err})
			continue
		}
		if r.ID == "" || (r.Op == "" && r.Kind != KindState) || r.Kind == "" {
			bad = append(bad, &CorruptError{Path: path, Line: line, Err: errors.New("no id, op or kind")})
			continue
		}
		if len(o.Kinds) > 0 && !slices.Contains(o.Kinds, r.Kind) {
			continue
		}
		if err := fn(&r, off); err != nil {
			return bad, err
		}
	}
}

// skipJSON decodes nothing: a field a reader does not want.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// mayBeKind reports whether line holds a "kind" key whose value is one of
// kinds (at any depth, whatever the spacing): a line for which it is false
// is no record of those kinds.
func mayBeKind(line []byte, kinds []string) bool {
	const key = `"kind"`
	for {
		i := bytes.Index(line, []byte(key))
		if i < 0 {
			return false
		}
		line = line[i+len(key):]
		v := bytes.TrimLeft(line, " \t\r")
		if len(v) == 0 || v[0] != ':' {
			continue
		}
		v = bytes.TrimLeft(v[1:], " \t\r")
		for _, k := range kinds {
			if len(v) >= len(k)+2 && v[0] == '"' && string(v[1:1+len(k)]) == k && v[1+len(k)] == '"' {
				return true
			}
		}
	}
}
