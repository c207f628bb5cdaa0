package lock

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/storage"
)

func TestSecondAcquireNamesHolder(t *testing.T) {
	dir := t.TempDir()
	h := storage.Holder{Op: "op_A", PID: os.Getpid(), Host: "here", Since: time.Now()}
	l, err := Acquire(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir, storage.Holder{Op: "op_B", PID: 1})
	var le *storage.LockedError
	if !errors.As(err, &le) || !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("second acquire: %v", err)
	}
	if le.Holder == nil || le.Holder.Op != "op_A" {
		t.Fatalf("holder = %+v", le.Holder)
	}
	if p, _ := Peek(dir); p == nil || p.Op != "op_A" {
		t.Fatalf("peek = %+v", p)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if p, _ := Peek(dir); p != nil {
		t.Fatalf("peek after release = %+v", p)
	}
	l2, err := Acquire(dir, storage.Holder{Op: "op_C", PID: 2})
	if err != nil {
		t.Fatal(err)
	}
	l2.Release()
}

func TestStaleRecordIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	// A holder record with no flock behind it: what a kill -9 leaves.
	os.WriteFile(dir+"/"+FileName, []byte(`{"op":"op_DEAD","pid":999999,"host":"h","since":"2026-01-01T00:00:00Z"}`), 0o600)
	l, err := Acquire(dir, storage.Holder{Op: "op_NEW", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if l.Stale == nil || l.Stale.Op != "op_DEAD" {
		t.Fatalf("stale = %+v", l.Stale)
	}
}
