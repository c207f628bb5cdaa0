package journal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// shortWriter writes the first n bytes of what it is given, then fails, as a
// full disk or a failing device does.
type shortWriter struct {
	w io.Writer
	n int
}

func (s *shortWriter) Write(p []byte) (int, error) {
	if len(p) > s.n {
		p = p[:s.n]
	}
	n, _ := s.w.Write(p)
	return n, errors.New("no space left on device")
}

// A failed or short write leaves no fragment in the file and poisons the
// journal: no later record can be written after a fragment, even once the
// disk works again.
func TestFailedWriteLeavesNoFragmentAndPoisons(t *testing.T) {
	for _, n := range []int{0, 1, 17, 60} {
		path := filepath.Join(t.TempDir(), FileName)
		j, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpRunning}); err != nil {
			t.Fatal(err)
		}
		j.w = &shortWriter{w: j.f, n: n}
		if _, err := j.Append(Record{Op: "op_1", Kind: KindStep, Status: StepStarted, Resource: "network"}); err == nil {
			t.Fatalf("short write of %d bytes: Append succeeded", n)
		}
		j.w = j.f // the disk works again
		if _, err := j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpSucceeded}); err == nil {
			t.Fatalf("short write of %d bytes: an Append after it succeeded on a poisoned journal", n)
		}
		j.Close()
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) != 1 || !bytes.HasSuffix(b, []byte("\n")) {
			t.Fatalf("short write of %d bytes: file holds a fragment: %q", n, b)
		}
		// The next process carries on.
		j, err = Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpFailed}); err != nil {
			t.Fatal(err)
		}
		j.Close()
		recs, err := Read(path)
		if err != nil || len(recs) != 2 {
			t.Fatalf("short write of %d bytes: %v, %d records", n, err, len(recs))
		}
	}
}

// A failed fsync poisons the journal before anything else is written.
func TestFailedSyncPoisons(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, _ := Open(path, nil)
	defer j.Close()
	j.sync = func() error { return errors.New("I/O error") }
	if _, err := j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpRunning}); err == nil {
		t.Fatal("Append succeeded with a failing fsync")
	}
	size := fileSize(t, path)
	j.sync = j.f.Sync
	if _, err := j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpSucceeded}); err == nil {
		t.Fatal("Append succeeded on a journal whose fsync failed")
	}
	if got := fileSize(t, path); got != size {
		t.Fatalf("a poisoned journal was written to: %d bytes, then %d", size, got)
	}
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A bad or foreign line is named (file:line) with how to repair it.
func TestBadLineIsNamedWithTheRepair(t *testing.T) {
	good := `{"id":"01A","op":"op_1","ts":"2026-01-01T00:00:00Z","kind":"op","status":"running"}`
	tests := []struct {
		name, content string
		line          int
	}{
		{"fragment", good + "\n" + `ed"}` + "\n" + good + "\n", 2},
		{"foreign json", good + "\n" + `{"hello":"world"}` + "\n", 2},
		{"not an object", `[1,2]` + "\n" + good + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			os.WriteFile(path, []byte(tt.content), 0o600)
			_, err := Read(path)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Read: %v, want a CorruptError", err)
			}
			if ce.Line != tt.line || ce.Path != path {
				t.Fatalf("names %s:%d, want %s:%d", ce.Path, ce.Line, path, tt.line)
			}
			msg := err.Error()
			for _, want := range []string{path + ":" + strconv.Itoa(tt.line), "keep a copy", "delete line"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}

// A journal that is a symbolic link is refused by Open and Read, and what it
// points to is left as it was.
func TestSymlinkedJournalIsRefused(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(outside, []byte("keep me\n{torn"), 0o644)
	path := filepath.Join(dir, FileName)
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	if j, err := Open(path, nil); err == nil {
		j.Close()
		t.Fatal("Open followed a symbolic link")
	} else if !errors.Is(err, nofollow.ErrRefused) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open: %v", err)
	}
	if _, err := Read(path); !errors.Is(err, nofollow.ErrRefused) {
		t.Fatalf("Read: %v", err)
	}
	b, _ := os.ReadFile(outside)
	if string(b) != "keep me\n{torn" {
		t.Fatalf("target changed: %q", b)
	}
	// A hard link to a file outside is refused for writing too.
	os.Remove(path)
	if err := os.Link(outside, path); err != nil {
		t.Skip("no hard links here:", err)
	}
	if j, err := Open(path, nil); err == nil {
		j.Close()
		t.Fatal("Open wrote through a hard link")
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me\n{torn" {
		t.Fatalf("target changed: %q", b)
	}
}
