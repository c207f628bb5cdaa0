package stack_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// fullAfterBackupBackend is the file backend on a disk that fills up right
// after each backup: the next write of the state (the update's stage) fails
// with ENOSPC, once; what follows (the operation's end) fits.
type fullAfterBackupBackend struct {
	storage.Backend
	mu    sync.Mutex
	armed bool
}

func (b *fullAfterBackupBackend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	w, err := b.Backend.Lock(ctx, h)
	if err != nil {
		return nil, err
	}
	return fullAfterBackupWriter{Writer: w, b: b}, nil
}

type fullAfterBackupWriter struct {
	storage.Writer
	b *fullAfterBackupBackend
}

func (w fullAfterBackupWriter) PutBackup(ctx context.Context, name string, keep int) (bool, error) {
	w.b.mu.Lock()
	w.b.armed = true
	w.b.mu.Unlock()
	return w.Writer.PutBackup(ctx, name, keep)
}

func (w fullAfterBackupWriter) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	w.b.mu.Lock()
	full := w.b.armed && !c.Change.Empty()
	if full {
		w.b.armed = false
	}
	w.b.mu.Unlock()
	if full {
		return 0, fmt.Errorf("write state: %w", syscall.ENOSPC)
	}
	return w.Writer.Commit(ctx, c)
}

// Update attempts that fail before changing anything (a full disk at the
// stage step) leave no backup behind, however often they are retried: each
// drops its own when it ends. Without that, every retry left a copy of the
// whole state, and the copies kept the disk full. Once there is space, the
// update goes through and keeps its one backup.
func TestAttemptsThatChangeNothingLeaveNoBackup(t *testing.T) {
	e := newEnv(t)
	b := &fullAfterBackupBackend{}
	full := func(o *stack.Options) {
		o.StateURL = "fake://full-after-backup"
		o.Open = func(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
			b.Backend = filestore.New(stack.StackDir(e.stateDir, so.Stack), so)
			return b, nil
		}
	}
	e.mustApply(t, mkSpec(t, res{name: "vm", typ: "compute", size: 1}))
	v2 := mkSpec(t, res{name: "vm", typ: "compute", size: 2})
	for i := range 6 {
		r, err := e.apply(v2, full)
		if code := stack.ExitCode(r, err); err != nil || code != stack.ExitError || !r.ChangedNothing() {
			t.Fatalf("attempt %d on a full disk: exit %d, err %v, result err %v", i, code, err, resErr(r))
		}
		if r.Err == nil || !errors.Is(r.Err, syscall.ENOSPC) {
			t.Fatalf("attempt %d: failed with %v, not the full disk", i, r.Err)
		}
		if got := backups(t, e, "s"); len(got) != 0 {
			t.Fatalf("after attempt %d, which changed nothing: backups %v, want none", i, got)
		}
	}
	e.mustApply(t, v2)
	if got := backups(t, e, "s"); len(got) != 1 {
		t.Errorf("after the update that went through: backups %v, want 1", got)
	}
	if got := e.w.ByName("vm"); got == nil || fmt.Sprint(got.Attrs["size"]) != "2" {
		t.Errorf("after the update: %+v", got)
	}
}

// Failed attempts that did change something (and were rolled back) keep
// their backups, within KeepBackups; but the newest backup of a settled
// state (here the first failed attempt's copy of what the last successful
// update left) is never pushed out by them.
func TestFailedAttemptsNeverPushOutTheLastGoodBackup(t *testing.T) {
	e := newEnv(t)
	e.mustApply(t, mkSpec(t, res{name: "a", typ: "generic", size: 1}, res{name: "app", typ: "generic", size: 1, deps: []string{"a"}}))
	e.mustApply(t, mkSpec(t, res{name: "a", typ: "generic", size: 2}, res{name: "app", typ: "generic", size: 2, deps: []string{"a"}}))
	var good string
	for i := range stack.KeepBackups + 3 {
		before := backups(t, e, "s")
		r, err := e.apply(mkSpec(t, res{name: "a", typ: "generic", size: 10 + i}, res{name: "app", typ: "generic", size: 10 + i, deps: []string{"a"}}), simulate("app"))
		if err != nil || r.Outcome.String() == "succeeded" || r.ChangedNothing() {
			t.Fatalf("failing attempt %d: %v, result %+v", i, err, r)
		}
		after := backups(t, e, "s")
		if i == 0 {
			for _, n := range after {
				if !slices.Contains(before, n) {
					good = n
				}
			}
			if good == "" {
				t.Fatalf("the first failed attempt took no backup: %v", after)
			}
		}
		if len(after) > stack.KeepBackups {
			t.Errorf("after attempt %d: %d backups, more than %d", i, len(after), stack.KeepBackups)
		}
		if !slices.Contains(after, good) {
			t.Fatalf("after attempt %d: the backup of the last settled state (%s) was pushed out: %v", i, good, after)
		}
	}
}
