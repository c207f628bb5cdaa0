package journal

import (
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
