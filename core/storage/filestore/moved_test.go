package filestore_test

import (
	"context"
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// A stack folder renamed away, or replaced by another folder, while its
// lock is held: the next write fails with ErrLost, Lost closes, and nothing
// is written at the old path (neither into a folder put there nor by
// making one), by a Commit, a revision, a backup, a Checkpoint or Release.
func TestFolderMovedUnderTheLockStopsEveryWrite(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(map[bool]string{false: "renamed", true: "replaced"}[replace], func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			dir := filepath.Join(root, "s")
			b := filestore.New(dir, storage.Options{Stack: "s"})
			w, err := b.Lock(ctx, storage.Holder{Op: "op_1", PID: os.Getpid(), Host: "h"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Release(ctx)
			first := storage.Change{Put: []*state.Resource{{Name: "a", Type: "t", Provider: "p", ID: "a", Protection: protection.Ephemeral}}}
			if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Step: "a", Status: "ok"}}, Change: first}); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir, filepath.Join(root, "s-moved")); err != nil {
				t.Fatal(err)
			}
			if replace {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			put := func(name string) storage.Change {
				return storage.Change{Put: []*state.Resource{{Name: name, Type: "t", Provider: "p", ID: name, Protection: protection.Ephemeral}}}
			}
			writes := map[string]func() error{
				"commit": func() error {
					_, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Step: "b", Status: "ok"}}, Change: put("b")})
					return err
				},
				// A deferred record writes nothing (it may be taken): the
				// write that would carry it is refused.
				"deferred, then commit": func() error {
					if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Step: "c", Phase: "verify", Status: "ok"}}, Deferred: true}); err != nil {
						return err
					}
					_, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Step: "d", Status: "ok"}}, Change: put("d")})
					return err
				},
				"revision":   func() error { return w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "x"}) },
				"backup":     func() error { _, err := w.PutBackup(ctx, "op_1", 5); return err },
				"checkpoint": func() error { return w.Checkpoint(ctx, 20) },
			}
			for name, write := range writes {
				if err := write(); !errors.Is(err, storage.ErrLost) {
					t.Errorf("%s after the move: %v, want ErrLost", name, err)
				}
			}
			select {
			case <-w.Lost():
			default:
				t.Error("Lost is not closed")
			}
			w.Release(ctx)
			entries, _ := os.ReadDir(dir)
			if len(entries) > 0 || (!replace && !errors.Is(statErr(dir), os.ErrNotExist)) {
				t.Errorf("something was written at the old path: %v", entries)
			}
		})
	}
}

func statErr(p string) error { _, err := os.Lstat(p); return err }
