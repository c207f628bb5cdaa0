package stack_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// journalIn reads the journal of the stack folder dir as the file backend
// does: every segment, oldest first (the live journal.jsonl holds only what
// was written since the last Checkpoint sealed it).
func journalIn(t *testing.T, dir string) []journal.Record {
	t.Helper()
	recs, bad, err := filestore.New(dir, storage.Options{Stack: filepath.Base(dir)}).Journal(context.Background())
	if err != nil || len(bad) > 0 {
		t.Fatalf("journal of %s: %v %v", dir, bad, err)
	}
	return recs
}

// journalBytes is every byte of the journal of the stack folder dir: the
// sealed segments in order, then the live one.
func journalBytes(t *testing.T, dir string) []byte {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "journal", "*.jsonl"))
	sort.Strings(names)
	var out []byte
	for _, p := range append(names, filepath.Join(dir, journal.FileName)) {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// rewriteJournal replaces the journal of the stack folder dir by recs, as
// one journal.jsonl of the layout before segments (which loads as it is).
// The state's snapshot must cover every change (it does after a command).
func rewriteJournal(t *testing.T, dir string, recs []journal.Record) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, "journal")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, journal.FileName)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := journal.WriteAll(path, recs); err != nil {
		t.Fatal(err)
	}
}
