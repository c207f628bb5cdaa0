package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/oklog/ulid/v2"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/groupcommit"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
)

// How the lock connection is watched: it waits for the server (which sends
// nothing to an idle session but the error that ends it) for watchIdle, then
// pings, so a connection that died silently is found within about
// watchIdle+pingTimeout. On the server's side, TCP keepalives on the lock
// connection find a vanished client.
const (
	watchIdle   = 5 * time.Second
	pingTimeout = 10 * time.Second
)

// lockWait bounds how long Lock, finding the lock held, waits for the
// holder's row to appear (a holder writes it right after taking the lock).
const lockWait = 2 * time.Second

// Lock takes the stack's lock on a connection of its own.
func (b *client) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	h = storage.HolderDefaults(h, b.now())
	cfg := b.conn.Copy()
	// The server finds a client machine that vanished (no FIN ever comes)
	// by keepalives: about 10 s idle, then 4 probes 5 s apart.
	cfg.RuntimeParams["tcp_keepalives_idle"] = "10"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "5"
	cfg.RuntimeParams["tcp_keepalives_count"] = "4"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, b.wrap("lock", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, b.key).Scan(&got); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, b.wrap("lock", err)
	}
	if !got {
		if got, err = b.retryLock(ctx, conn); !got {
			conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	w, err := b.takeOver(ctx, conn, h)
	if err != nil {
		conn.Close(context.WithoutCancel(ctx)) // the session's end releases the lock
		return nil, err
	}
	go w.watch()
	return w.public, nil
}

// retryLock, the lock found held, tries again for a short while when its
// holder is known dead (a process of this host that is gone: the server
// ends its session within milliseconds, but a Lock right after a kill -9
// can come first) or has not written its row yet; otherwise it returns the
// LockedError naming the holder at once.
func (b *client) retryLock(ctx context.Context, conn *pgx.Conn) (bool, error) {
	host, _ := os.Hostname()
	deadline := time.Now().Add(lockWait)
	for {
		h, err := b.holder(ctx, b.pool)
		if err != nil {
			return false, &storage.LockedError{Location: b.loc}
		}
		dying := h != nil && h.PID != 0 && h.Host == host && !alive(h.PID)
		unnamed := h != nil && h.PID == 0
		if h != nil && !dying && !unnamed {
			return false, &storage.LockedError{Location: b.loc, Holder: h}
		}
		if time.Now().After(deadline) {
			if unnamed {
				h = nil
			}
			return false, &storage.LockedError{Location: b.loc, Holder: h}
		}
		select {
		case <-ctx.Done():
			return false, &storage.LockedError{Location: b.loc, Holder: h}
		case <-time.After(10 * time.Millisecond):
		}
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, b.key).Scan(&got); err != nil {
			return false, b.wrap("lock", err)
		}
		if got {
			return true, nil
		}
	}
}

// takeOver, the advisory lock held, bumps the lock epoch (fencing off any
// earlier holder's writes in flight) and writes the holder row, in one
// transaction on the lock connection.
func (b *client) takeOver(ctx context.Context, conn *pgx.Conn, h storage.Holder) (*writer, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, b.wrap("lock", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, b.sql.ensureStack, b.stack); err != nil {
		return nil, b.wrap("lock", err)
	}
	row, err := b.readStack(ctx, tx, true)
	if err != nil {
		return nil, b.wrap("lock", err)
	}
	if err := b.movedError(row.movedTo); err != nil {
		return nil, err
	}
	last, err := b.lastLineage(ctx, tx)
	if err != nil {
		return nil, b.wrap("lock", err)
	}
	if row.lineage != "" && last != "" && last != row.lineage {
		return nil, &storage.LineageError{What: "state", Location: b.where("stacks"), Want: last, Found: row.lineage}
	}
	// The stack's lineage: the state's, else its journal's, else a new one.
	lineage := row.lineage
	if lineage == "" {
		lineage = last
	}
	if lineage == "" {
		lineage = b.opts.Lineage // state migrate's destination: its source's
	}
	if lineage == "" {
		lineage = ulid.Make().String()
	}
	if row.lineage == "" {
		// Stored now, so that Load, under this lock, already says it: the
		// idempotency keys of the operation's Creates are derived from it.
		if _, err := tx.Exec(ctx, b.sql.setLineage, b.stack, lineage); err != nil {
			return nil, b.wrap("lock", err)
		}
	}
	// A stack that holds nothing yet (state migrate's destination) adopts
	// the lineage of the first state committed to it.
	adoptable := row.serial == 0 && row.jseq == 0
	// Any holder row found now is stale: its connection no longer holds the
	// lock, since this one does.
	var stale *storage.Holder
	var op, host, user string
	var pid int32
	var since time.Time
	switch err := tx.QueryRow(ctx, b.sql.oldHolder, b.stack).Scan(&op, &pid, &host, &user, &since); {
	case err == nil:
		stale = &storage.Holder{Op: op, PID: int(pid), Host: host, User: user, Since: since.UTC()}
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, b.wrap("lock", err)
	}
	var epoch int64
	if err := tx.QueryRow(ctx, b.sql.takeover, b.stack).Scan(&epoch); err != nil {
		return nil, b.wrap("lock", err)
	}
	if _, err := tx.Exec(ctx, b.sql.putHolder, b.stack, h.Op, h.PID, h.Host, h.User, h.Since); err != nil {
		return nil, b.wrap("lock", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, b.wrap("lock", err)
	}
	if b.opts.AfterWrite != nil {
		b.opts.AfterWrite()
	}
	wctx, cancel := context.WithCancel(context.Background())
	w := &writer{
		b: b, conn: conn, pid: conn.PgConn().PID(), epoch: epoch, jseq: row.jseq,
		watchCtx: wctx, stopWatch: cancel, watchDone: make(chan struct{}),
	}
	w.hold = remote.NewHold(remote.Messages{Lost: w.errLost, Released: func() error {
		return fmt.Errorf("stack %s at %s: %w (this writer released it)", b.stack, b.loc, storage.ErrLost)
	}})
	w.public = remote.NewWriter(w, w.hold, remote.Start{Loc: b.loc, Serial: row.serial, Lineage: lineage,
		Adoptable: adoptable, Stale: stale, Sealing: b.opts.Sealing, Now: b.now})
	return w, nil
}

// writer is a held lock: the remote.Client under the stack's
// remote.Writer (which checks, seals and stamps each group, and holds the
// lock's lost, released or broken state). It writes each group in one
// transaction fenced by the lock's epoch and session.
type writer struct {
	b      *client
	public *remote.Writer
	hold   *remote.Hold
	conn   *pgx.Conn // the lock connection: the watcher's alone until Release
	pid    uint32    // its server process
	epoch  int64

	watchCtx  context.Context
	stopWatch context.CancelFunc
	watchDone chan struct{}

	mu   sync.Mutex // guards jseq
	jseq int64      // the journal's last seq
}

var (
	_ remote.Client  = (*writer)(nil)
	_ remote.Encoder = (*writer)(nil)
)

func (w *writer) lockIDs() (int64, int64) { return lockIDs(w.b.key) }

// markLost records the lock as lost and returns the error of every write
// from now on.
func (w *writer) markLost(why error) error { return w.hold.Lose(why) }

// errLost is the error of every write after the lock was lost for why.
func (w *writer) errLost(why error) error {
	if why == nil {
		return fmt.Errorf("stack %s at %s: %w (nothing more was written)", w.b.stack, w.b.loc, storage.ErrLost)
	}
	return mask(fmt.Errorf("postgres %s: %w (the lock connection ended: %v; nothing more was written)", w.b.loc, storage.ErrLost, why), w.b.password)
}

// watch reads the idle lock connection until it ends (the server closed it,
// or a ping found it dead), then marks the lock lost.
func (w *writer) watch() {
	defer close(w.watchDone)
	for {
		ctx, cancel := context.WithTimeout(w.watchCtx, watchIdle)
		err := w.conn.PgConn().WaitForNotification(ctx)
		cancel()
		if w.watchCtx.Err() != nil {
			return // Release
		}
		if err == nil {
			continue // a notification: nobody sends one, but it is harmless
		}
		if pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
			pctx, cancel := context.WithTimeout(w.watchCtx, pingTimeout)
			err = w.conn.Ping(pctx)
			cancel()
			if w.watchCtx.Err() != nil {
				return
			}
			if err == nil {
				continue
			}
		}
		_ = w.markLost(err)
		return
	}
}

// begin starts a write's transaction with the fence: it fails with ErrLost,
// having written nothing, when this Writer no longer holds the lock.
func (w *writer) begin(ctx context.Context) (pgx.Tx, error) {
	if err := w.hold.Usable(); err != nil {
		return nil, err
	}
	tx, err := w.b.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	cls, obj := w.lockIDs()
	tag, err := tx.Exec(ctx, w.b.sql.fence, w.b.stack, w.epoch, cls, obj, w.pid)
	if err == nil && tag.RowsAffected() != 1 {
		err = w.markLost(errors.New("the lock is no longer this writer's"))
	}
	if err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return tx, nil
}

func (w *writer) afterWrite() {
	if w.b.opts.AfterWrite != nil {
		w.b.opts.AfterWrite()
	}
}

// Where names where the resources are stored.
func (w *writer) Where() string { return w.b.where("resources") }

// group is what one transaction writes for a group of Commits.
type group struct {
	serial   int64 // after the group
	jseq     int64
	lineage  string
	meta     []byte
	seqs     []int64
	ops      []string
	kinds    []string
	lineages []string
	bodies   [][]byte
	puts     map[string][]byte
	dels     map[string]bool
}

// rows is one Commit laid out as rows (Encode).
type rows struct {
	meta   []byte
	puts   map[string][]byte
	bodies [][]byte
}

// Encode lays one accepted Commit (checked, sealed and stamped by the
// remote.Writer) out as rows; one that cannot be encoded fails alone.
func (w *writer) Encode(a *groupcommit.Accepted) error {
	var r rows
	var err error
	if a.Sealed.Meta != nil {
		if r.meta, err = metaRow(a.Sealed.Meta); err != nil {
			return err
		}
	}
	r.puts = make(map[string][]byte, len(a.Sealed.Put))
	for _, sr := range a.Sealed.Put {
		if r.puts[sr.Name], err = resourceRow(sr); err != nil {
			return err
		}
	}
	r.bodies = make([][]byte, 0, len(a.Commit.Records))
	for i := range a.Commit.Records {
		rec := &a.Commit.Records[i]
		rec.Time = rec.Time.UTC()
		body, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encode record: %w", err)
		}
		r.bodies = append(r.bodies, body)
	}
	a.Stored = &r
	return nil
}

// Append writes one group in one transaction: each Commit's rows folded
// into it, in order.
func (w *writer) Append(ctx context.Context, rg remote.Group) error {
	w.mu.Lock()
	g := &group{jseq: w.jseq, puts: map[string][]byte{}, dels: map[string]bool{}}
	w.mu.Unlock()
	g.lineage, g.serial = rg.Lineage, rg.Serial
	for _, a := range rg.Accepted {
		r := a.Stored.(*rows)
		for i, rec := range a.Commit.Records {
			g.jseq++
			g.seqs = append(g.seqs, g.jseq)
			g.ops = append(g.ops, rec.Op)
			g.kinds = append(g.kinds, rec.Kind)
			g.lineages = append(g.lineages, a.Lineage)
			g.bodies = append(g.bodies, r.bodies[i])
		}
		for n, body := range r.puts {
			g.puts[n] = body
			delete(g.dels, n)
		}
		for _, n := range a.Sealed.Delete {
			g.dels[n] = true
			delete(g.puts, n)
		}
		if r.meta != nil {
			g.meta = r.meta
		}
	}
	if err := w.write(ctx, g, rg.PrevSerial); err != nil {
		return err
	}
	w.afterWrite()
	return nil
}

func (w *writer) write(ctx context.Context, g *group, before int64) error {
	w.mu.Lock()
	jseq := w.jseq
	w.mu.Unlock()
	cls, obj := w.lockIDs()
	batch := &pgx.Batch{}
	batch.Queue(w.b.sql.fenceCommit, w.b.stack, w.epoch, g.serial, g.jseq, g.lineage, g.meta, before, cls, obj, w.pid)
	if len(g.seqs) > 0 {
		batch.Queue(w.b.sql.insertJournal, w.b.stack, g.seqs, g.ops, g.kinds, g.lineages, g.bodies)
	}
	if len(g.puts) > 0 {
		names := make([]string, 0, len(g.puts))
		bodies := make([][]byte, 0, len(g.puts))
		for n, body := range g.puts {
			names = append(names, n)
			bodies = append(bodies, body)
		}
		batch.Queue(w.b.sql.upsertResources, w.b.stack, names, bodies)
	}
	if len(g.dels) > 0 {
		names := make([]string, 0, len(g.dels))
		for n := range g.dels {
			names = append(names, n)
		}
		batch.Queue(w.b.sql.deleteResources, w.b.stack, names)
	}
	// One round trip: the batch is one implicit transaction, committed at
	// its end unless a statement fails (the fence included).
	br := w.b.pool.SendBatch(ctx, batch)
	tag, err := br.Exec()
	fenced := false
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23502": // the fence's NULL serial
		fenced = true
	case err == nil && tag.RowsAffected() != 1:
		fenced = true
	}
	for i := 1; err == nil && i < batch.Len(); i++ {
		_, err = br.Exec()
	}
	cerr := br.Close()
	if fenced {
		return w.markLost(errors.New("the lock is no longer this writer's"))
	}
	if err == nil {
		err = cerr
	}
	if err == nil {
		w.mu.Lock()
		w.jseq = g.jseq
		w.mu.Unlock()
		return nil
	}
	if errors.As(err, &pgErr) {
		// The server refused a statement: the transaction was rolled back.
		return w.b.wrap("commit", err)
	}
	// The connection failed: the transaction may have committed with its
	// answer lost. Learn which from the stack's row, or stop writing.
	var serial, rjseq int64
	rerr := w.b.pool.QueryRow(context.WithoutCancel(ctx), w.b.sql.readSerial, w.b.stack).Scan(&serial, &rjseq)
	switch {
	case rerr == nil && rjseq == g.jseq && serial == g.serial && (rjseq != jseq || serial != before):
		w.mu.Lock()
		w.jseq = g.jseq
		w.mu.Unlock()
		return nil
	case rerr == nil && rjseq == jseq && serial == before:
		return w.b.wrap("commit", err) // not written
	}
	broken := w.b.wrap("commit", fmt.Errorf("%w; whether it was written is unknown (this writer writes nothing more: run the command again)", err))
	return &remote.UnknownError{Err: broken, Later: broken}
}

// PutRevision stores revision n's body (sealed by the remote.Writer).
func (w *writer) PutRevision(ctx context.Context, n int, sb storage.RevisionBody) error {
	data, err := storage.MarshalEnclosed(&sb)
	if err != nil {
		return fmt.Errorf("revision %d at %s: %w", n, w.b.loc, err)
	}
	return w.exec(ctx, fmt.Sprintf("store revision %d", n), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, w.b.sql.putRevision, w.b.stack, n, data)
		return err
	})
}

// DeleteRevision drops revision n's body.
func (w *writer) DeleteRevision(ctx context.Context, n int) error {
	return w.exec(ctx, fmt.Sprintf("delete revision %d", n), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, w.b.sql.deleteRevision, w.b.stack, n)
		return err
	})
}

// exec runs fn in a fenced transaction.
func (w *writer) exec(ctx context.Context, what string, fn func(pgx.Tx) error) error {
	tx, err := w.begin(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrLost) {
			return err
		}
		return w.b.wrap(what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return w.b.wrap(what, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return w.b.wrap(what, err)
	}
	w.afterWrite()
	return nil
}

// backupDoc is a backup's body: the state as state.json holds it (sealed
// values sealed), assembled from the rows as they are stored.
type backupDoc struct {
	Version       int                        `json:"version"`
	Stack         string                     `json:"stack"`
	Lineage       string                     `json:"lineage,omitempty"`
	Forgotten     []string                   `json:"forgotten,omitempty"`
	Serial        int64                      `json:"serial"`
	Resources     map[string]json.RawMessage `json:"resources"`
	Interventions []state.Intervention       `json:"interventions,omitempty"`
	Revisions     []state.Revision           `json:"revisions,omitempty"`
	Current       int                        `json:"current,omitempty"`
	Staged        int                        `json:"staged,omitempty"`
	Outputs       map[string]state.Output    `json:"outputs,omitempty"`
	Secrets       *secrets.Config            `json:"secrets,omitempty"`
}

// PutBackup copies the state as of now into a backup row, and prunes the
// oldest beyond keep (keep <= 0 prunes none).
func (w *writer) PutBackup(ctx context.Context, name string, keep int) (bool, error) {
	stored := false
	err := w.exec(ctx, "store backup "+name, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, w.b.sql.backupExists, w.b.stack, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		row, err := w.b.readStack(ctx, tx, false)
		if err != nil {
			return err
		}
		doc := backupDoc{Version: state.Version, Stack: w.b.stack, Lineage: row.lineage, Serial: row.serial, Resources: map[string]json.RawMessage{}}
		if len(row.meta) > 0 {
			// Checked as Load checks it: a backup never launders a row
			// edited by hand into a record with a good checksum.
			rec, err := storage.Disclose(row.meta, w.b.at(w.b.metaRecord()))
			if err != nil {
				return err
			}
			var m storage.Meta
			if err := json.Unmarshal(rec, &m); err != nil {
				return fmt.Errorf("%w: the stack's metadata does not parse (%v)", state.ErrCorrupt, err)
			}
			doc.Forgotten, doc.Interventions, doc.Revisions, doc.Current, doc.Staged, doc.Outputs, doc.Secrets = m.Forgotten, m.Interventions, m.Revisions, m.Current, m.Staged, m.Outputs, m.Secrets
		}
		rows, err := tx.Query(ctx, w.b.sql.readResources, w.b.stack)
		if err != nil {
			return err
		}
		for rows.Next() {
			var rn string
			var body []byte
			if err := rows.Scan(&rn, &body); err != nil {
				rows.Close()
				return err
			}
			rec, err := storage.Disclose(body, w.b.at(w.b.resourceRecord(rn)))
			if err != nil {
				rows.Close()
				return err
			}
			doc.Resources[rn] = rec
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Checked after the rows (a row edited by hand is refused even
		// when no copy is taken).
		var newest int64
		switch err := tx.QueryRow(ctx, w.b.sql.newestBackupSerial, w.b.stack).Scan(&newest); {
		case err == nil && newest == row.serial:
			return nil // nothing changed since the newest: no second copy
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		body, err := storage.MarshalEnclosed(&doc)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRow(ctx, w.b.sql.nextBackupSeq, w.b.stack).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, w.b.sql.insertBackup, w.b.stack, name, seq, w.b.now().UTC(), row.serial, row.lineage, body); err != nil {
			return err
		}
		if keep > 0 {
			if _, err := tx.Exec(ctx, w.b.sql.pruneBackups, w.b.stack, keep); err != nil {
				return err
			}
		}
		stored = true
		return nil
	})
	return stored, err
}

// DropBackup deletes the backup row named name, if there is one.
func (w *writer) DropBackup(ctx context.Context, name string) error {
	return w.exec(ctx, "drop backup "+name, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, w.b.sql.dropBackup, w.b.stack, name)
		return err
	})
}

// CopyBackup stores st, a backup read from another backend (bulwark state
// migrate), as a backup row named info.Name taken at info.Time, its values
// sealed as PutBackup's rows hold them. A backup already stored under the
// name is kept as it is. Nothing is pruned.
func (w *writer) CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error {
	body, err := w.sealedBackup(st)
	if err != nil {
		return w.b.wrap("copy backup "+info.Name, err)
	}
	taken := info.Time.UTC()
	if info.Time.IsZero() {
		taken = w.b.now().UTC()
	}
	return w.exec(ctx, "copy backup "+info.Name, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, w.b.sql.backupExists, w.b.stack, info.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		var seq int64
		if err := tx.QueryRow(ctx, w.b.sql.nextBackupSeq, w.b.stack).Scan(&seq); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, w.b.sql.insertBackup, w.b.stack, info.Name, seq, taken, st.Serial, st.Lineage, body)
		return err
	})
}

// sealedBackup is st as a backup row's body holds it: its values sealed
// under the backend's sealing now.
func (w *writer) sealedBackup(st *state.State) ([]byte, error) {
	sl := w.b.opts.Sealing
	doc := backupDoc{Version: state.Version, Stack: w.b.stack, Lineage: st.Lineage, Serial: st.Serial, Resources: make(map[string]json.RawMessage, len(st.Resources))}
	m, err := storage.SealMeta(storage.MetaOf(st), sl)
	if err != nil {
		return nil, err
	}
	doc.Forgotten, doc.Interventions, doc.Revisions, doc.Current, doc.Staged, doc.Outputs, doc.Secrets = m.Forgotten, m.Interventions, m.Revisions, m.Current, m.Staged, m.Outputs, m.Secrets
	for n, r := range st.Resources {
		sr, err := state.SealResource(r, sl)
		if err != nil {
			return nil, err
		}
		if doc.Resources[n], err = json.Marshal(sr); err != nil {
			return nil, err
		}
	}
	return storage.MarshalEnclosed(&doc)
}

// ReplaceBackup stores st, sealed under the backend's sealing now, as the
// body of backup row name (secrets rotate), in one transaction under the
// lock's fence: its name, time, serial and order are kept.
func (w *writer) ReplaceBackup(ctx context.Context, name string, st *state.State) error {
	body, err := w.sealedBackup(st)
	if err != nil {
		return w.b.wrap("replace backup "+name, err)
	}
	return w.exec(ctx, "replace backup "+name, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, w.b.sql.replaceBackup, w.b.stack, name, body)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("backup %s: %w", name, storage.ErrNotFound)
		}
		return nil
	})
}

// Checkpoint compacts the journal: the records of the newest keepOps
// operations stay whole, and each older finished one becomes one summary
// record at its first record's place, once more than twice keepOps are
// whole (so a run pays for it once in keepOps runs). Unfinished operations
// are kept whole whatever their age. The state needs no snapshot here: Load
// reads the rows.
func (w *writer) Checkpoint(ctx context.Context, keepOps int) error {
	if keepOps <= 0 && keepOps != journal.KeepNone {
		keepOps = journal.DefaultKeepOperations
	}
	type opInfo struct {
		id         string
		first      int64
		summarized bool
	}
	rows, err := w.b.pool.Query(ctx, w.b.sql.journalOps, w.b.stack)
	if err != nil {
		return w.b.wrap("checkpoint", err)
	}
	var ops []opInfo
	whole := 0
	for rows.Next() {
		var o opInfo
		if err := rows.Scan(&o.id, &o.first, &o.summarized); err != nil {
			rows.Close()
			return w.b.wrap("checkpoint", err)
		}
		if !o.summarized {
			whole++
		}
		ops = append(ops, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return w.b.wrap("checkpoint", err)
	}
	// The retention rule is the journal's (journal.Compacted, and
	// journal.Finished below), applied to what the rows say.
	left := journal.Compacted(whole, keepOps)
	if left == 0 {
		return nil
	}
	var candidates, read []string
	for i, o := range ops {
		if left == 0 {
			break
		}
		if o.summarized {
			continue
		}
		left--
		candidates = append(candidates, o.id)
		// A summarized operation right before a candidate: a run of
		// no-op summaries (journal.Collapse) may go on from its line.
		if i > 0 && ops[i-1].summarized {
			read = append(read, ops[i-1].id)
		}
	}
	read = append(read, candidates...)
	isCandidate := map[string]bool{}
	for _, c := range candidates {
		isCandidate[c] = true
	}
	return w.exec(ctx, "checkpoint", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, w.b.sql.journalOf, w.b.stack, read)
		if err != nil {
			return err
		}
		type summary struct {
			first int64
			ops   journal.Ops // its records, for journal.Ops.Summary
		}
		sums := map[string]*summary{}
		type line struct {
			rec  journal.Record
			seq  int64
			rows int
		}
		lines := map[string]*line{} // the summarized operations read
		damaged := map[string]bool{}
		for rows.Next() {
			var seq int64
			var op string
			var body []byte
			if err := rows.Scan(&seq, &op, &body); err != nil {
				rows.Close()
				return err
			}
			var r journal.Record
			if err := json.Unmarshal(body, &r); err != nil || r.Op != op {
				// A damaged record: its operation (known by the row's op
				// column, since the body could not say) is not compacted,
				// so none of its rows is deleted.
				damaged[op] = true
				continue
			}
			if !isCandidate[r.Op] {
				l := lines[r.Op]
				if l == nil {
					l = &line{rec: r, seq: seq}
					lines[r.Op] = l
				}
				l.rows++
				continue
			}
			s := sums[r.Op]
			if s == nil {
				s = &summary{first: seq}
				sums[r.Op] = s
			}
			s.ops.Add(&r, 0)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// The lines in journal order: the new summaries, the summary
		// lines read before them, and anything else (an operation kept
		// whole, one not read) between them, which no run of no-op
		// summaries crosses. A run collapses into its first line.
		type item struct {
			rec     journal.Record
			seq     int64
			ops     []string // the operations whose rows it replaces
			rewrite bool     // new, or it took others in
		}
		var items []*item
		var head *item
		for _, o := range ops {
			var it *item
			if s := sums[o.id]; s != nil && journal.Finished(s.ops.Get(o.id).Status) && !damaged[o.id] {
				// The summary every backend makes of an operation.
				it = &item{rec: s.ops.Summary(o.id), seq: s.first, ops: []string{o.id}, rewrite: true}
			} else if l := lines[o.id]; l != nil && l.rows == 1 && !damaged[o.id] && l.rec.Kind == journal.KindSummary {
				it = &item{rec: l.rec, seq: l.seq, ops: []string{o.id}}
			}
			if it == nil {
				head = nil
				continue
			}
			if head != nil && journal.Collapsible(&head.rec, &it.rec) {
				journal.Merge(&head.rec, &it.rec)
				head.ops = append(head.ops, it.ops...)
				head.rewrite = true
				continue
			}
			head = it
			items = append(items, it)
		}
		var del []string
		g := &group{}
		for _, it := range items {
			if !it.rewrite {
				continue
			}
			body, err := json.Marshal(it.rec)
			if err != nil {
				return err
			}
			del = append(del, it.ops...)
			g.seqs = append(g.seqs, it.seq)
			g.ops = append(g.ops, it.rec.Op)
			g.kinds = append(g.kinds, journal.KindSummary)
			g.lineages = append(g.lineages, it.rec.Lineage)
			g.bodies = append(g.bodies, body)
		}
		if len(del) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, w.b.sql.deleteOps, w.b.stack, del); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, w.b.sql.insertJournal, w.b.stack, g.seqs, g.ops, g.kinds, g.lineages, g.bodies)
		return err
	})
}

// Unlock deletes the holder row and closes the lock connection, which
// frees the advisory lock (remote.Writer.Release, once).
func (w *writer) Unlock(ctx context.Context) error {
	var err error
	w.stopWatch()
	<-w.watchDone
	if !w.hold.IsLost() {
		if _, xerr := w.conn.Exec(ctx, w.b.sql.dropHolder, w.b.stack); xerr != nil {
			err = w.b.wrap("release lock", xerr)
		}
		// The advisory lock is let go of here, on the server, before this
		// returns: closing the connection alone frees it only once the
		// server's session has ended, a moment later, and a command run
		// right after this one (status) would see the stack locked by
		// nobody. A failure here is no loss: the close frees it too.
		_, _ = w.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	}
	w.conn.Close(context.WithoutCancel(ctx))
	return err
}

// MarkMoved records that the stack now lives at to (`bulwark state
// migrate`): from then on Load and Lock refuse with storage.ErrMoved naming
// it. The rows stay, for reference.
func (w *writer) MarkMoved(ctx context.Context, to string) error {
	return w.exec(ctx, "mark moved", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, w.b.sql.markMoved, w.b.stack, to)
		return err
	})
}
