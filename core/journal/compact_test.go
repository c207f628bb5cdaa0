package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// writeOps journals n operations of three records each, ending with the
// statuses given in turn.
func writeOps(t *testing.T, path string, statuses []string) []string {
	t.Helper()
	j, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var ids []string
	for _, st := range statuses {
		op := NewOpID()
		ids = append(ids, op)
		for _, r := range []Record{
			{Op: op, Kind: KindOp, Type: "apply", Status: OpRunning, Lineage: "L"},
			{Op: op, Kind: KindStep, Step: "a", Phase: "execute", Status: StepOK, Lineage: "L"},
		} {
			if _, err := j.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		if st != OpRunning {
			if _, err := j.Append(Record{Op: op, Kind: KindOp, Type: "apply", Status: st, Error: "e-" + st, Lineage: "L"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids
}

func TestCompactKeepsNewestWholeAndSummarizesOldFinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	var statuses []string
	for i := 0; i < 50; i++ {
		statuses = append(statuses, OpSucceeded)
	}
	// Old operations nobody may forget: unfinished, stopped for a person.
	statuses[3], statuses[7], statuses[9] = OpRunning, OpIntervention, OpRollbackIncomplete
	statuses[11] = OpCompensated
	ids := writeOps(t, path, statuses)

	n, err := Compact(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n != 37 { // the 40 oldest, less the three that must stay whole
		t.Errorf("compacted %d operations, want 37", n)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	perOp := map[string][]Record{}
	for _, r := range recs {
		perOp[r.Op] = append(perOp[r.Op], r)
	}
	for i, id := range ids {
		rs := perOp[id]
		switch {
		case i == 3 || i == 7 || i == 9 || i >= 40:
			if len(rs) < 2 || rs[0].Kind == KindSummary {
				t.Errorf("operation %d (%s) was compacted: %+v", i, statuses[i], rs)
			}
		default:
			if len(rs) != 1 || rs[0].Kind != KindSummary || rs[0].Status != statuses[i] || rs[0].Steps != 3 || rs[0].Lineage != "L" ||
				rs[0].Error != "e-"+statuses[i] || rs[0].End.IsZero() || rs[0].Time.After(rs[0].End) {
				t.Errorf("operation %d: want one summary line, got %+v", i, rs)
			}
		}
	}
	// Under twice keep whole operations, nothing is rewritten.
	before, _ := os.ReadFile(path)
	if n, err := Compact(path, 10); err != nil || n != 0 {
		t.Errorf("second compaction: %d, %v", n, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a compaction with nothing to do rewrote the journal")
	}
	// The journal goes on being appended to.
	j, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(Record{Op: NewOpID(), Kind: KindOp, Status: OpRunning}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
}

func TestCompactRefusesALinkedJournal(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	var statuses []string
	for i := 0; i < 30; i++ {
		statuses = append(statuses, OpSucceeded)
	}
	writeOps(t, target, statuses)
	before, _ := os.ReadFile(target)
	path := filepath.Join(dir, "stack", FileName)
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(path, 5); err == nil {
		t.Error("compaction through a link was accepted")
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) {
		t.Error("the link's target was changed")
	}
}

// TestCollapseMergesOnlyOperationsThatChangedNothing is the merge rule:
// consecutive summaries of no-op applies (an update that succeeded whose
// records are its op records and skipped Checks) become one line; an
// operation that mutated, tried to, failed, was compensated, refused,
// needs a person or is unfinished never merges, nor does a summary written
// before the rule, nor one of another lineage.
func TestCollapseMergesOnlyOperationsThatChangedNothing(t *testing.T) {
	op := func(id, typ, status, errText string, steps ...Record) []Record {
		out := []Record{{Op: id, Kind: KindOp, Type: typ, Status: OpRunning, Lineage: "L"}}
		for _, s := range steps {
			s.Op, s.Kind, s.Lineage = id, KindStep, "L"
			out = append(out, s)
		}
		if status != OpRunning {
			out = append(out, Record{Op: id, Kind: KindOp, Type: typ, Status: status, Error: errText, Lineage: "L"})
		}
		return out
	}
	skipped := Record{Step: "r", Phase: "check", Status: StepSkipped}
	cases := []struct {
		name  string
		other []Record // the operation between two no-op applies
		merge bool     // all three collapse into one line
	}{
		{"a no-op apply", op("b", "update", OpSucceeded, "", skipped), true},
		{"a no-op apply with no steps", op("b", "update", OpSucceeded, ""), true},
		{"an execute that succeeded", op("b", "update", OpSucceeded, "", skipped, Record{Step: "s", Phase: "execute", Status: StepStarted}, Record{Step: "s", Phase: "execute", Status: StepOK}), false},
		{"an execute started only", op("b", "update", OpSucceeded, "", Record{Step: "s", Phase: "execute", Status: StepStarted}), false},
		{"an update's own steps (a revision staged)", op("b", "update", OpSucceeded, "", Record{Step: "meta:stage", Phase: "execute", Status: StepOK}), false},
		{"a verify", op("b", "update", OpSucceeded, "", Record{Step: "s", Phase: "verify", Status: StepOK}), false},
		{"a failed check", op("b", "update", OpFailed, "boom", Record{Step: "s", Phase: "check", Status: StepFailed, Error: "boom"}), false},
		{"a failed update without steps", op("b", "update", OpFailed, "boom"), false},
		{"a success with an error", op("b", "update", OpSucceeded, "note", skipped), false},
		{"a compensated update", op("b", "update", OpCompensated, "e", Record{Step: "s", Phase: "compensate", Status: StepOK}), false},
		{"a refused update", op("b", "update", OpRefused, "refused"), false},
		{"a first apply (records a revision)", op("b", "apply", OpSucceeded, ""), false},
		{"a teardown", op("b", "teardown", OpSucceeded, "", skipped), false},
		{"a rollback", op("b", "rollback", OpSucceeded, "", skipped), false},
		{"a rollback record", append(op("b", "update", OpSucceeded, "", skipped), Record{Op: "b", Kind: KindRollback, Status: StepStarted, Lineage: "L"}), false},
		{"an acknowledgement", append(op("b", "update", OpSucceeded, "", skipped), Record{Op: "b", Kind: KindAck, Status: "acknowledged", Lineage: "L"}), false},
		{"a summary written before the rule", []Record{{Op: "b", Kind: KindSummary, Type: "update", Status: OpSucceeded, Steps: 3, Lineage: "L"}}, false},
		{"a no-op of another lineage", []Record{{Op: "b", Kind: KindSummary, Type: "update", Status: OpSucceeded, Steps: 3, Unchanged: true, Lineage: "M"}}, false},
		{"a collapsed line", []Record{{Op: "b", Kind: KindSummary, Type: "update", Status: OpSucceeded, Steps: 9, Unchanged: true, Repeated: 3, Last: "b3", Lineage: "L"}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var recs []Record
			recs = append(recs, op("a", "update", OpSucceeded, "", skipped)...)
			recs = append(recs, c.other...)
			recs = append(recs, op("c", "update", OpSucceeded, "", skipped)...)
			// Twelve more, newest, kept whole: a, b and c are compacted.
			for i := range 12 {
				recs = append(recs, op(fmt.Sprintf("z%02d", i), "update", OpSucceeded, "", Record{Step: "s", Phase: "execute", Status: StepOK})...)
			}
			out, n := CompactRecords(recs, 5)
			if n < 2 {
				t.Fatalf("compacted %d operation(s)", n)
			}
			var sums []Record // of a, b and c (the z ones are updates that changed something)
			for _, r := range out {
				if r.Kind == KindSummary && (r.Op == "a" || r.Op == "b" || r.Op == "c") {
					sums = append(sums, r)
				}
			}
			if c.merge {
				want := 3 + max(c.other[0].Repeated, 1) - 1
				if len(sums) != 1 || sums[0].Op != "a" || sums[0].Repeated != want || sums[0].Last != "c" || !sums[0].Unchanged {
					t.Fatalf("want one line for a..c, repeated %d: %+v", want, sums)
				}
				return
			}
			if len(sums) != 3 || sums[0].Op != "a" || sums[1].Op != "b" || sums[2].Op != "c" {
				t.Fatalf("want three lines a, b, c: %+v", sums)
			}
			for _, s := range sums {
				if s.Repeated > 1 {
					t.Errorf("%s collapsed: %+v", s.Op, s)
				}
			}
			if sums[1].Unchanged && sums[1].Lineage == "L" {
				t.Errorf("b is marked unchanged: %+v", sums[1])
			}
		})
	}
	// An unfinished or intervention operation is never summarized, so it
	// sits between two no-ops and keeps them apart.
	for _, st := range []string{OpRunning, OpIntervention, OpRollbackIncomplete} {
		var recs []Record
		recs = append(recs, op("a", "update", OpSucceeded, "", skipped)...)
		recs = append(recs, op("b", "update", st, "")...)
		recs = append(recs, op("c", "update", OpSucceeded, "", skipped)...)
		for i := range 12 {
			recs = append(recs, op(fmt.Sprintf("z%02d", i), "update", OpSucceeded, "", skipped)...)
		}
		out, _ := CompactRecords(recs, 5)
		for _, r := range out {
			if r.Kind == KindSummary && (r.Op == "b" || (r.Op == "a" && r.Last != "")) {
				t.Errorf("%s: %+v", st, r)
			}
			if r.Op == "b" && r.Kind != KindOp && r.Kind != KindStep {
				t.Errorf("%s: b compacted: %+v", st, r)
			}
		}
	}
}

// KeepNone summarizes every finished operation, however few, and keeps the
// unfinished ones whole; a summary carries none of the records' sealed
// data (what a plan read, a committed change).
func TestCompactKeepNoneSummarizesEveryFinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	ids := writeOps(t, path, []string{OpSucceeded, OpFailed, OpRunning})
	j, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Sealed-looking payloads on a finished operation's records.
	if _, err := j.Append(Record{Op: ids[0], Kind: KindStep, Step: "b", Phase: "execute", Status: StepOK, Lineage: "L",
		Data: []byte(`{"x":"sealed:v1:k:abc"}`), Change: []byte(`{"put":"sealed:v1:k:def"}`)}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if n, err := Compact(path, 20); err != nil || n != 0 {
		t.Fatalf("keep 20 over 3 operations: compacted %d, %v; want none", n, err)
	}
	n, err := Compact(path, KeepNone)
	if err != nil || n != 2 {
		t.Fatalf("KeepNone compacted %d, %v; want the 2 finished", n, err)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for _, r := range recs {
		if len(r.Data) > 0 || len(r.Change) > 0 {
			t.Errorf("record %+v keeps sealed data after KeepNone", r)
		}
		switch {
		case r.Op == ids[2]:
			whole++
		case r.Kind != KindSummary:
			t.Errorf("finished operation %s keeps a %s record", r.Op, r.Kind)
		}
	}
	if whole != 2 {
		t.Errorf("the unfinished operation keeps %d records, want its 2", whole)
	}
}
