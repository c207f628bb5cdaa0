package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWithMode(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "state.json")
	for _, content := range []string{"first", "second, longer content"} {
		if err := Write(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Fatalf("content = %q, want %q", got, content)
		}
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("folder holds %d entries, want only the target (no temp files left)", len(entries))
	}
}

func TestWriteFailureLeavesOldContent(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "state.json")
	if err := Write(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A folder in the way of the rename makes the write fail late.
	bad := filepath.Join(dir, "sub")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(bad, []byte("new"), 0o600); err == nil {
		t.Fatal("write over a folder succeeded")
	}
	got, _ := os.ReadFile(name)
	if string(got) != "old" {
		t.Fatalf("content = %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("temp file left behind: %d entries", len(entries))
	}
}
