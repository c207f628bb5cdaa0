package filestore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore/lock"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
	"github.com/bulwark-iac/bulwark/core/value"
)

// writer is a held lock. It is not a remote.Client under remote.Writer as
// the postgres and s3 writers are: its group commit is the journal's own
// (journal.AppendLines writes every line queued meanwhile in one write and
// one fsync, stamping them in file order under the journal's lock), and
// each caller seals and encodes its change in parallel before that lock;
// a queue above it would serialise that work on the default backend's hot
// path. The rules themselves are the shared ones (storage.SealChange,
// Stamp, NextLineage, SealRevision, SealSnapshot), and the lock's state is
// the remote.Hold every backend keeps.
type writer struct {
	b      *Backend
	lk     *lock.Lock
	holder storage.Holder
	// hold is the lock's state (remote.Hold, the one every backend's
	// writer keeps): lost when the stack folder moved from under it,
	// released, or broken by a write that failed half-way.
	hold *remote.Hold
	jr   *journal.Journal
	// created: Lock made the stack folder (and createdRoot its parent):
	// Release removes them when nothing was ever written in them.
	created, createdRoot bool

	// ck is held shared by commits and exclusively by Checkpoint, which
	// reopens the journal.
	ck sync.RWMutex

	mu      sync.Mutex // guards what follows
	st      *state.State
	lineage string
	disk    int64 // serial of the snapshot on disk
	reseal  bool  // the snapshot (and maybe backups) hold in clear what is sealed
	migrate bool  // the snapshot must be rewritten (revision texts, lineage)
	empty   bool  // nothing was ever committed: the first commit may name the lineage
	// liveOps are the operation records of the live segment, in order:
	// its op index once sealed (see opsPath).
	liveOps []journal.Record
	wrote   bool // something was written under this lock
	// deferred are the lines of Deferred Commits not written yet: the
	// next waited Commit writes them before its own, in the same write
	// and fsync (Checkpoint and Release write them too). Held in memory,
	// not written at once without an fsync: a crash loses them exactly as
	// the storage contract allows, which is what the crash tests then
	// exercise (a kill -9 keeps what the page cache has).
	deferred []byte

	// changeBufs holds the buffers Commit encodes changes into (*[]byte).
	changeBufs sync.Pool
}

var _ storage.Writer = (*writer)(nil)

func (w *writer) usable() error { return w.hold.Usable() }

// newHold is the state of w's lock. The lock is lost when the stack folder
// was renamed or replaced while it is held (lk.StillAt, asked before each
// write): the journal (written through its descriptor) went with the
// folder, and what is written by name (the snapshot, revisions, backups,
// the next segment) would make a second folder at the old path, of mixed
// lineage, that another command could lock and use at once. Nothing more
// is then written, anywhere, and Lost closes so the operation stops before
// its next write, left for resume in the folder that moved.
func (w *writer) newHold() *remote.Hold {
	dir := w.b.dir
	return remote.NewHold(remote.Messages{
		Lost: func(why error) error {
			return fmt.Errorf("%w: the stack folder %s was moved or replaced while this command held its lock (%v): nothing more was written, there or anywhere. Find where the folder went (it holds this operation's journal), move it back to %s, then run `bulwark resume`",
				storage.ErrLost, dir, why, dir)
		},
		Released: func() error { return fmt.Errorf("%w: it was released", storage.ErrLost) },
		Expired:  func() error { return w.lk.StillAt(dir) },
	})
}

// fail records err, a write that failed half-way: nothing more is written.
func (w *writer) fail(err error) error {
	w.hold.Break(err)
	return err
}

// current returns a copy of the state that shares its resources with the
// writer's (a resource is never changed in place: a commit puts a new one),
// so the session's view and the writer's are one state in memory, not two.
func (w *writer) current() *state.State {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := *w.st
	c.Resources = maps.Clone(w.st.Resources)
	if c.Resources == nil {
		c.Resources = map[string]*state.Resource{}
	}
	c.Forgotten = slices.Clone(w.st.Forgotten)
	c.Interventions = slices.Clone(w.st.Interventions)
	c.Revisions = slices.Clone(w.st.Revisions)
	c.Outputs = maps.Clone(w.st.Outputs)
	return &c
}

func (w *writer) afterWrite() {
	if w.b.opts.AfterWrite != nil {
		w.b.opts.AfterWrite()
	}
}

// Commit appends c's records, the last carrying c's change, in one write,
// and returns once they are durable.
func (w *writer) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	check := w.usable
	if c.Empty() || (c.Deferred && c.Change.Empty()) {
		// Nothing is written now: the folder's path is asked about by the
		// write that carries these records (an Lstat per commit, which a
		// step's deferred "verify ok" need not pay).
		check = w.hold.Intact
	}
	if err := check(); err != nil {
		return 0, err
	}
	if c.Empty() {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.st.Serial, nil
	}
	if c.Deferred && c.Change.Empty() {
		w.mu.Lock()
		defer w.mu.Unlock()
		lines, err := w.encode(w.deferred, c.Records, nil, 0)
		if err != nil {
			return 0, err
		}
		w.deferred = lines
		return w.st.Serial, nil
	}
	// The change is sealed and encoded before the journal's lock is
	// taken: it depends on nothing another commit changes, and concurrent
	// steps' commits then serialize only on what must be in file order.
	var raw []byte
	if !c.Change.Empty() {
		// Checked and sealed as every backend seals a change.
		disk, err := storage.SealChange(c.Change, w.b.path(stateFile), w.b.opts.Sealing)
		if err != nil {
			return 0, fmt.Errorf("save state: %w", err)
		}
		// Encoded into a buffer of the pool: encode copies it into the
		// commit's lines.
		buf, _ := w.changeBufs.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		defer w.changeBufs.Put(buf)
		if *buf, err = appendChange((*buf)[:0], disk); err != nil {
			return 0, fmt.Errorf("commit: encode the change: %w", err)
		}
		// With its checksum (storage.AppendEnclosed), checked when Load
		// replays it: a change edited by hand in the journal is refused,
		// as an edited state.json is.
		raw = storage.AppendEnclosed(make([]byte, 0, len(*buf)+96), *buf)
	}
	w.ck.RLock()
	defer w.ck.RUnlock()
	var serial int64
	var sensitiveGrew bool
	err := w.jr.AppendLines(func(dst []byte) ([]byte, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		serial = w.st.Serial
		if raw != nil {
			sensitiveGrew = w.sensitiveGrew(c.Change)
			serial++
		}
		// A stack copied into this empty folder (state migrate) keeps its
		// lineage: the records say the one its state does, not the one
		// Lock minted for a new stack. Another lineage is refused once the
		// stack holds anything.
		lineage, err := storage.NextLineage(w.b.Location(), w.lineage, c.Change.Meta, w.empty)
		if err != nil {
			return nil, err
		}
		w.lineage = lineage
		w.empty = false
		recs := c.Records
		if len(recs) == 0 {
			recs = []journal.Record{{Kind: journal.KindState, Status: journal.StepOK}}
		}
		// The deferred records come first: the file keeps the order they
		// were committed in, and this write's fsync makes them durable.
		lines, err := w.encode(append(dst, w.deferred...), recs, raw, serial)
		if err != nil {
			return nil, err
		}
		w.deferred = w.deferred[:0] // its buffer holds the next ones
		if raw != nil {
			c.Change.Apply(w.st)
		}
		w.wrote = true
		if sensitiveGrew {
			w.reseal = true
		}
		return lines, nil
	})
	if err != nil {
		if w.jr.Broken() != nil {
			return 0, w.fail(err)
		}
		return 0, err
	}
	w.afterWrite()
	return serial, nil
}

// encode stamps recs (id, time, lineage) in place and appends their lines
// to b, one commit: each line says how many of the commit follow it
// (Rest), and the last carries the change raw (the state's serial after
// it), if any. On an error b is not to be used. w.mu is held.
func (w *writer) encode(b []byte, recs []journal.Record, raw []byte, serial int64) ([]byte, error) {
	b = slices.Grow(b, 384*len(recs)+len(raw))
	storage.Stamp(recs, w.jr.Now(), w.lineage)
	for i := range recs {
		r := &recs[i]
		r.Rest = len(recs) - 1 - i
		withChange := i == len(recs)-1 && raw != nil
		if withChange {
			r.Serial, r.Change = serial, nil
		}
		line, err := r.AppendJSON(b)
		r.Rest, r.Serial, r.Change = 0, 0, nil
		if err != nil {
			return nil, fmt.Errorf("commit: encode: %w", err)
		}
		if withChange {
			// "change" is a record's last field, and raw is what
			// AppendJSON would make of it (appendChange writes
			// json.Marshal's bytes: compact, HTML-escaped), so it goes in
			// as it is, not checked and compacted again.
			line = append(line[:len(line)-1], `,"change":`...)
			line = append(line, raw...)
			line = append(line, '}')
		}
		b = append(line, '\n')
		if r.Kind == journal.KindOp {
			w.liveOps = append(w.liveOps, *r)
		}
	}
	return b, nil
}

// appendChange appends ch's JSON, the very bytes json.Marshal writes for it
// (encode_test.go holds the two equal): a step's change (resources put or
// deleted) without reflection, through state.Resource.AppendJSON; one with
// metadata (an operation's start and end) through json.Marshal.
func appendChange(b []byte, ch storage.Change) ([]byte, error) {
	if ch.Meta != nil {
		out, err := json.Marshal(ch)
		if err != nil {
			return nil, err
		}
		return append(b, out...), nil
	}
	b = append(b, '{')
	if len(ch.Put) > 0 {
		b = append(b, `"put":[`...)
		for i, r := range ch.Put {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = r.AppendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(ch.Delete) > 0 {
		if len(ch.Put) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"delete":`...)
		b = value.AppendJSONStrings(b, ch.Delete)
	}
	return append(b, '}'), nil
}

// flushDeferred writes the deferred records, durably.
func (w *writer) flushDeferred() error {
	w.mu.Lock()
	empty := len(w.deferred) == 0
	w.mu.Unlock()
	if empty {
		return nil
	}
	err := w.jr.AppendLines(func(dst []byte) ([]byte, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.wrote = w.wrote || len(w.deferred) > 0
		dst = append(dst, w.deferred...)
		w.deferred = w.deferred[:0]
		return dst, nil
	})
	if err != nil && w.jr.Broken() != nil {
		return w.fail(err)
	}
	if err == nil {
		w.afterWrite()
	}
	return err
}

// sensitiveGrew reports a put of ch that lists as sensitive more than the
// state's record did (what the snapshot holds of it is then in clear until
// the next Checkpoint). w.mu is held.
func (w *writer) sensitiveGrew(ch storage.Change) bool {
	for _, r := range ch.Put {
		if old := w.st.Resources[r.Name]; old != nil && len(r.Sensitive) > len(old.Sensitive) {
			return true
		}
	}
	return false
}
