package journal

import (
	"bytes"
	"encoding/json"
	"fmt"

	"time"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// KindSummary is the one line an operation's records are compacted to once
// it is old and finished: its type, final status and error, when it started
// (Time) and ended (End), and how many records it had (Steps).
const KindSummary = "summary"

// DefaultKeepOperations is how many of the newest operations keep every
// record (--keep-operations).
const DefaultKeepOperations = 20

// Compact keeps the step records of the newest keep operations whole and
// replaces every older finished operation's records by one summary line, so
// the journal grows with the number of operations (one line each), not with
// the records every run writes. An operation that is unfinished (running, a
// rollback incomplete) or stopped for a person is never compacted, whatever
// its age: resume and ack read its records.
//
// Compacting rewrites the journal only when more than twice keep operations
// are whole, so a run pays for it once in keep runs, and then atomically
// (a temp file, fsync, rename, fsync of the folder): a crash leaves the old
// journal or the new one. The caller holds the stack's lock and has no
// Journal open on path. It returns how many operations it compacted.
func Compact(path string, keep int) (int, error) {
	recs, err := Read(path)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	out, n := CompactRecords(recs, keep)
	if n == 0 {
		return 0, nil
	}
	if err := WriteAll(path, out); err != nil {
		return 0, err
	}
	return n, nil
}

// CompactRecords is Compact's decision over records in memory: it returns
// the records to keep (recs itself when there is nothing to compact) and how
// many operations it summarized.
func CompactRecords(recs []Record, keep int) ([]Record, int) {
	var ops Ops
	first := map[string]int{}
	for i, r := range recs {
		if r.Kind == KindState {
			continue
		}
		if _, ok := first[r.Op]; !ok {
			first[r.Op] = i
		}
		ops.Add(&r, 0)
	}
	compact := ops.Compactable(keep)
	if len(compact) == 0 {
		return recs, 0
	}
	var out []Record
	written := map[string]bool{}
	for _, r := range recs {
		if r.Kind == KindState || !compact[r.Op] {
			out = append(out, r)
			continue
		}
		if written[r.Op] {
			continue
		}
		written[r.Op] = true
		out = append(out, ops.Summary(r.Op))
	}
	return out, len(compact)
}

// OpInfo is what compaction learns of one operation from its records.
type OpInfo struct {
	ID         string
	FirstID    string // the id of its first record: its summary's
	N          int    // its records
	Status     string // of its last op record
	Type       string
	Error      string
	Start, End time.Time
	Lineage    string
	Summarized bool // already one summary line
	// FirstSeg and LastSeg are the segments (a caller's numbering) of its
	// first and last records Add was given.
	FirstSeg, LastSeg int
}

// Ops gathers OpInfo from a journal's records, oldest first, without
// keeping the records: what a compaction over a journal too large to hold
// decides from.
type Ops struct {
	byID  map[string]*OpInfo
	Order []*OpInfo
}

// Add counts r (in segment seg) to its operation. State records (no
// operation's) are ignored.
func (o *Ops) Add(r *Record, seg int) {
	if r.Kind == KindState {
		return
	}
	if o.byID == nil {
		o.byID = map[string]*OpInfo{}
	}
	op := o.byID[r.Op]
	if op == nil {
		op = &OpInfo{ID: r.Op, FirstID: r.ID, Start: r.Time, FirstSeg: seg}
		o.byID[r.Op] = op
		o.Order = append(o.Order, op)
	}
	op.N++
	op.LastSeg = seg
	if r.Lineage != "" {
		op.Lineage = r.Lineage
	}
	switch r.Kind {
	case KindSummary:
		op.Summarized = true
		op.Status, op.Error, op.Type, op.End = r.Status, r.Error, r.Type, r.End
		if r.Steps > 0 {
			op.N += r.Steps - 1
		}
	case KindOp:
		op.Status, op.Error = r.Status, r.Error
		if r.Type != "" {
			op.Type = r.Type
		}
		op.End = r.Time
	}
}

// Get is the operation id's info (nil: no record of it was added).
func (o *Ops) Get(id string) *OpInfo { return o.byID[id] }

// Whole are the operations not summarized yet, oldest first.
func (o *Ops) Whole() []*OpInfo {
	var out []*OpInfo
	for _, op := range o.Order {
		if !op.Summarized {
			out = append(out, op)
		}
	}
	return out
}

// Compactable is the retention rule: once more than twice keep operations
// are whole, the newest keep stay whole and, of the older ones, the
// finished ones are to be summarized (their ids). Below that it is empty,
// so a journal pays for a compaction once in keep operations.
func (o *Ops) Compactable(keep int) map[string]bool {
	if keep <= 0 {
		keep = DefaultKeepOperations
	}
	whole := o.Whole()
	if len(whole) <= 2*keep {
		return nil
	}
	compact := map[string]bool{}
	for _, op := range whole[:len(whole)-keep] {
		if finished(op.Status) {
			compact[op.ID] = true
		}
	}
	return compact
}

// Summary is the one line operation id's records are compacted to.
func (o *Ops) Summary(id string) Record {
	op := o.byID[id]
	return Record{ID: op.FirstID, Op: id, Time: op.Start, End: op.End, Kind: KindSummary, Type: op.Type,
		Status: op.Status, Error: op.Error, Steps: op.N, Lineage: op.Lineage}
}

// WriteAll replaces the journal at path by recs, atomically (a temp file,
// fsync, rename, fsync of the folder): a crash leaves the old journal or the
// new one. The caller holds the stack's lock and has no Journal open on it.
func WriteAll(path string, recs []Record) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("compact journal: %w", err)
		}
	}
	if err := nofollow.CheckReplaceable(path); err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("compact journal %s: %w", path, err)
	}
	return nil
}

// finished reports whether an operation with this final status needs none
// of its records again: it ended, and nobody has to act on it.
func finished(status string) bool {
	switch status {
	case OpSucceeded, OpFailed, OpCompensated, OpRefused:
		return true
	}
	return false
}
