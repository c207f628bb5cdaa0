package journal

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAppendReadInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := NewOpID()
	if !strings.HasPrefix(op, "op_") || len(op) != 29 {
		t.Fatalf("op id %q", op)
	}
	for _, st := range []string{OpRunning, StepStarted, StepOK, OpSucceeded} {
		if _, err := j.Append(Record{Op: op, Kind: KindStep, Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[3].Status != OpSucceeded {
		t.Fatalf("records = %+v", recs)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].ID <= recs[i-1].ID {
			t.Fatalf("ids not increasing: %s then %s", recs[i-1].ID, recs[i].ID)
		}
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
}

func TestTornTailIsCutOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, _ := Open(path, nil)
	j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpRunning})
	j.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"01TORN","op":"op_1","sta`)
	f.Close()
	if recs, err := Read(path); err != nil || len(recs) != 1 {
		t.Fatalf("read with torn tail: %v, %d records", err, len(recs))
	}
	j, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpSucceeded})
	j.Close()
	recs, err := Read(path)
	if err != nil || len(recs) != 2 || recs[1].Status != OpSucceeded {
		t.Fatalf("after reopen: %v %+v", err, recs)
	}
}

func TestConcurrentAppendsAllDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, _ := Open(path, nil)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := j.Append(Record{Op: "op_x", Kind: KindStep, Status: StepOK}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if j.synced != 50 {
		t.Fatalf("synced = %d, want 50", j.synced)
	}
	j.Close()
	recs, err := Read(path)
	if err != nil || len(recs) != 50 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
}

func BenchmarkAppend(b *testing.B) {
	j, _ := Open(filepath.Join(b.TempDir(), FileName), nil)
	defer j.Close()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			j.Append(Record{Op: "op_bench", Kind: KindStep, Status: StepOK, Resource: "network"})
		}
	})
}
