// Package remote is the one storage.Writer of the backends that keep a
// stack elsewhere than in its own folder (postgres, s3), in the spirit of
// Terraform's remote.Client under statemgr: the Writer does what is the
// same on every such backend (the group-commit queue, each group checked,
// sealed, stamped and its lineage decided by groupcommit.Prepare, the
// serial and lineage as of the last group written, deferred records
// flushed before a Checkpoint and a Release, revision bodies sealed, and
// the held lock's state: lost, released, or broken by a write whose outcome
// is unknown), and a backend's Client does only what is its own: store one
// prepared group under its fence, store and delete blobs (revision bodies,
// backups), compact, and give its lock up.
//
// Reads are shared too: Backend (backend.go) is the one storage.Backend
// over a backend's Source, which fetches what is stored in its own shape;
// Backend checks levels, a backup's stack and lineage, and opens sealed
// values. A Client is the lock a Source's Lock took, and the Writer is
// built over it by NewWriter.
//
// The lock's safety rests on the Client, which fences every write it makes
// (a PostgreSQL epoch and session check in the write's own transaction; a
// create-only WAL object and a token check on S3), and on the Hold, which
// refuses every write once the lock is known lost: a writer that lost its
// lock fails with storage.ErrLost before anything is written.
package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/groupcommit"
)

// Client is a backend's held lock: the writes only it knows how to make.
// Every method but Unlock is called only while the Hold is usable, and
// must itself fence what it writes (fail with the Hold's Lose, having
// written nothing, once the lock is another's).
type Client interface {
	// Where names where a group's resources are stored (for the error of
	// a resource Load would refuse).
	Where() string
	// Append stores g, one group of accepted Commits, atomically and under
	// the lock's fence. A write whose outcome cannot be learnt returns an
	// *UnknownError: the Writer writes nothing more.
	Append(ctx context.Context, g Group) error
	// Checkpoint compacts the journal (and snapshots the state where the
	// backend keeps a snapshot); deferred records are already stored.
	Checkpoint(ctx context.Context, keepOps int) error
	// PutRevision stores revision n's body, sealed already; DeleteRevision
	// drops it.
	PutRevision(ctx context.Context, n int, sealed storage.RevisionBody) error
	DeleteRevision(ctx context.Context, n int) error
	// PutBackup, DropBackup: as storage.Writer's (a backup is stored
	// sealed: storage.SealSnapshot, or rows stored sealed already).
	PutBackup(ctx context.Context, name string, keep int) (bool, error)
	DropBackup(ctx context.Context, name string) error
	// CopyBackup and MarkMoved are state migrate's (backends.Mover and
	// backends.BackupCopier).
	CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error
	MarkMoved(ctx context.Context, to string) error
	// Unlock gives the lock up (once, after the last write).
	Unlock(ctx context.Context) error
}

// Encoder is a Client that lays each Commit out as it stores it (rows)
// before the group is written: a Commit it cannot encode fails alone, as
// one Prepare refuses (groupcommit.Prepare's encode). Encode sets
// a.Stored.
type Encoder interface {
	Encode(a *groupcommit.Accepted) error
}

// Group is one write: the Commits of a group that passed Prepare, oldest
// first (each with its change in clear and as stored), and the stack's
// lineage and serial before and after them.
type Group struct {
	Accepted []*groupcommit.Accepted
	// Lineage and Serial are the stack's after the group; PrevLineage and
	// PrevSerial before it.
	Lineage, PrevLineage string
	Serial, PrevSerial   int64
}

// UnknownError is a write whose outcome could not be learnt (the
// connection failed after the request was sent): Err is that write's
// error, Later the error of every write after it.
type UnknownError struct {
	Err, Later error
}

func (e *UnknownError) Error() string { return e.Err.Error() }
func (e *UnknownError) Unwrap() error { return e.Err }

// Messages are a backend's errors for the Hold's states (each wraps
// storage.ErrLost but Broken's).
type Messages struct {
	// Lost is every write's error once the lock was lost for why.
	Lost func(why error) error
	// Released is every write's error after Release.
	Released func() error
	// Expired, when set, says why the lock is lost without asking anyone
	// (an S3 lease that ran out, a stack folder moved away from under its
	// file lock), nil while it may still be held. It is asked before each
	// write until the lock is lost.
	Expired func() error
}

// Hold is a held lock's state, shared by the Writer and its Client: lost
// (by a watcher, a renewal or a fence that found another holder), released,
// or broken (a write's outcome unknown). It refuses every write from the
// moment it is anything but held.
type Hold struct {
	msg  Messages
	lost chan struct{}

	mu       sync.Mutex
	why      error
	released bool
	broken   error
}

// NewHold returns the state of a lock just taken.
func NewHold(m Messages) *Hold {
	return &Hold{msg: m, lost: make(chan struct{})}
}

// Lose marks the lock lost for why (the first why is kept) and returns
// the error every write fails with from now on.
func (h *Hold) Lose(why error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loseLocked(why)
	return h.msg.Lost(h.why)
}

func (h *Hold) loseLocked(why error) {
	if h.why == nil {
		h.why = why
		close(h.lost)
	}
}

// Lost is closed when the lock is lost.
func (h *Hold) Lost() <-chan struct{} { return h.lost }

// IsLost reports whether the lock was lost.
func (h *Hold) IsLost() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.why != nil
}

// LostErr is nil while the lock is held; once it is lost, the error every
// write fails with, saying why.
func (h *Hold) LostErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.why == nil {
		return nil
	}
	return h.msg.Lost(h.why)
}

// Usable is nil while writes may go on: else ErrLost (released, lost) or
// the first unknown outcome.
func (h *Hold) Usable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return h.msg.Released()
	}
	if h.why == nil && h.msg.Expired != nil {
		if why := h.msg.Expired(); why != nil {
			h.loseLocked(why)
		}
	}
	switch {
	case h.why != nil:
		return h.msg.Lost(h.why)
	case h.broken != nil:
		return h.broken
	}
	return nil
}

// Intact is Usable without asking Messages.Expired: for a commit that
// writes nothing now (a deferred record kept in memory until the next
// write, which asks before it goes out). It still refuses once the lock is
// known lost, released or broken.
func (h *Hold) Intact() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.released:
		return h.msg.Released()
	case h.why != nil:
		return h.msg.Lost(h.why)
	case h.broken != nil:
		return h.broken
	}
	return nil
}

// IsReleased reports whether MarkReleased was called.
func (h *Hold) IsReleased() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released
}

// MarkReleased marks the lock released (every write after fails); false
// when it already was. Writer.Release marks it before the Client's Unlock.
func (h *Hold) MarkReleased() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return false
	}
	h.released = true
	return true
}

// Break records err, a write whose outcome is unknown (or a store left in
// a state nothing more may be written on): every write after fails with
// the first such err.
func (h *Hold) Break(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.broken == nil {
		h.broken = err
	}
}

// Writer is the storage.Writer of a Client.
type Writer struct {
	c       Client
	h       *Hold
	loc     string
	stale   *storage.Holder
	sealing state.Sealing
	now     func() time.Time
	commits *groupcommit.Queue

	mu        sync.Mutex
	serial    int64
	lineage   string
	adoptable bool
}

var _ storage.Writer = (*Writer)(nil)

// Start is the stack as the backend's Lock found it.
type Start struct {
	Loc     string // the backend's Location
	Serial  int64
	Lineage string
	// Adoptable: the stack holds nothing yet, so its first Commit's Meta
	// may name its lineage (storage.NextLineage).
	Adoptable bool
	Stale     *storage.Holder // the holder whose lock was taken over
	Sealing   state.Sealing
	Now       func() time.Time
}

// NewWriter returns the Writer of c, whose state h is.
func NewWriter(c Client, h *Hold, s Start) *Writer {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	w := &Writer{c: c, h: h, loc: s.Loc, stale: s.Stale, sealing: s.Sealing, now: now,
		serial: s.Serial, lineage: s.Lineage, adoptable: s.Adoptable}
	w.commits = groupcommit.New(w.flush)
	return w
}

// Commit queues c and waits for the write that carries it: Commits that
// arrive while one is being written share the next (groupcommit).
func (w *Writer) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	if err := w.h.Usable(); err != nil {
		return 0, err
	}
	return w.commits.Write(ctx, c, w.loc, func() int64 {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.serial
	})
}

// flush writes one group: checked, sealed and stamped (groupcommit.Prepare),
// then stored by the Client.
func (w *Writer) flush(ctx context.Context, group []*groupcommit.Pending) {
	finish := func(err error) {
		for _, p := range group {
			if p.Err == nil {
				p.Err = err
			}
		}
	}
	if err := w.h.Usable(); err != nil {
		finish(err)
		return
	}
	w.mu.Lock()
	g := Group{PrevLineage: w.lineage, PrevSerial: w.serial}
	st := groupcommit.Stack{Loc: w.loc, Where: w.c.Where(), Lineage: w.lineage, Adoptable: w.adoptable,
		Serial: w.serial, Now: w.now(), Sealing: w.sealing}
	w.mu.Unlock()
	var encode func(*groupcommit.Accepted) error
	if e, ok := w.c.(Encoder); ok {
		encode = e.Encode
	}
	g.Accepted, g.Lineage, g.Serial = groupcommit.Prepare(group, st, encode)
	if len(g.Accepted) == 0 {
		return
	}
	// Asked again after the sealing: a lease may have run out meanwhile.
	if err := w.h.Usable(); err != nil {
		finish(err)
		return
	}
	if err := w.c.Append(ctx, g); err != nil {
		var u *UnknownError
		if errors.As(err, &u) {
			w.h.Break(u.Later)
		}
		finish(err)
		return
	}
	w.mu.Lock()
	w.serial, w.lineage, w.adoptable = g.Serial, g.Lineage, false
	w.mu.Unlock()
}

// PutRevision stores revision n's body, sealed.
func (w *Writer) PutRevision(ctx context.Context, n int, body storage.RevisionBody) error {
	if err := w.h.Usable(); err != nil {
		return err
	}
	sb, err := storage.SealRevision(body, w.sealing)
	if err != nil {
		return fmt.Errorf("revision %d at %s: %w", n, w.loc, err)
	}
	return w.c.PutRevision(ctx, n, sb)
}

// DeleteRevision drops revision n's body.
func (w *Writer) DeleteRevision(ctx context.Context, n int) error {
	if err := w.h.Usable(); err != nil {
		return err
	}
	return w.c.DeleteRevision(ctx, n)
}

// PutBackup stores the state as of now under name, keeping the newest keep.
func (w *Writer) PutBackup(ctx context.Context, name string, keep int) (bool, error) {
	if err := w.h.Usable(); err != nil {
		return false, err
	}
	return w.c.PutBackup(ctx, name, keep)
}

// DropBackup deletes the backup stored under name, if there is one.
func (w *Writer) DropBackup(ctx context.Context, name string) error {
	if err := w.h.Usable(); err != nil {
		return err
	}
	return w.c.DropBackup(ctx, name)
}

// CopyBackup stores st, a backup read from another backend (state
// migrate), under info.Name.
func (w *Writer) CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error {
	if err := w.h.Usable(); err != nil {
		return err
	}
	return w.c.CopyBackup(ctx, info, st)
}

// ReplaceBackup stores st in place of backup name (secrets rotate), when
// the Client can (storage.BackupReplacer).
func (w *Writer) ReplaceBackup(ctx context.Context, name string, st *state.State) error {
	if err := w.h.Usable(); err != nil {
		return err
	}
	r, ok := w.c.(storage.BackupReplacer)
	if !ok {
		return fmt.Errorf("backup %s: %w: this backend cannot replace a backup", name, errors.ErrUnsupported)
	}
	return r.ReplaceBackup(ctx, name, st)
}

// MarkMoved records that the stack now lives at to (state migrate).
func (w *Writer) MarkMoved(ctx context.Context, to string) error {
	if err := w.h.Usable(); err != nil {
		return err
	}
	return w.c.MarkMoved(ctx, to)
}

// Checkpoint stores what is deferred, then compacts.
func (w *Writer) Checkpoint(ctx context.Context, keepOps int) error {
	if err := w.h.Usable(); err != nil {
		return err
	}
	// Deferred records first: what is compacted, and what Load reads
	// after, includes them.
	if err := w.commits.Flush(ctx); err != nil {
		return err
	}
	return w.c.Checkpoint(ctx, keepOps)
}

// Stale is the holder whose lock this writer took over.
func (w *Writer) Stale() *storage.Holder { return w.stale }

// Lost is closed when the lock is lost.
func (w *Writer) Lost() <-chan struct{} { return w.h.Lost() }

// LostErr is nil while the lock is held; once it is lost, the error every
// write fails with, saying why (core/stack reports it without writing).
func (w *Writer) LostErr() error { return w.h.LostErr() }

// Release stores what is deferred, then gives the lock up. Idempotent.
func (w *Writer) Release(ctx context.Context) error {
	// What was deferred is written before the lock goes (a writer that
	// cannot write any more loses it, as a crash would).
	var ferr error
	if w.h.Usable() == nil {
		ferr = w.commits.Flush(ctx)
	}
	if !w.h.MarkReleased() {
		return nil
	}
	if err := w.c.Unlock(ctx); err != nil {
		return err
	}
	return ferr
}
