package journal

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// groupOf runs one append whose fsync is held, then n appends while it is,
// each building a numbered line, with w as the file's writer for the
// second group, and returns each of the n appends' error once the fsync is
// let go.
func groupOf(t *testing.T, j *Journal, n int, w io.Writer) []error {
	t.Helper()
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	j.sync = func() error {
		once.Do(func() { close(held); <-release })
		return j.f.Sync()
	}
	seq := 0
	build := func(dst []byte) ([]byte, error) {
		seq++ // under the journal's lock
		return fmt.Appendf(dst, "{\"n\":%d}\n", seq), nil
	}
	first := make(chan error, 1)
	go func() { first <- j.AppendLines(build) }()
	<-held
	j.mu.Lock()
	j.w = w
	j.mu.Unlock()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = j.AppendLines(build) }()
	}
	// Every one of them built its line (and waits for the fsync held).
	for deadline := time.Now().Add(10 * time.Second); ; {
		j.mu.Lock()
		queued := j.queued
		j.mu.Unlock()
		if queued == uint64(n+1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d appends built their line", queued-1, n)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

// The lines built while a write and fsync are in flight are written
// together, in build order, by one write and one fsync.
func TestAppendsWhileAnFsyncIsInFlightShareTheNextWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cw := &countingWriter{w: j.f}
	for i, err := range groupOf(t, j, 8, cw) {
		if err != nil {
			t.Errorf("append %d: %v", i, err)
		}
	}
	if cw.writes != 1 {
		t.Errorf("the 8 appends made %d writes, want 1", cw.writes)
	}
	if j.synced != 9 {
		t.Errorf("synced = %d, want 9", j.synced)
	}
	b, _ := os.ReadFile(path)
	var want bytes.Buffer
	for n := 1; n <= 9; n++ {
		fmt.Fprintf(&want, "{\"n\":%d}\n", n)
	}
	if !bytes.Equal(b, want.Bytes()) {
		t.Errorf("file:\n%s\nwant, in build order:\n%s", b, want.Bytes())
	}
}

// A write that fails fails every append of its group, leaves no fragment,
// and poisons the journal.
func TestAFailedGroupWriteFailsEveryAppendOfIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i, err := range groupOf(t, j, 5, &shortWriter{w: j.f, n: 12}) {
		if err == nil {
			t.Errorf("append %d of a failed write succeeded", i)
		}
	}
	j.w = j.f
	if _, err := j.Append(Record{Op: "op_1", Kind: KindOp, Status: OpSucceeded}); err == nil {
		t.Error("an append after a failed write succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "{\"n\":1}\n" {
		t.Errorf("file holds %q, want the first group's line alone", b)
	}
}
