package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/oklog/ulid/v2"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
)

// writer is a held lock: the remote.Client under the stack's
// remote.Writer (which checks, seals and stamps each group, and holds the
// lock's lost, released or broken state). It writes each group as one WAL
// object, fenced by its create-only key, and the blobs beside it.
type writer struct {
	b     *client
	hold  *remote.Hold
	stale *storage.Holder
	stop  chan struct{} // closed by Release: the renewals end
	done  chan struct{} // closed when the renewals ended

	mu       sync.Mutex
	lr       *lockRecord
	etag     string // lock.json's, as last written
	renewing bool

	// The stack as this writer wrote it: the state (values in clear), the
	// journal, the last WAL object, the snapshot's.
	st        *state.State
	recs      []journal.Record
	seq       int64
	lineage   string
	persisted bool   // stack.json exists
	idETag    string // stack.json's, as read or written
	committed bool   // the stack has a WAL object or a snapshot
	snapSeq   int64
	snapETag  string
	walBytes  int64 // of the WAL objects after the snapshot
	fences    []int64
	legacy    bool // an older bulwark's stack, until upgrade
}

var _ remote.Client = (*writer)(nil)

// newWriter is the Client of lock record lr (its ETag etag), with its Hold.
func (b *client) newWriter(lr *lockRecord, etag string, stale *storage.Holder) *writer {
	w := &writer{b: b, lr: lr, etag: etag, stale: stale, stop: make(chan struct{}), done: make(chan struct{})}
	w.hold = remote.NewHold(remote.Messages{
		Lost: func(why error) error {
			return fmt.Errorf("s3 backend %s: %w: %v; nothing more was written", b.loc, storage.ErrLost, why)
		},
		Released: func() error {
			return fmt.Errorf("s3 backend %s: %w: the lock was released", b.loc, storage.ErrLost)
		},
		Expired: w.expired,
	})
	return w
}

// public is the storage.Writer over w, as of the stack w loaded.
func (w *writer) public() *remote.Writer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return remote.NewWriter(w, w.hold, remote.Start{Loc: w.b.loc, Serial: w.st.Serial, Lineage: w.lineage,
		Adoptable: !w.committed, Stale: w.stale, Sealing: w.b.opts.Sealing, Now: w.b.now})
}

// expired says the lease ran out (nil while it runs).
func (w *writer) expired() error {
	w.mu.Lock()
	until := w.lr.Holder.Until
	w.mu.Unlock()
	if !until.IsZero() && w.b.now().After(until) {
		return errors.New("the lease ran out")
	}
	return nil
}

func (w *writer) init(l *loaded) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st, w.recs, w.seq, w.snapSeq, w.snapETag, w.walBytes = l.st, l.recs, l.seq, l.snapSeq, l.snapETag, l.walBytes
	w.fences = slices.Clone(l.fences)
	w.legacy = l.legacy
	if l.id != nil {
		w.lineage, w.persisted, w.idETag = l.id.Lineage, true, l.idETag
	} else {
		// Minted now and stored by Lock (so the idempotency keys of the
		// first operation carry it); until a first Commit, a Meta may
		// replace it (the lineage of a stack moved here). State migrate's
		// destination is created with its source's.
		w.lineage = w.b.opts.Lineage
		if w.lineage == "" {
			w.lineage = ulid.Make().String()
		}
	}
	w.committed = l.seq > 0 || l.snapETag != ""
	w.st.Lineage = w.lineage
}

// Where names where the next WAL object is stored.
func (w *writer) Where() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.key(walKey(w.seq + 1))
}

// Append writes one group of Commits as one WAL object.
func (w *writer) Append(ctx context.Context, g remote.Group) error {
	w.mu.Lock()
	seq, token := w.seq, w.lr.Token
	w.mu.Unlock()
	clear := make([]entry, 0, len(g.Accepted))
	sealed := make([]entry, 0, len(g.Accepted))
	for _, a := range g.Accepted {
		ch := a.Commit.Change
		e := entry{Records: a.Commit.Records, Put: ch.Put, Delete: ch.Delete, Meta: ch.Meta}
		se := entry{Records: e.Records, Put: a.Sealed.Put, Delete: a.Sealed.Delete, Meta: a.Sealed.Meta}
		clear, sealed = append(clear, e), append(sealed, se)
	}
	for i := range sealed {
		for j := range sealed[i].Records {
			sealed[i].Records[j].Lineage = g.Lineage
		}
	}
	if g.Lineage != g.PrevLineage || !w.isPersisted() {
		if err := w.writeIdentity(ctx, g.Lineage); err != nil {
			return err
		}
	}
	sg := segment{Format: format, Seq: seq + 1, Lineage: g.Lineage, Token: token, Entries: sealed}
	body, err := storage.MarshalEnclosed(&sg)
	if err != nil {
		return fmt.Errorf("commit to %s: %w", w.b.loc, err)
	}
	if err := w.writeSegment(ctx, sg.Seq, body, token); err != nil {
		return err
	}
	w.mu.Lock()
	for _, e := range clear {
		w.recs = append(w.recs, e.Records...)
		if e.changes() {
			storage.Change{Put: e.Put, Delete: e.Delete, Meta: e.Meta}.Apply(w.st)
		}
	}
	w.st.Lineage = g.Lineage
	w.seq, w.lineage, w.persisted, w.committed = sg.Seq, g.Lineage, true, true
	w.walBytes += int64(len(body))
	if sg.fences() {
		w.fences = append(w.fences, sg.Seq)
	}
	w.mu.Unlock()
	w.afterWrite()
	return nil
}

func (w *writer) afterWrite() {
	if f := w.b.opts.AfterWrite; f != nil {
		f()
	}
}

func (w *writer) isPersisted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.persisted
}

// writeIdentity writes stack.json: at the first Lock of a stack, and again
// when its first Commit brings another lineage (a stack moved here).
func (w *writer) writeIdentity(ctx context.Context, lineage string) error {
	id := &identity{Format: format, Stack: w.b.opts.Stack, Lineage: lineage, Created: w.b.now().UTC()}
	w.mu.Lock()
	c := cond{ifNoneMatch: true}
	if w.persisted {
		c = cond{ifMatch: w.idETag}
	}
	w.mu.Unlock()
	tag, _, err := w.b.putRecord(ctx, identityKey, id, c, nil)
	if err == nil {
		w.mu.Lock()
		w.persisted, w.idETag, w.lineage = true, tag, lineage
		w.st.Lineage = lineage
		w.mu.Unlock()
		w.afterWrite()
		return nil
	}
	if !lostRace(err) {
		return w.b.wrap("write "+identityKey, err)
	}
	// Written by another writer since this one loaded: it lost the lock.
	_ = w.hold.Lose(fmt.Errorf("%s was written by another writer", identityKey))
	return fmt.Errorf("s3 backend %s: %w: another writer initialised the stack", w.b.loc, storage.ErrLost)
}

// writeSegment writes WAL object seq, create-only. A 412 (or 409) is a lost
// race: another writer (the one that took the lock over) wrote that seq.
// An error that leaves the outcome unknown is looked up: the object with
// this writer's token is a success; anything else breaks the writer.
func (w *writer) writeSegment(ctx context.Context, seq int64, body []byte, token string) error {
	name := walKey(seq)
	_, err := w.b.put(ctx, name, body, cond{ifNoneMatch: true}, nil)
	if err == nil {
		return nil
	}
	if lostRace(err) && !notFound(err) {
		_ = w.hold.Lose(fmt.Errorf("write-ahead log object %d was written by another writer", seq))
		return fmt.Errorf("s3 backend %s: %w: another writer took the lock over and wrote first; nothing was written", w.b.loc, storage.ErrLost)
	}
	o, gerr := w.b.record(context.WithoutCancel(ctx), name, false)
	if gerr == nil && o != nil {
		var sg segment
		if json.Unmarshal(o.body, &sg) == nil && sg.Token == token {
			return nil // it was written
		}
		_ = w.hold.Lose(fmt.Errorf("write-ahead log object %d was written by another writer", seq))
		return fmt.Errorf("s3 backend %s: %w: another writer wrote first; nothing was written", w.b.loc, storage.ErrLost)
	}
	return &remote.UnknownError{Err: w.b.wrap("write "+name, err),
		Later: fmt.Errorf("s3 backend %s: an earlier write's outcome is unknown, so nothing more is written by this process (resume goes on from what is stored): %w", w.b.loc, err)}
}

// PutRevision stores revision n's body (sealed by the remote.Writer).
func (w *writer) PutRevision(ctx context.Context, n int, sb storage.RevisionBody) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	if _, _, err := w.b.putRecord(ctx, revisionKey(n), &revision{Body: sb}, cond{}, nil); err != nil {
		return w.b.wrap(fmt.Sprintf("write revision %d", n), err)
	}
	w.afterWrite()
	return nil
}

// DeleteRevision drops revision n's body.
func (w *writer) DeleteRevision(ctx context.Context, n int) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	_, err := w.b.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(w.b.bucket), Key: aws.String(w.b.key(revisionKey(n)))})
	if err != nil && !notFound(err) {
		return w.b.wrap(fmt.Sprintf("delete revision %d", n), err)
	}
	return nil
}

// PutBackup stores the state as of now under name, keeping the newest keep.
func (w *writer) PutBackup(ctx context.Context, name string, keep int) (bool, error) {
	if err := w.held(ctx); err != nil {
		return false, err
	}
	if !validName(name) {
		return false, fmt.Errorf("s3 backend %s: backup name %q is not an operation id", w.b.loc, name)
	}
	w.mu.Lock()
	st := w.st.Clone()
	w.mu.Unlock()
	have, err := w.b.Backups(ctx)
	if err != nil {
		return false, err
	}
	if len(have) > 0 && have[len(have)-1].Serial == st.Serial {
		return false, nil // nothing changed since the newest: no second copy
	}
	sst, err := storage.SealSnapshot(st, w.b.opts.Sealing)
	if err != nil {
		return false, w.b.wrap("backup "+name, err)
	}
	at := w.b.now().UTC()
	meta := map[string]string{"time": at.Format(time.RFC3339Nano), "serial": strconv.FormatInt(sst.Serial, 10)}
	if _, _, err := w.b.putRecord(ctx, backupDir+name, &backup{Format: format, Name: name, Time: at, State: sst}, cond{ifNoneMatch: true}, meta); err != nil {
		if lostRace(err) {
			return false, nil // there already: the first part's backup stays
		}
		return false, w.b.wrap("write backup "+name, err)
	}
	w.afterWrite()
	if keep > 0 {
		if err := w.held(ctx); err != nil {
			return true, err
		}
		list, err := w.b.Backups(ctx)
		if err != nil {
			return true, err
		}
		var drop []string
		for i := 0; i < len(list)-keep; i++ {
			drop = append(drop, backupDir+list[i].Name)
		}
		if err := w.b.deleteKeys(ctx, drop); err != nil {
			return true, err
		}
	}
	return true, nil
}

// DropBackup deletes the backup stored under name, if there is one.
func (w *writer) DropBackup(ctx context.Context, name string) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	if !validName(name) {
		return fmt.Errorf("s3 backend %s: backup name %q is not an operation id", w.b.loc, name)
	}
	return w.b.deleteKeys(ctx, []string{backupDir + name})
}

// CopyBackup stores st, a backup read from another backend (bulwark state
// migrate), under info.Name with info.Time, sealed as PutBackup seals. A
// backup already stored under the name is kept as it is. Nothing is pruned.
func (w *writer) CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	if !validName(info.Name) {
		return fmt.Errorf("s3 backend %s: backup name %q is not an operation id", w.b.loc, info.Name)
	}
	sst, err := storage.SealSnapshot(st.Clone(), w.b.opts.Sealing)
	if err != nil {
		return w.b.wrap("copy backup "+info.Name, err)
	}
	at := info.Time.UTC()
	if info.Time.IsZero() {
		at = w.b.now().UTC()
	}
	meta := map[string]string{"time": at.Format(time.RFC3339Nano), "serial": strconv.FormatInt(sst.Serial, 10)}
	if _, _, err := w.b.putRecord(ctx, backupDir+info.Name, &backup{Format: format, Name: info.Name, Time: at, State: sst}, cond{ifNoneMatch: true}, meta); err != nil {
		if lostRace(err) {
			return nil // there already: kept as it is
		}
		return w.b.wrap("copy backup "+info.Name, err)
	}
	w.afterWrite()
	return nil
}

// ReplaceBackup stores st, sealed under the backend's sealing now, as
// backup name's object (secrets rotate): a PUT conditional on the ETag the
// object had (If-Match), keeping its time and serial, so the old bytes
// stay whole until S3 has the new ones and a backup pruned or replaced
// meanwhile is never written back.
func (w *writer) ReplaceBackup(ctx context.Context, name string, st *state.State) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	if !validName(name) {
		return fmt.Errorf("s3 backend %s: backup name %q is not an operation id", w.b.loc, name)
	}
	o, err := w.b.get(ctx, backupDir+name)
	if err != nil {
		return err
	}
	if o == nil || o.etag == "" {
		return fmt.Errorf("backup %s of %s: %w", name, w.b.loc, storage.ErrNotFound)
	}
	sst, err := storage.SealSnapshot(st.Clone(), w.b.opts.Sealing)
	if err != nil {
		return w.b.wrap("replace backup "+name, err)
	}
	at, _ := time.Parse(time.RFC3339Nano, o.meta["time"])
	meta := map[string]string{"time": at.UTC().Format(time.RFC3339Nano), "serial": strconv.FormatInt(sst.Serial, 10)}
	if _, _, err := w.b.putRecord(ctx, backupDir+name, &backup{Format: format, Name: name, Time: at.UTC(), State: sst}, cond{ifMatch: o.etag}, meta); err != nil {
		if lostRace(err) {
			// Not what was read: written by no one but a writer of
			// this stack, so nothing is guessed; run it again.
			return w.b.wrap("replace backup "+name, fmt.Errorf("the object changed while it was re-sealed (its ETag is no longer %s): %w", o.etag, err))
		}
		return w.b.wrap("replace backup "+name, err)
	}
	w.afterWrite()
	return nil
}

// A Checkpoint writes a snapshot only when the journal compacts, or when
// the WAL since the last snapshot is long enough that reading it costs more
// than rewriting the snapshot would: a no-op apply (two small WAL objects)
// writes no snapshot, which holds the whole state and the retained journal.
const (
	checkpointSegments = 100
	checkpointBytes    = 4 << 20
)

// Checkpoint folds the WAL into a new snapshot (with the journal compacted)
// and deletes the WAL objects it holds. With nothing to compact and a short
// WAL, nothing is written: Load is cheap already. (The remote.Writer has
// flushed what was deferred.)
func (w *writer) Checkpoint(ctx context.Context, keepOps int) error {
	return w.checkpoint(ctx, keepOps, false)
}

// checkpoint is Checkpoint's work; force writes the snapshot even when
// nothing compacts and the WAL is short (upgrade).
func (w *writer) checkpoint(ctx context.Context, keepOps int, force bool) error {
	w.mu.Lock()
	n0 := len(w.recs)
	recs, compacted := journal.CompactRecords(w.recs[:n0:n0], keepOps)
	recs = append([]journal.Record(nil), recs...)
	idle := !force && compacted == 0 && w.seq-w.snapSeq < checkpointSegments && w.walBytes < checkpointBytes
	legacy := w.legacy
	lineage, persisted := w.lineage, w.persisted
	st, seq := w.st.Clone(), w.seq
	fences := slices.Clone(w.fences)
	w.mu.Unlock()
	if idle || !persisted {
		return nil
	}
	// Still ours? (A displaced writer's snapshot would be harmless, a
	// prefix of the WAL, but it is not written.)
	if err := w.held(ctx); err != nil {
		return err
	}
	sst, err := storage.SealSnapshot(st, w.b.opts.Sealing)
	if err != nil {
		return w.b.wrap("checkpoint", err)
	}
	body, err := storage.MarshalEnclosed(&snapshot{Format: format, Stack: w.b.opts.Stack, Lineage: lineage, Seq: seq, State: sst, Journal: recs, Fences: fences})
	if err != nil {
		return err
	}
	w.mu.Lock()
	etag := w.snapETag
	w.mu.Unlock()
	var tag string
	for attempt := 0; ; attempt++ {
		c := cond{ifMatch: etag}
		if etag == "" {
			c = cond{ifNoneMatch: true}
		}
		tag, err = w.b.put(ctx, snapshotKey, body, c, nil)
		if err == nil {
			break
		}
		if !lostRace(err) || attempt > 0 {
			if lostRace(err) {
				return w.hold.Lose(errors.New("the snapshot was rewritten by another writer"))
			}
			return w.b.wrap("write "+snapshotKey, err)
		}
		// Rewritten since this writer read it: by a displaced writer's
		// checkpoint (a prefix of what this one holds), or by a taker. The
		// lock decides.
		o, gerr := w.b.record(ctx, snapshotKey, legacy)
		if gerr != nil {
			return gerr
		}
		var sn snapshot
		if o == nil || json.Unmarshal(o.body, &sn) != nil || sn.Lineage != lineage || sn.Seq > seq {
			return w.hold.Lose(errors.New("the snapshot was rewritten by another writer"))
		}
		etag = o.etag
	}
	w.mu.Lock()
	w.snapETag, w.snapSeq, w.walBytes = tag, seq, 0
	// Records committed meanwhile (none, usually: Checkpoint runs between
	// operations) stay after the compacted ones, in the WAL.
	w.recs = append(recs, w.recs[n0:]...)
	w.mu.Unlock()
	w.afterWrite()
	// The WAL objects the snapshot holds are garbage now: a reader lists
	// only those after its seq.
	objs, err := w.b.list(ctx, walDir, "")
	if err != nil {
		return nil
	}
	var drop []string
	for _, o := range objs {
		k := aws.ToString(o.Key)
		n, perr := strconv.ParseInt(strings.TrimPrefix(k, walDir), 10, 64)
		if perr == nil && n <= seq && !slices.Contains(fences, n) {
			drop = append(drop, k)
		}
	}
	_ = w.b.deleteKeys(ctx, drop) // what is left is deleted by the next
	return nil
}

// MarkMoved records in stack.json that the stack now lives at to (`bulwark
// state migrate`): from then on Load and Lock refuse with storage.ErrMoved
// naming it. The objects stay, for reference.
func (w *writer) MarkMoved(ctx context.Context, to string) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	cur, etag, _, err := w.b.readIdentity(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	id := identity{Format: format, Stack: w.b.opts.Stack, Lineage: w.lineage, Created: w.b.now().UTC()}
	w.mu.Unlock()
	c := cond{ifNoneMatch: true}
	if cur != nil {
		id = *cur
		id.Format = format
		c = cond{ifMatch: etag}
	}
	id.MovedTo = to
	if _, _, err := w.b.putRecord(ctx, identityKey, &id, c, nil); err != nil {
		if lostRace(err) {
			return w.hold.Lose(fmt.Errorf("%s was rewritten by another writer", identityKey))
		}
		return w.b.wrap("mark moved", err)
	}
	w.mu.Lock()
	w.persisted = true
	w.mu.Unlock()
	w.afterWrite()
	return nil
}

// Unlock gives the lock up (remote.Writer.Release).
func (w *writer) Unlock(ctx context.Context) error { return w.unlock(ctx) }

// upgrade rewrites with their checksums the objects of a stack an older
// bulwark wrote (its stack.json has none): the snapshot, of the state and
// journal as loaded (nothing compacted; the WAL objects it holds are
// deleted, but for the fences), every revision and backup (each with
// If-Match on what was read, its metadata kept), and stack.json last. From
// then on a record without a checksum is refused. A crash midway leaves
// stack.json as it was, and the next Lock does it again. Each object is
// written once; the cost is the stack's revisions and backups (retention
// bounds them) and one snapshot.
func (w *writer) upgrade(ctx context.Context) error {
	if err := w.checkpoint(ctx, math.MaxInt32, true); err != nil {
		return fmt.Errorf("s3 backend %s: add checksums to the objects an older bulwark wrote: %w", w.b.loc, err)
	}
	for _, dir := range []string{revisionDir, backupDir} {
		objs, err := w.b.list(ctx, dir, "")
		if err != nil {
			return err
		}
		for _, lo := range objs {
			name := aws.ToString(lo.Key)
			o, err := w.b.get(ctx, name)
			if err != nil {
				return err
			}
			if o == nil {
				continue // pruned meanwhile
			}
			rec, legacy, err := storage.DiscloseLegacy(o.body, w.b.at(name))
			if err != nil {
				return err
			}
			if !legacy {
				continue
			}
			body, err := storage.Enclose(rec)
			if err != nil {
				return w.b.wrap("add a checksum to "+name, err)
			}
			if err := w.held(ctx); err != nil {
				return err
			}
			if _, err := w.b.put(ctx, name, body, cond{ifMatch: o.etag}, o.meta); err != nil {
				if lostRace(err) {
					return w.hold.Lose(fmt.Errorf("%s was rewritten by another writer", name))
				}
				return w.b.wrap("add a checksum to "+name, err)
			}
			w.afterWrite()
		}
	}
	id, etag, legacy, err := w.b.readIdentity(ctx)
	if err != nil {
		return err
	}
	if id == nil || !legacy {
		return nil
	}
	id.Format = format
	if err := w.held(ctx); err != nil {
		return err
	}
	tag, _, err := w.b.putRecord(ctx, identityKey, id, cond{ifMatch: etag}, nil)
	if err != nil {
		if lostRace(err) {
			return w.hold.Lose(fmt.Errorf("%s was rewritten by another writer", identityKey))
		}
		return w.b.wrap("add a checksum to "+identityKey, err)
	}
	w.mu.Lock()
	w.idETag, w.legacy = tag, false
	w.mu.Unlock()
	w.afterWrite()
	return nil
}
