package lock

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Deleting, replacing or symlinking the lock file while the lock is held
// never lets a second holder in.
func TestLockHoldsWhateverHappensToThePath(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
	}{
		{"deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, FileName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by a new file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, FileName)
			os.Remove(p)
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed away", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, FileName), filepath.Join(dir, "lock.old")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Acquire(dir, storage.Holder{Op: "op_A", PID: os.Getpid(), Host: "h", Since: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			tt.tamper(t, dir)
			l2, err := Acquire(dir, storage.Holder{Op: "op_B", PID: os.Getpid(), Host: "h", Since: time.Now()})
			if err == nil {
				l2.Release()
				t.Fatal("a second Acquire got the lock after the lock file was tampered with")
			}
			if !errors.Is(err, storage.ErrLocked) {
				t.Fatalf("second Acquire: %v, want storage.ErrLocked", err)
			}
		})
	}
}

// A lock file that is a symbolic link is refused, and what it points to is
// left as it was.
func TestSymlinkedLockIsRefusedAndTargetUntouched(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(dir, storage.Holder{Op: "op_A", PID: os.Getpid(), Host: "h", Since: time.Now()})
	if err == nil {
		l.Release()
		t.Fatal("Acquire took a lock whose file is a symbolic link")
	}
	var le *nofollow.LinkError
	if !errors.As(err, &le) || le.Path != filepath.Join(dir, FileName) {
		t.Fatalf("Acquire: %v, want a LinkError naming the lock file", err)
	}
	if _, _, err := Inspect(dir); !errors.As(err, &le) {
		t.Fatalf("Inspect: %v, want a LinkError", err)
	}
	b, _ := os.ReadFile(outside)
	fi, _ := os.Stat(outside)
	if string(b) != "keep me\n" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the link's target changed: %q, mode %v", b, fi.Mode())
	}
}

// A stack folder that is a symbolic link is refused.
func TestSymlinkedStackFolderIsRefused(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "stack")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(link, storage.Holder{Op: "op_A", PID: os.Getpid()})
	if err == nil {
		l.Release()
		t.Fatal("Acquire locked a stack folder that is a symbolic link")
	}
	if !errors.Is(err, nofollow.ErrRefused) {
		t.Fatalf("Acquire: %v, want a refusal", err)
	}
	if entries, _ := os.ReadDir(real); len(entries) != 0 {
		t.Fatalf("wrote into the link's target: %v", entries)
	}
}

// Inspect reads the lock and never takes it: a status or doctor in a loop
// makes no Acquire fail.
func TestInspectNeverTakesTheLock(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var probes, sawLive atomic.Int64
	for range 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				live, _, err := Inspect(dir)
				if err != nil {
					t.Error(err)
					return
				}
				probes.Add(1)
				if live != nil {
					sawLive.Add(1)
				}
			}
		}()
	}
	failed := 0
	const n = 1000
	for i := range n {
		l, err := Acquire(dir, storage.Holder{Op: "op_X", PID: os.Getpid(), Host: "h", Since: time.Now()})
		if err != nil {
			failed++
			continue
		}
		if i%100 == 0 {
			// Give the probes a lock held for a while to see.
			deadline := time.Now().Add(2 * time.Second)
			for before := sawLive.Load(); sawLive.Load() == before && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond) // polling, bounded by the deadline
			}
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if failed > 0 {
		t.Fatalf("%d of %d acquisitions failed while Inspect ran (%d probes)", failed, n, probes.Load())
	}
	if sawLive.Load() == 0 {
		t.Fatalf("no probe saw the lock held (%d probes)", probes.Load())
	}
}

// Inspect names a live holder in another open of the same folder, and a
// stale record once the holder is gone without releasing.
func TestInspectLiveAndStale(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, storage.Holder{Op: "op_A", PID: os.Getpid(), Host: "h", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	live, stale, err := Inspect(dir)
	if err != nil || live == nil || live.Op != "op_A" || stale != nil {
		t.Fatalf("held: live %+v stale %+v err %v", live, stale, err)
	}
	// What a kill -9 leaves: the record, no lock.
	l.abandon()
	live, stale, err = Inspect(dir)
	if err != nil || live != nil || stale == nil || stale.Op != "op_A" {
		t.Fatalf("abandoned: live %+v stale %+v err %v", live, stale, err)
	}
	l2, err := Acquire(dir, storage.Holder{Op: "op_B", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release()
	if l2.Stale == nil || l2.Stale.Op != "op_A" {
		t.Fatalf("stale = %+v", l2.Stale)
	}
}

// A record a killed holder was writing, never renamed into place, is
// removed by the next holder.
func TestTornRecordIsRemoved(t *testing.T) {
	dir := t.TempDir()
	torn := filepath.Join(dir, "."+FileName+".tmp-123")
	os.WriteFile(torn, []byte(`{"op":"op_DEAD"`), 0o600)
	l, err := Acquire(dir, storage.Holder{Op: "op_A", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := os.Lstat(torn); !os.IsNotExist(err) {
		t.Fatalf("torn record left: %v", err)
	}
}

// With the holder's record removed or replaced, Inspect still sees the lock
// held (an unknown holder), never free, and never names the planted record.
func TestInspectSeesAHolderWhoseRecordIsGone(t *testing.T) {
	for _, tamper := range []string{"removed", "replaced"} {
		dir := t.TempDir()
		l, err := Acquire(dir, storage.Holder{Op: "op_A", PID: os.Getpid(), Host: "h", Since: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, FileName)
		os.Remove(p)
		if tamper == "replaced" {
			os.WriteFile(p, []byte(`{"op":"op_PLANTED","pid":1,"host":"x","since":"2026-01-01T00:00:00Z"}`), 0o600)
		}
		live, stale, err := Inspect(dir)
		if err != nil || live == nil || live.Op == "op_PLANTED" || stale != nil {
			t.Errorf("%s: live %+v stale %+v err %v", tamper, live, stale, err)
		}
		l.Release()
		live, _, _ = Inspect(dir)
		if live != nil {
			t.Errorf("%s: after Release: live %+v", tamper, live)
		}
	}
}
