package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore/lock"
)

// Lock takes the stack folder's lock (making the folder, mode 0700, if it
// is missing), loads the state and opens the journal for appending.
func (b *Backend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w != nil {
		return nil, &storage.LockedError{Location: b.Location(), Holder: &b.w.holder}
	}
	_, rootErr := os.Lstat(filepath.Dir(b.dir))
	created, err := nofollow.Mkdir(b.dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	h = storage.HolderDefaults(h, b.opts.Now())
	lk, err := lock.Acquire(b.dir, storage.Holder{Op: h.Op, PID: h.PID, Host: h.Host, User: h.User, Since: h.Since})
	var le *storage.LockedError
	if errors.As(err, &le) {
		h := le.Holder
		// A holder that has just taken the flock writes its record right
		// after: wait for it a little, so the refusal can name it.
		for deadline := time.Now().Add(time.Second); (h == nil || h.PID == 0) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			if p, perr := lock.Peek(b.dir); perr == nil && p != nil {
				h = p
			} else if perr == nil {
				break // released meanwhile: the refusal stands, unnamed
			}
		}
		if h != nil && h.PID == 0 {
			h = nil
		}
		return nil, &storage.LockedError{Location: b.Location(), Holder: h}
	}
	if err != nil {
		return nil, err
	}
	w := &writer{b: b, lk: lk, holder: h, created: created,
		createdRoot: created && errors.Is(rootErr, fs.ErrNotExist)}
	w.hold = w.newHold()
	fail := func(err error) (storage.Writer, error) {
		lk.Release()
		return nil, err
	}
	l, err := b.load()
	if err != nil {
		return fail(err)
	}
	if len(l.bad) > 0 {
		return fail(l.bad[0])
	}
	if l.torn {
		// A commit a crash cut short was never acknowledged: it goes,
		// as a torn line does, before anything is appended after it.
		if err := truncate(b.path(journalFile), l.end); err != nil {
			return fail(fmt.Errorf("open journal %s: %w", b.path(journalFile), err))
		}
	}
	w.st, w.disk, w.reseal, w.migrate = l.st, l.disk, l.clear && b.opts.Sealing.Sealer != nil, l.legacy
	w.liveOps = l.ops
	w.lineage = l.lineage
	w.empty = l.st.Serial == 0 && l.records == 0 && l.lineage == ""
	if w.lineage == "" {
		w.lineage = b.opts.Lineage // state migrate's destination: its source's
	}
	if w.lineage == "" {
		w.lineage = ulid.Make().String()
	}
	w.st.Lineage = w.lineage
	if w.jr, err = journal.Open(b.path(journalFile), b.opts.Now); err != nil {
		return fail(err)
	}
	if l.lineage == "" && l.records > 0 {
		// A journal of records without a lineage (written before them):
		// the snapshot learns the new one at the next Checkpoint.
		w.migrate = true
	}
	b.w = w
	return w, nil
}

func truncate(path string, end int64) error {
	f, err := nofollow.Open(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(end); err != nil {
		return err
	}
	return f.Sync()
}

// Stale is the holder whose dead lock this writer took over.
func (w *writer) Stale() *storage.Holder { return w.lk.Stale }

// Lost is closed only when the stack folder was moved or replaced under
// the lock (inPlace): the kernel keeps a file lock as long as its holder
// lives.
func (w *writer) Lost() <-chan struct{} { return w.hold.Lost() }

// Release closes the journal and gives the lock up. A stack folder the lock
// made, in which nothing was written, is removed (with the state folder,
// when the lock made that too and it is empty).
func (w *writer) Release(ctx context.Context) error {
	if w.hold.IsReleased() {
		return nil
	}
	var err error
	if w.jr != nil && w.usable() == nil {
		// What was deferred is written before the lock goes: the journal
		// loses nothing a run committed unless the run crashed.
		err = w.flushDeferred()
	}
	if !w.hold.MarkReleased() {
		return nil
	}
	w.mu.Lock()
	wrote := w.wrote
	w.mu.Unlock()
	if w.jr != nil {
		if cerr := w.jr.Close(); err == nil {
			err = cerr
		}
	}
	if w.created && !wrote && w.lk.StillAt(w.b.dir) == nil {
		// By name: only while the name is still the folder locked.
		w.removeUnused()
	}
	if rerr := w.lk.Release(); err == nil {
		err = rerr
	}
	w.b.mu.Lock()
	if w.b.w == w {
		w.b.w = nil
	}
	w.b.mu.Unlock()
	return err
}

// removeUnused removes, by name and under the lock, what Lock made in a
// folder it made; anything else found there keeps the folder.
func (w *writer) removeUnused() {
	d := w.b.dir
	if fi, err := os.Lstat(w.b.path(journalFile)); err == nil && (!fi.Mode().IsRegular() || fi.Size() > 0) {
		return
	}
	if _, err := os.Lstat(filepath.Join(d, segmentsDir)); err == nil {
		return
	}
	os.Remove(w.b.path(journalFile))
	os.Remove(filepath.Join(d, lock.FileName))
	if os.Remove(d) == nil && w.createdRoot {
		os.Remove(filepath.Dir(d)) // only when empty: no other stack's
	}
}
