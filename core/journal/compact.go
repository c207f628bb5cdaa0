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

// KeepNone, given to a compaction as the operations to keep whole, keeps
// none: every finished operation is summarized now, whatever their number
// (the rule's hysteresis is skipped). A `secrets rotate` that succeeded
// asks for it, so that no finished operation's records (what it read,
// the changes it committed) stay sealed under the key it retired: a
// summary holds no sealed value.
const KeepNone = -1

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
	return Collapse(out), len(compact)
}

// Unchanged is the rule of what an operation's summary may be collapsed
// with others for: the operation changed nothing. Only an update (every
// apply after a stack's first; the first always records a revision) that
// succeeded without an error, whose records are its op records and Checks
// that found a step done (skipped): a no-op apply. Any other record (an
// Execute started, ok or failed, a Verify, a compensation, a rollback, an
// acknowledgement, a failed Check, a kind this bulwark does not know) is a
// change, or an attempt at one, and keeps the summary its own line; so is
// an operation that failed, was compensated, refused, needs a person or is
// unfinished.
func Unchanged(op *OpInfo) bool {
	return !op.Changed && op.Type == "update" && op.Status == OpSucceeded && op.Error == ""
}

// changes reports whether r, one of an operation's records, says it did,
// tried or was asked for anything beyond finding everything done.
func changes(r *Record) bool {
	switch r.Kind {
	case KindOp:
		return r.Error != "" || (r.Status != OpRunning && r.Status != OpSucceeded)
	case KindStep:
		return r.Phase != "check" || r.Status != StepSkipped
	case KindSummary:
		return !r.Unchanged
	}
	return true
}

// Collapsible reports whether summary b, the line right after summary a,
// collapses into a: both stand for operations that changed nothing (see
// Unchanged), of one type and lineage. A summary written before this rule
// (no "unchanged") never collapses.
func Collapsible(a, b *Record) bool {
	return a.Kind == KindSummary && b.Kind == KindSummary && a.Unchanged && b.Unchanged &&
		a.Type == b.Type && a.Status == OpSucceeded && b.Status == OpSucceeded &&
		a.Error == "" && b.Error == "" && a.Lineage == b.Lineage && a.User == b.User
}

// Collapse merges each run of consecutive collapsible summaries (see
// Collapsible) into its first line, which then says how many operations it
// stands for (Repeated), the last one's id and start (Last, LastTime) and
// end (End), and their records in all (Steps): repeated no-op applies,
// once compacted, hold one line, not one each, so the journal stops
// growing under them. Records are merged in place; recs is reused.
func Collapse(recs []Record) []Record {
	out := recs[:0]
	for _, r := range recs {
		if n := len(out); n > 0 && Collapsible(&out[n-1], &r) {
			Merge(&out[n-1], &r)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Merge folds summary b, which Collapsible(a, b) allows, into a: a then
// stands for the operations of both.
func Merge(a, b *Record) {
	a.Repeated = max(a.Repeated, 1) + max(b.Repeated, 1)
	a.Steps += max(b.Steps, 1)
	a.End = b.End
	a.Last, a.LastTime = b.Op, b.Time
	if b.Last != "" {
		a.Last, a.LastTime = b.Last, b.LastTime
	}
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
	User       string // who ran it (its start record's User)
	Summarized bool   // already one summary line
	// Changed: a record of it says it changed, or tried to change,
	// something (see Unchanged). Right only when Add was given every
	// record of it, not its op records alone.
	Changed bool
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
	op.Changed = op.Changed || changes(r)
	if r.Lineage != "" {
		op.Lineage = r.Lineage
	}
	if r.User != "" {
		op.User = r.User
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
// so a journal pays for a compaction once in keep operations. With
// KeepNone every finished whole operation is.
func (o *Ops) Compactable(keep int) map[string]bool {
	whole := o.Whole()
	n := Compacted(len(whole), keep)
	if n == 0 {
		return nil
	}
	compact := map[string]bool{}
	for _, op := range whole[:n] {
		if Finished(op.Status) {
			compact[op.ID] = true
		}
	}
	return compact
}

// Compacted is the retention rule's count: of whole operations (not
// summarized yet, oldest first), how many of the oldest are looked at for
// summary (those of them Finished are summarized). Once more than twice
// keep are whole, the newest keep stay whole; below that none is looked
// at, so a journal pays for a compaction once in keep operations. A
// backend that learns its operations its own way (pgstore, from its rows)
// applies the same rule through this and Finished.
func Compacted(whole, keep int) int {
	if keep == KeepNone {
		return whole
	}
	if keep <= 0 {
		keep = DefaultKeepOperations
	}
	if whole <= 2*keep {
		return 0
	}
	return whole - keep
}

// Summary is the one line operation id's records are compacted to. It is
// marked Unchanged (see Unchanged) only when Add was given every record of
// the operation: a caller that added its op records alone takes the
// summary from an Ops given them all.
func (o *Ops) Summary(id string) Record {
	op := o.byID[id]
	return Record{ID: op.FirstID, Op: id, Time: op.Start, End: op.End, Kind: KindSummary, Type: op.Type,
		Status: op.Status, Error: op.Error, Steps: op.N, Lineage: op.Lineage, User: op.User, Unchanged: Unchanged(op)}
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

// Finished reports whether an operation with this final status needs none
// of its records again: it ended, and nobody has to act on it.
func Finished(status string) bool {
	switch status {
	case OpSucceeded, OpFailed, OpCompensated, OpRefused:
		return true
	}
	return false
}
