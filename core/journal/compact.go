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
	if keep <= 0 {
		keep = DefaultKeepOperations
	}
	type opInfo struct {
		first, last int // indexes of its first and last op record
		n           int // records
		status      string
		typ, errMsg string
		start, end  time.Time
		lineage     string
		summarized  bool // already one summary line
	}
	ops := map[string]*opInfo{}
	var order []string
	for i, r := range recs {
		if r.Kind == KindState {
			continue
		}
		o := ops[r.Op]
		if o == nil {
			o = &opInfo{first: i, start: r.Time}
			ops[r.Op] = o
			order = append(order, r.Op)
		}
		o.n++
		if r.Lineage != "" {
			o.lineage = r.Lineage
		}
		switch r.Kind {
		case KindSummary:
			o.summarized = true
		case KindOp:
			o.last = i
			o.status, o.errMsg = r.Status, r.Error
			if r.Type != "" {
				o.typ = r.Type
			}
			o.end = r.Time
		}
	}
	whole := 0
	for _, id := range order {
		if !ops[id].summarized {
			whole++
		}
	}
	if whole <= 2*keep {
		return recs, 0
	}
	// The newest keep operations stay whole; of the older ones, the
	// finished ones are summarized.
	compact := map[string]bool{}
	left := whole - keep
	for _, id := range order {
		o := ops[id]
		if left == 0 {
			break
		}
		if o.summarized {
			continue
		}
		left--
		if finished(o.status) {
			compact[id] = true
		}
	}
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
		o := ops[r.Op]
		out = append(out, Record{ID: recs[o.first].ID, Op: r.Op, Time: o.start, End: o.end, Kind: KindSummary, Type: o.typ,
			Status: o.status, Error: o.errMsg, Steps: o.n, Lineage: o.lineage})
	}
	return out, len(compact)
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
