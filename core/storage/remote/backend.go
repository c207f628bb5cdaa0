package remote

import (
	"context"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Source is what a backend supplies for reads, and its lock: each method
// fetches what is stored in the backend's own shape (rows, a snapshot and
// its WAL, objects), checked only as far as that shape asks (each stored
// record's checksum, storage.Disclose; the links between its own records:
// a WAL's order and tokens, the lineage a journal row or segment names).
// What is the same on every backend (protection levels, the stack and
// lineage of a backup, opening sealed values) is Backend's, done once here
// on what a Source returns.
type Source interface {
	// Location names the backend (storage.Backend's).
	Location() string
	// Wrap names the backend in an error of what (its own prefix: the
	// messages a backend printed are unchanged).
	Wrap(what string, err error) error

	// State returns the stored state, sealed, and where its resources are
	// kept (named in a protection level error).
	State(ctx context.Context) (st *state.State, where string, err error)
	// Journal: as storage.Backend's.
	Journal(ctx context.Context) ([]journal.Record, []*journal.CorruptError, error)
	// Revision returns revision n's body as stored (sealed); none is an
	// error wrapping storage.ErrNotFound.
	Revision(ctx context.Context, n int) (*storage.RevisionBody, error)
	// Backups: as storage.Backend's.
	Backups(ctx context.Context) ([]storage.BackupInfo, error)
	// Backup returns backup name as stored (sealed): its state, where it is
	// (named in a lineage or level error), and the stack's lineage now (""
	// when the stack has none yet). None is an error wrapping
	// storage.ErrNotFound.
	Backup(ctx context.Context, name string) (*StoredBackup, error)
	// Stats: as storage.Backend's.
	Stats(ctx context.Context) (storage.Stats, error)
	// Holder reads who holds the lock (storage.Backend's), without taking it.
	Holder(ctx context.Context) (*storage.Holder, error)
	// Lock takes the lock (storage.Backend's): a Writer built by NewWriter
	// over the backend's Client and its Hold.
	Lock(ctx context.Context, h storage.Holder) (storage.Writer, error)
	// Close: as storage.Backend's.
	Close() error
}

// StoredBackup is a backup as a Source read it.
type StoredBackup struct {
	State   *state.State // sealed
	Where   string       // the backup, for messages
	Lineage string       // the stack's lineage now ("": none yet)
}

// Backend is the one storage.Backend of the remote backends, over the
// backend's Source.
type Backend struct {
	src   Source
	stack string
	sl    state.Sealing
}

var _ storage.Backend = (*Backend)(nil)

// NewBackend returns the storage.Backend of src, a stack's home opened with
// opts.
func NewBackend(src Source, opts storage.Options) *Backend {
	return &Backend{src: src, stack: opts.Stack, sl: opts.Sealing}
}

// Location names the backend.
func (b *Backend) Location() string { return b.src.Location() }

// Lock takes the stack's lock.
func (b *Backend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	return b.src.Lock(ctx, h)
}

// Holder reports who holds the lock now.
func (b *Backend) Holder(ctx context.Context) (*storage.Holder, error) { return b.src.Holder(ctx) }

// Load returns the stack's state: every resource's protection levels
// checked, then its sealed values opened.
func (b *Backend) Load(ctx context.Context) (*state.State, error) {
	st, where, err := b.src.State(ctx)
	if err != nil {
		return nil, err
	}
	if st.Resources == nil {
		st.Resources = map[string]*state.Resource{}
	}
	if err := state.CheckLevels(where, st); err != nil {
		return nil, err
	}
	if _, err := state.OpenState(st, b.sl); err != nil {
		return nil, b.src.Wrap("load state", err)
	}
	return st, nil
}

// Journal returns the stack's journal records.
func (b *Backend) Journal(ctx context.Context) ([]journal.Record, []*journal.CorruptError, error) {
	return b.src.Journal(ctx)
}

// Revision returns revision n's body, opened.
func (b *Backend) Revision(ctx context.Context, n int) (*storage.RevisionBody, error) {
	rb, err := b.src.Revision(ctx, n)
	if err != nil {
		return nil, err
	}
	if err := storage.OpenRevision(rb, b.sl); err != nil {
		return nil, b.src.Wrap(fmt.Sprintf("revision %d", n), err)
	}
	return rb, nil
}

// Backups lists the stored backups, oldest first.
func (b *Backend) Backups(ctx context.Context) ([]storage.BackupInfo, error) {
	return b.src.Backups(ctx)
}

// Backup reads one backup, refusing one of another stack or lineage
// (storage.ErrLineage) or with a protection level bulwark does not know
// (state.ErrCorrupt), as Load refuses such a state: a backup is what a
// restore puts back. The checks are the same on every remote backend.
func (b *Backend) Backup(ctx context.Context, name string) (*state.State, error) {
	sb, err := b.src.Backup(ctx, name)
	if err != nil {
		return nil, err
	}
	st := sb.State
	if st.Stack != b.stack {
		return nil, &storage.LineageError{What: "backup", Location: sb.Where, Want: "of stack " + b.stack, Found: "of stack " + st.Stack}
	}
	if sb.Lineage != "" && st.Lineage != "" && st.Lineage != sb.Lineage {
		return nil, &storage.LineageError{What: "backup", Location: sb.Where, Want: sb.Lineage, Found: st.Lineage}
	}
	if st.Resources == nil {
		st.Resources = map[string]*state.Resource{}
	}
	if err := state.CheckLevels(sb.Where, st); err != nil {
		return nil, err
	}
	if _, err := state.OpenState(st, b.sl); err != nil {
		return nil, b.src.Wrap("backup "+name, err)
	}
	return st, nil
}

// Stats are the stack's sizes and counts.
func (b *Backend) Stats(ctx context.Context) (storage.Stats, error) { return b.src.Stats(ctx) }

// Close closes the Source.
func (b *Backend) Close() error { return b.src.Close() }
