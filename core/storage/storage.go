// Package storage is the one interface through which bulwark reaches a
// stack's durable home: its state, its journal, its revisions' texts, its
// backups and its one-writer lock. Nothing outside a backend knows a file
// name, a table or an object key.
//
// The guarantees are the same on every backend (docs/architecture.md,
// "State backends and retention"):
//
//   - A write is durable before it is acknowledged: Commit returns only once
//     its records and its change are on disk (fsync), committed (one
//     PostgreSQL transaction) or stored (an S3 PUT that answered 200).
//   - A Commit is atomic: its journal records and its state change are both
//     visible after it, or neither is, whatever crashes when. Load after a
//     crash returns the state as of the last acknowledged Commit (a backend
//     may also return one whose Commit was in flight: never a torn one).
//   - A Deferred Commit (records alone) is the one exception to the first
//     rule: it is acknowledged once queued, and is durable with the next
//     waited Commit, Checkpoint or Release; the records of a backend are
//     always a prefix, in order, of the records committed to it.
//   - The cost of a Commit is proportional to what it carries (the records,
//     the resources put or deleted, the metadata), never to the size of the
//     stack or of its history. Concurrent Commits may share one durable write
//     (group commit); none is ever acknowledged before it is durable.
//   - One writer per stack: Lock either takes the lock or fails with a
//     *LockedError naming the holder. A holder that dies loses the lock
//     (the kernel for file, the server for postgres, a lease for s3), and
//     any machine can then take it and resume. Reading (Load, Journal,
//     Holder, Stats) never takes the lock and never makes a Lock fail.
//   - A writer that loses its lock (a lease that ran out and was taken over,
//     a connection cut) fails its next Commit with ErrLost, before anything
//     is written: a lost race never overwrites what another writer wrote.
//   - Lineage: a backend holds one stack of one lineage. Load and Lock refuse
//     (ErrLineage) what belongs to another (a foreign state, journal or
//     backup put in its place).
//
// A Backend is safe for concurrent use. Sensitive values are sealed by the
// backend (Options.Sealing) before anything is written, and opened on Load:
// what a caller passes and gets back is in clear; what is stored never is.
// The key is never stored.
package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Backend is one stack's durable home.
type Backend interface {
	// Location names the backend for messages and `doctor`: a URL without
	// credentials ("file:///home/a/.bulwark/web", "postgres://ci@db:5432/bulwark",
	// "s3://team-state/stacks/web?region=eu-west-1").
	Location() string

	// Lock takes the stack's one-writer lock for h. A lock another live
	// holder has fails with a *LockedError (errors.Is ErrLocked) naming it.
	// A stale lock (its holder dead, its lease run out) is taken over, and
	// the Writer's Stale says whose it was.
	Lock(ctx context.Context, h Holder) (Writer, error)

	// Holder reports who holds the lock now (nil: nobody), without taking it.
	Holder(ctx context.Context) (*Holder, error)

	// Load returns the state as of the last acknowledged Commit (an empty
	// state of the stack, Serial 0, when nothing was ever written). A state
	// that fails its checks (checksum, unknown protection level, another
	// stack's or lineage's) is an error wrapping state.ErrCorrupt or
	// ErrLineage, naming what is wrong and how to repair it.
	Load(ctx context.Context) (*state.State, error)

	// Journal returns the stack's journal records, oldest first, and the
	// lines that do not parse (a damaged record is reported, never guessed
	// at).
	Journal(ctx context.Context) ([]journal.Record, []*journal.CorruptError, error)

	// Revision returns the body recorded for revision n by PutRevision.
	// A revision whose body was pruned or never stored is an error wrapping
	// ErrNotFound.
	Revision(ctx context.Context, n int) (*RevisionBody, error)

	// Backups lists the stored backups, oldest first; Backup reads one.
	Backups(ctx context.Context) ([]BackupInfo, error)
	Backup(ctx context.Context, name string) (*state.State, error)

	// Stats are the sizes and counts `doctor` shows.
	Stats(ctx context.Context) (Stats, error)

	// Close releases what the backend holds open (connections, files). It
	// does not release a lock: Writer.Release does.
	Close() error
}

// JournalScanner is a Backend that can also read its journal as a stream,
// an optional capability (the file backend has it): fn is called with each
// record of a whole commit, oldest first, without the journal being held in
// memory; with kinds, only records of those kinds are passed (and a line
// that cannot be one of them need not even be decoded or checked).
type JournalScanner interface {
	ScanJournal(ctx context.Context, kinds []string, fn func(journal.Record) error) ([]*journal.CorruptError, error)
}

// ScanJournal streams b's journal through fn (kinds as JournalScanner's):
// by the backend's own stream when it has one, else from Journal.
func ScanJournal(ctx context.Context, b Backend, kinds []string, fn func(journal.Record) error) ([]*journal.CorruptError, error) {
	if s, ok := b.(JournalScanner); ok {
		return s.ScanJournal(ctx, kinds, fn)
	}
	recs, bad, err := b.Journal(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if len(kinds) > 0 && !slices.Contains(kinds, r.Kind) {
			continue
		}
		if err := fn(r); err != nil {
			return bad, err
		}
	}
	return bad, nil
}

// Writer is a held lock and the only way to write. Every method fails with
// ErrLost once the lock is lost.
type Writer interface {
	// Commit makes c durable and returns the state's new serial. Records
	// are appended in order; a record's ID and Time are set when empty (in
	// place, in c.Records, so the caller learns the ids), and every record
	// gets the stack's lineage. c.Change is applied to the
	// state atomically with the records. A Commit with no records and an
	// empty change is a no-op that returns the current serial.
	Commit(ctx context.Context, c Commit) (serial int64, err error)

	// PutRevision stores revision n's body (the spec text and the variable
	// values it was applied with; sealed). It is off the step path: the
	// state's revision list is changed by a Commit's Meta.
	PutRevision(ctx context.Context, n int, body RevisionBody) error
	// DeleteRevision drops a pruned revision's body (retention).
	DeleteRevision(ctx context.Context, n int) error

	// PutBackup stores a copy of the state as of now under name (an
	// operation id), keeping the newest keep backups and deleting older
	// ones. A backup that already exists under name is kept as it is (a
	// resumed update keeps the backup from before its first part) and
	// PutBackup reports false. When the newest stored backup already holds
	// the state's serial (nothing was changed since it was taken), nothing
	// is stored either and PutBackup reports false: an attempt that follows
	// one that failed before changing anything adds no second copy of the
	// same state (a full disk stays no fuller for retrying).
	PutBackup(ctx context.Context, name string, keep int) (stored bool, err error)
	// DropBackup deletes the backup stored under name (retention: the
	// backup of an operation that changed nothing, or one beyond what is
	// kept). No backup under name is not an error.
	DropBackup(ctx context.Context, name string) error

	// Checkpoint makes what Load reads cheap again: it writes a snapshot of
	// the state, and compacts the journal, keeping the records of the last
	// keepOps operations whole and replacing each older finished one by one
	// journal.KindSummary record. Unfinished operations are always kept
	// whole. It is called when no operation's step is running (before an
	// operation starts, after it ends). keepOps journal.KeepNone keeps
	// none whole: every finished operation is summarized now.
	Checkpoint(ctx context.Context, keepOps int) error

	// Stale is the holder whose dead lock this Writer took over, or nil.
	Stale() *Holder

	// Lost is closed when the lock is lost (lease taken over, connection
	// cut): the operation must stop before its next write.
	Lost() <-chan struct{}

	// Release gives the lock up. Idempotent.
	Release(ctx context.Context) error
}

// BackupReplacer is a Writer that can store a backup again in place
// (`secrets rotate` re-seals the backups taken before it): ReplaceBackup
// stores st, sealed as the backend seals now, as backup name's bytes,
// keeping its name, time and place among the backups. The replacement is
// atomic (the old bytes stay readable until the new ones are durable: a
// file renamed over, one PostgreSQL transaction, an S3 PUT conditional on
// the object's ETag). No backup under name is an error wrapping
// ErrNotFound, and nothing is written.
type BackupReplacer interface {
	ReplaceBackup(ctx context.Context, name string, st *state.State) error
}

// Commit is one durable write: journal records and the state change they
// belong to.
type Commit struct {
	Records []journal.Record
	Change  Change
	// Deferred asks for records that guard nothing (a Check that found
	// its step done, a Verify that confirmed it: no mutation waits on
	// them) to be taken without waiting for their durability: Commit
	// returns once they are queued, in order, and they become durable
	// with the next Commit that is waited for (the same fsync,
	// transaction or WAL object), or with Checkpoint or Release. A crash
	// before that loses them, and every deferred Commit after them, but
	// never a waited Commit after them: what is stored is still a prefix
	// of what was committed. A Deferred Commit that carries a Change is
	// waited for as any other (only records may be deferred). A backend
	// that ignores the flag is correct (only slower).
	Deferred bool
}

// Empty reports whether c carries nothing.
func (c Commit) Empty() bool { return len(c.Records) == 0 && c.Change.Empty() }

// Change is a delta to a stack's state: resources put (whole, by name) or
// deleted, and, when Meta is set, the stack's metadata replaced whole. Its
// size is what it changes, never the stack's.
type Change struct {
	Put    []*state.Resource `json:"put,omitempty"`
	Delete []string          `json:"delete,omitempty"`
	Meta   *Meta             `json:"meta,omitempty"`
}

// Empty reports whether ch changes nothing.
func (ch Change) Empty() bool { return len(ch.Put) == 0 && len(ch.Delete) == 0 && ch.Meta == nil }

// Apply applies ch to st in place (puts, then deletes, then the metadata)
// and bumps its serial. The resources put are stored as given: the caller
// must not change them afterwards.
func (ch Change) Apply(st *state.State) {
	if st.Resources == nil {
		st.Resources = map[string]*state.Resource{}
	}
	for _, r := range ch.Put {
		st.Resources[r.Name] = r
	}
	for _, n := range ch.Delete {
		delete(st.Resources, n)
	}
	if m := ch.Meta; m != nil {
		if m.Lineage != "" {
			st.Lineage = m.Lineage
		}
		st.Forgotten = m.Forgotten
		st.Interventions = m.Interventions
		st.Revisions = m.Revisions
		st.Current = m.Current
		st.Staged = m.Staged
		st.Outputs = m.Outputs
		if m.Secrets != nil {
			st.Secrets = m.Secrets
		}
	}
	st.Serial++
}

// Meta is everything in a stack's state but its resources: small (the
// revisions list is bounded by retention, and holds no spec text), so it is
// written whole when any of it changes.
type Meta struct {
	Lineage       string               `json:"lineage,omitempty"`
	Forgotten     []string             `json:"forgotten,omitempty"`
	Interventions []state.Intervention `json:"interventions,omitempty"`
	// Revisions are the revisions' metadata; their Spec is empty here (the
	// body is stored apart by PutRevision).
	Revisions []state.Revision `json:"revisions,omitempty"`
	Current   int              `json:"current,omitempty"`
	Staged    int              `json:"staged,omitempty"`
	// Outputs are the spec's outputs as of the last successful apply
	// (sensitive ones sealed by the backend).
	Outputs map[string]state.Output `json:"outputs,omitempty"`
	// Secrets is the stack's secrets provider (nil: unchanged).
	Secrets *secrets.Config `json:"secrets,omitempty"`
}

// MetaOf returns a copy of st's metadata, for a caller to change and commit.
func MetaOf(st *state.State) *Meta {
	m := &Meta{Lineage: st.Lineage, Current: st.Current, Staged: st.Staged}
	m.Forgotten = append([]string(nil), st.Forgotten...)
	m.Interventions = append([]state.Intervention(nil), st.Interventions...)
	for _, r := range st.Revisions {
		// The spec text and the variable values live in the body.
		r.Spec, r.Variables, r.SensitiveVariables = "", nil, nil
		m.Revisions = append(m.Revisions, r)
	}
	if len(st.Outputs) > 0 {
		m.Outputs = maps.Clone(st.Outputs)
	}
	m.Secrets = st.Secrets.Clone()
	return m
}

// RevisionBody is what a revision applied: the spec's text and the values
// of its variables (sensitive ones sealed by the backend like any other
// sensitive value).
type RevisionBody struct {
	Spec      string         `json:"spec"`
	Variables map[string]any `json:"variables,omitempty"`
	// Sensitive names the variables whose values are sensitive.
	Sensitive []string `json:"sensitive,omitempty"`
}

// BackupInfo describes one stored backup.
type BackupInfo struct {
	Name   string    `json:"name"`
	Time   time.Time `json:"time"`
	Serial int64     `json:"serial"`
	Bytes  int64     `json:"bytes"`
}

// Stats are a backend's sizes and counts, for `doctor`.
type Stats struct {
	StateBytes     int64 `json:"state_bytes"`
	JournalBytes   int64 `json:"journal_bytes"`
	RevisionBytes  int64 `json:"revision_bytes"`
	BackupBytes    int64 `json:"backup_bytes"`
	Resources      int   `json:"resources"`
	Revisions      int   `json:"revisions"`
	Backups        int   `json:"backups"`
	WholeOps       int   `json:"whole_operations"`
	SummarizedOps  int   `json:"summarized_operations"`    // operations, a collapsed line's counted (journal.Collapse)
	SchemaVersion  int   `json:"schema_version,omitempty"` // backends with a schema (postgres)
	JournalRecords int   `json:"journal_records"`
}

// LineageError refuses a state, journal or backup of another lineage of the
// stack (or of another stack): nothing was read from it into this stack,
// nothing was changed. errors.Is(err, ErrLineage) matches it.
type LineageError struct {
	What     string // "journal", "state", "backup"
	Location string // the file, row or object
	Want     string // the stack's lineage
	Found    string
}

func (e *LineageError) Error() string {
	return fmt.Sprintf("%s %s belongs to lineage %s, not this stack's lineage %s: refusing it (it was copied from another stack or another history; move it away to go on)",
		e.What, e.Location, e.Found, e.Want)
}

// Is makes errors.Is(err, ErrLineage) match.
func (e *LineageError) Is(target error) bool { return target == ErrLineage }

// Errors callers branch on.
var (
	// ErrLocked: another holder has the lock (exit 4).
	ErrLocked = errors.New("stack is locked")
	// ErrLost: this writer lost its lock; nothing more was written.
	ErrLost = errors.New("the stack's lock was lost")
	// ErrLineage: what the backend holds belongs to another lineage.
	ErrLineage = errors.New("state belongs to another lineage")
	// ErrNotFound: no such revision body or backup.
	ErrNotFound = errors.New("not found")
	// ErrMoved: the stack was moved to another backend (state migrate);
	// the error's text names where.
	ErrMoved = errors.New("stack was moved")
)

// Options are what every backend is opened with.
type Options struct {
	// Stack is the stack's name; a backend holding another stack refuses.
	Stack string
	// Sealing seals sensitive values before anything is stored and opens
	// them on load.
	Sealing state.Sealing
	// Now stamps records and holders (time.Now when nil).
	Now func() time.Time
	// AfterWrite, when set, is called after each durable write (the crash
	// harness's failpoint "state").
	AfterWrite func()
	// Migration, set by `state migrate` alone, is its operation id: a place
	// that migration fenced (see MovedMarker) does not refuse it, so that a
	// migration interrupted after the fence can be finished.
	Migration string
	// Lineage, when set, is the lineage a stack that holds nothing yet is
	// created with (state migrate's destination takes its source's, so a
	// destination a kill left locked but empty is still the migration's).
	Lineage string
}

// Opener opens the backend a URL names (file://, postgres://, s3://).
// cmd/bulwark builds one from the backends it links; core never imports a
// database or cloud SDK.
type Opener func(ctx context.Context, url string, opts Options) (Backend, error)
