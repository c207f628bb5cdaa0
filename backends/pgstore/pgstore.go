package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
)

// DefaultConnectTimeout bounds a connection attempt when the URL and the
// environment set none.
const DefaultConnectTimeout = 15 * time.Second

// DefaultSchema is the PostgreSQL schema the tables live in when the URL
// names none (?schema=NAME).
const DefaultSchema = "bulwark"

// Backend is one stack's home in a PostgreSQL database: the shared
// remote.Backend over this package's client (its reads and its lock). It
// is safe for concurrent use.
type Backend struct {
	*remote.Backend
	c *client
}

// client is what is PostgreSQL's: the rows read in the shape they are
// stored (remote.Source), and the advisory lock whose writer is a
// remote.Client.
type client struct {
	pool     *pgxpool.Pool
	shared   bool            // pool is a Pools' own: Close leaves it open
	conn     *pgx.ConnConfig // what the lock connection dials
	schema   string
	stack    string
	loc      string
	password string // masked out of every error
	opts     storage.Options
	now      func() time.Time
	key      int64 // the stack's advisory lock key
	found    int   // the schema version Open found (0: created it)
	sql      queries
}

var (
	_ storage.Backend = (*Backend)(nil)
	_ remote.Source   = (*client)(nil)
)

// Open connects to the database rawURL names (postgres:// or postgresql://)
// and creates or migrates bulwark's tables in it. Nothing about the stack
// is read or written yet: Load, Lock and the rest do.
func Open(ctx context.Context, rawURL string, opts storage.Options) (*Backend, error) {
	return open(ctx, rawURL, opts, nil)
}

// open is Open, its connection pool pools' for rawURL's database when
// pools is not nil (left open by the Backend's Close), else its own.
func open(ctx context.Context, rawURL string, opts storage.Options, pools *Pools) (*Backend, error) {
	if opts.Stack == "" {
		return nil, errors.New("postgres backend: no stack name")
	}
	connURL, schema, loc, cfg, err := poolConfig(rawURL)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	b := &client{
		conn:     cfg.ConnConfig.Copy(),
		schema:   schema,
		stack:    opts.Stack,
		loc:      loc,
		password: cfg.ConnConfig.Password,
		opts:     opts,
		now:      now,
		key:      lockKey(schema, opts.Stack),
		sql:      newQueries(pgx.Identifier{schema}.Sanitize()),
	}
	if pools != nil {
		pool, err := pools.pool(ctx, connURL, cfg)
		if err != nil {
			return nil, b.wrap("connect", err)
		}
		b.pool, b.shared = pool, true
	} else {
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, b.wrap("connect", err)
		}
		b.pool = pool
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, b.wrap("connect", err)
		}
	}
	if b.found, err = ensureSchema(ctx, b.pool, schema); err != nil {
		b.Close()
		return nil, b.wrap("schema", err)
	}
	return &Backend{Backend: remote.NewBackend(b, opts), c: b}, nil
}

// poolConfig is the pool configuration rawURL asks for, with bulwark's
// defaults (the application name, a connect timeout), and what parseURL
// returns.
func poolConfig(rawURL string) (connURL, schema, loc string, cfg *pgxpool.Config, err error) {
	connURL, schema, loc, err = parseURL(rawURL)
	if err != nil {
		return "", "", "", nil, err
	}
	cfg, err = pgxpool.ParseConfig(connURL)
	if err != nil {
		return "", "", "", nil, mask(fmt.Errorf("postgres %s: %w", loc, err), urlPassword(rawURL))
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "bulwark"
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A server that does not answer is an error in seconds, not after
		// the system's TCP timeout (?connect_timeout=N or
		// $PGCONNECT_TIMEOUT sets another).
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	return connURL, schema, loc, cfg, nil
}

// Pools shares one connection pool per database among the backends it
// opens, for a process that opens many, one after another and at once:
// bulwark ui reads each stack a page shows through a backend opened for
// it, and a new pool is a new server session each time (a page of ten
// stacks: eleven sessions, about 30 ms of the server's work each). A
// Backend Pools opened leaves the pool open when it is closed; Close
// closes them all. What a Backend reads is read from the server on every
// call, as with its own pool, and each open checks the schema as Open
// does; a Writer's lock has a connection of its own either way. Sharing
// cannot deadlock: a Backend holds one pooled connection at a time (a
// read's transaction, a commit's batch, a query's rows) and never asks for
// another while it holds one, so backends on a full pool wait for each
// other's release, never for each other. Safe for concurrent use.
type Pools struct {
	mu     sync.Mutex
	pools  map[string]*pgxpool.Pool // by connection URL (the schema is per query)
	closed bool
}

// NewPools returns an empty Pools.
func NewPools() *Pools { return &Pools{pools: map[string]*pgxpool.Pool{}} }

// Open is pgstore.Open through p's pool for rawURL's database.
func (p *Pools) Open(ctx context.Context, rawURL string, opts storage.Options) (*Backend, error) {
	return open(ctx, rawURL, opts, p)
}

// pool is p's pool for connURL, made (and pinged) on first use with cfg.
func (p *Pools) pool(ctx context.Context, connURL string, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("the connection pools are closed")
	}
	if pool, ok := p.pools[connURL]; ok {
		return pool, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	p.pools[connURL] = pool
	return pool, nil
}

// Stacks is pgstore.Stacks through p's pool for rawURL's database.
func (p *Pools) Stacks(ctx context.Context, rawURL string) ([]string, error) {
	connURL, schema, loc, cfg, err := poolConfig(rawURL)
	if err != nil {
		return nil, err
	}
	pool, err := p.pool(ctx, connURL, cfg)
	if err != nil {
		return nil, mask(fmt.Errorf("postgres %s: connect: %w", loc, err), cfg.ConnConfig.Password)
	}
	return listStacks(ctx, pool, schema, loc, cfg.ConnConfig.Password)
}

// Close closes every pool; a Backend still open on one fails from then on.
func (p *Pools) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pool := range p.pools {
		pool.Close()
	}
	clear(p.pools)
	p.closed = true
}

// parseURL splits bulwark's own parameters (schema) off a postgres URL and
// returns what pgx parses, the schema, and the URL without credentials for
// messages.
func parseURL(raw string) (connURL, schema, loc string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL: never show it.
		return "", "", "", errors.New("postgres backend: the URL does not parse (want postgres://USER@HOST:PORT/DB?sslmode=…)")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", "", "", fmt.Errorf("postgres backend: URL scheme %q, want postgres://", u.Scheme)
	}
	q := u.Query()
	schema = DefaultSchema
	if s := q.Get("schema"); s != "" {
		schema = s
	}
	q.Del("schema")
	u.RawQuery = q.Encode()
	connURL = u.String()

	// The location keeps what says where (user, host, port, database, the
	// TLS mode, the schema) and drops what is secret.
	l := *u
	if l.User != nil {
		l.User = url.User(l.User.Username())
	}
	lq := l.Query()
	for k := range lq {
		if strings.Contains(strings.ToLower(k), "password") {
			lq.Del(k)
		}
	}
	if schema != DefaultSchema {
		lq.Set("schema", schema)
	}
	l.RawQuery = lq.Encode()
	return connURL, schema, l.String(), nil
}

func urlPassword(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		p, _ := u.User.Password()
		return p
	}
	return ""
}

// lockKey is the stack's advisory lock key: FNV-1a of the schema and the
// stack's name. It must never change between bulwark versions (two versions
// would not exclude each other).
func lockKey(schema, stack string) int64 {
	h := fnv.New64a()
	h.Write([]byte("bulwark\x00" + schema + "\x00" + stack))
	return int64(h.Sum64())
}

// lockIDs are how pg_locks shows a bigint advisory key: its high and low 32
// bits, as classid and objid (objsubid 1).
func lockIDs(key int64) (classid, objid int64) {
	return int64(uint32(uint64(key) >> 32)), int64(uint32(key))
}

// Location is the URL without its password.
func (b *client) Location() string { return b.loc }

// Stack is the name of the stack this backend holds.
func (b *Backend) Stack() string { return b.c.stack }

// Schema is the PostgreSQL schema holding the tables; FoundVersion the
// schema version Open found (0 when it created the tables).
func (b *Backend) Schema() string    { return b.c.schema }
func (b *Backend) FoundVersion() int { return b.c.found }

// Inspect is Holder that also reports the holder row a dead holder left
// (its session ended: the server let the advisory lock go), which the next
// Lock takes over: what doctor says of the lock.
func (b *Backend) Inspect(ctx context.Context) (live, stale *storage.Holder, err error) {
	return b.c.inspect(ctx)
}

// TerminateHolder ends, on the server, the session that holds the stack's
// lock (pg_terminate_backend, waiting up to 10 s for it to end), as a cut
// connection would: the holder's next write fails with storage.ErrLost, and
// the lock is free. It reports false when nobody held it. It needs the
// right to signal that session (the same role, or pg_signal_backend): for
// tests, and for an operator who knows the holder's machine is gone.
func (b *Backend) TerminateHolder(ctx context.Context) (bool, error) {
	return b.c.terminateHolder(ctx)
}

// Wrap names the backend in err (remote.Source).
func (b *client) Wrap(what string, err error) error { return b.wrap(what, err) }

// Close closes the connection pool, unless it is a Pools' (shared). A
// Writer's lock connection is its own: Release closes it.
func (b *client) Close() error {
	if !b.shared {
		b.pool.Close()
	}
	return nil
}

// wrap names the backend in err and masks the password out of its text.
func (b *client) wrap(what string, err error) error {
	return mask(fmt.Errorf("postgres %s: %s: %w", b.loc, what, err), b.password)
}

// maskedError is an error whose text has a password replaced; errors.Is and
// errors.As still see the error it wraps.
type maskedError struct {
	err      error
	password string
}

func (e *maskedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.password, "xxxxx") }
func (e *maskedError) Unwrap() error { return e.err }

func mask(err error, password string) error {
	if err == nil || password == "" {
		return err
	}
	return &maskedError{err: err, password: password}
}

// stackRow is the stacks table's row of the stack.
type stackRow struct {
	exists  bool
	lineage string
	serial  int64
	jseq    int64
	epoch   int64
	meta    []byte
	movedTo *string
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (b *client) readStack(ctx context.Context, q querier, forUpdate bool) (stackRow, error) {
	sql := b.sql.readStack
	if forUpdate {
		sql += " FOR UPDATE"
	}
	var r stackRow
	err := q.QueryRow(ctx, sql, b.stack).Scan(&r.lineage, &r.serial, &r.jseq, &r.epoch, &r.meta, &r.movedTo)
	if errors.Is(err, pgx.ErrNoRows) {
		return stackRow{}, nil
	}
	r.exists = err == nil
	return r, err
}

// movedError refuses a stack that `state migrate` fenced or moved
// elsewhere (nil: none, or the migration itself: storage.CheckMoved).
func (b *client) movedError(to *string) error {
	if to == nil {
		return nil
	}
	return storage.CheckMoved(b.opts, b.loc, *to, "the moved_to column of "+b.where("stacks")+" (the rows stay, read-only, for reference)")
}

// State returns the stack's state as its rows hold it (sealed), read in one
// repeatable-read transaction (a Commit is wholly in it or not at all):
// each row's checksum checked, and the stacks row's lineage against the
// journal's newest.
func (b *client) State(ctx context.Context) (*state.State, string, error) {
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, "", b.wrap("load state", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	row, err := b.readStack(ctx, tx, false)
	if err != nil {
		return nil, "", b.wrap("load state", err)
	}
	if err := b.movedError(row.movedTo); err != nil {
		return nil, "", err
	}
	st := &state.State{Version: state.Version, Stack: b.stack, Lineage: row.lineage, Serial: row.serial, Resources: map[string]*state.Resource{}}
	if row.lineage != "" {
		// A state copied in from another stack's history is refused: the
		// journal's newest record names the lineage it was written under.
		last, err := b.lastLineage(ctx, tx)
		if err != nil {
			return nil, "", b.wrap("load state", err)
		}
		if last != "" && last != row.lineage {
			return nil, "", &storage.LineageError{What: "state", Location: b.where("stacks"), Want: last, Found: row.lineage}
		}
	}
	if len(row.meta) > 0 {
		rec, err := storage.Disclose(row.meta, b.at(b.metaRecord()))
		if err != nil {
			return nil, "", err
		}
		var m storage.Meta
		if err := json.Unmarshal(rec, &m); err != nil {
			return nil, "", b.corrupt("the stack's metadata", err)
		}
		st.Forgotten, st.Interventions, st.Revisions, st.Current, st.Staged, st.Outputs, st.Secrets = m.Forgotten, m.Interventions, m.Revisions, m.Current, m.Staged, m.Outputs, m.Secrets
	}
	rows, err := tx.Query(ctx, b.sql.readResources, b.stack)
	if err != nil {
		return nil, "", b.wrap("load state", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var body []byte
		if err := rows.Scan(&name, &body); err != nil {
			return nil, "", b.wrap("load state", err)
		}
		rec, err := storage.Disclose(body, b.at(b.resourceRecord(name)))
		if err != nil {
			return nil, "", err
		}
		var r state.Resource
		if err := json.Unmarshal(rec, &r); err != nil {
			return nil, "", b.corrupt(fmt.Sprintf("resource %q", name), err)
		}
		if r.Name != name {
			return nil, "", b.corrupt(fmt.Sprintf("resource %q", name), fmt.Errorf("its row holds resource %q", r.Name))
		}
		st.Resources[name] = &r
	}
	if err := rows.Err(); err != nil {
		return nil, "", b.wrap("load state", err)
	}
	return st, b.where("resources"), nil
}

// at names a stored record of the stack for an integrity error.
func (b *client) at(record string) storage.Where {
	return storage.Where{Backend: b.loc, Stack: b.stack, Record: record}
}

// The records the state is read from, named for messages: what, and the
// row that holds it (so a person with psql finds it).
func (b *client) resourceRecord(name string) string {
	return fmt.Sprintf("resource %q (table %s.resources, row stack = %s AND name = %s)", name, b.schema, sqlText(b.stack), sqlText(name))
}

func (b *client) metaRecord() string {
	return fmt.Sprintf("the stack's metadata (table %s.stacks, column meta, row stack = %s)", b.schema, sqlText(b.stack))
}

// sqlText is s as an SQL string literal.
func sqlText(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// where names a table of the stack for messages.
func (b *client) where(table string) string {
	return fmt.Sprintf("%s (table %s.%s, stack %s)", b.loc, b.schema, table, b.stack)
}

// lastLineage is the lineage of the journal's newest record that has one.
func (b *client) lastLineage(ctx context.Context, q querier) (string, error) {
	var last string
	err := q.QueryRow(ctx, b.sql.lastLineage, b.stack).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return last, err
}

func (b *client) corrupt(what string, err error) error {
	return fmt.Errorf("load state %s: %w: %s does not parse (%v)", b.loc, state.ErrCorrupt, what, err)
}

// Journal returns the stack's records in order. A record that does not parse
// is reported with its seq as its line; a record of another lineage than the
// stack's is refused (ErrLineage).
func (b *client) Journal(ctx context.Context) ([]journal.Record, []*journal.CorruptError, error) {
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, b.wrap("read journal", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	row, err := b.readStack(ctx, tx, false)
	if err != nil {
		return nil, nil, b.wrap("read journal", err)
	}
	rows, err := tx.Query(ctx, b.sql.readJournal, b.stack)
	if err != nil {
		return nil, nil, b.wrap("read journal", err)
	}
	defer rows.Close()
	var recs []journal.Record
	var bad []*journal.CorruptError
	lineage := row.lineage
	where := fmt.Sprintf("%s (table %s.journal, stack %s) seq", b.loc, b.schema, b.stack)
	// A damaged row is repaired in the database, never by editing a file.
	table := pgx.Identifier{b.schema, "journal"}.Sanitize()
	stackLit := "'" + strings.ReplaceAll(b.stack, "'", "''") + "'"
	fix := func(seq int64) string {
		return fmt.Sprintf("keep a copy of the row (`SELECT seq, convert_from(body, 'UTF8') FROM %s WHERE stack = %s AND seq = %d;` in psql), then delete it (`DELETE FROM %s WHERE stack = %s AND seq = %d;`)",
			table, stackLit, seq, table, stackLit, seq)
	}
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return nil, nil, b.wrap("read journal", err)
		}
		var r journal.Record
		if err := json.Unmarshal(body, &r); err != nil {
			bad = append(bad, &journal.CorruptError{Path: where, Line: int(seq), Err: err, Fix: fix(seq)})
			continue
		}
		if r.ID == "" || r.Op == "" || r.Kind == "" {
			bad = append(bad, &journal.CorruptError{Path: where, Line: int(seq), Err: errors.New("no id, op or kind"), Fix: fix(seq)})
			continue
		}
		if r.Lineage != "" {
			if lineage == "" {
				lineage = r.Lineage
			} else if r.Lineage != lineage {
				return nil, nil, &storage.LineageError{What: "journal", Location: fmt.Sprintf("%s seq %d", b.where("journal"), seq), Want: lineage, Found: r.Lineage}
			}
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, b.wrap("read journal", err)
	}
	return recs, bad, nil
}

// Revision returns revision n's body as stored (sealed).
func (b *client) Revision(ctx context.Context, n int) (*storage.RevisionBody, error) {
	var body []byte
	err := b.pool.QueryRow(ctx, b.sql.readRevision, b.stack, n).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("revision %d of stack %s at %s: %w", n, b.stack, b.loc, storage.ErrNotFound)
	}
	if err != nil {
		return nil, b.wrap(fmt.Sprintf("read revision %d", n), err)
	}
	rec, err := storage.Disclose(body, b.at(fmt.Sprintf("revision %d (table %s.revisions, row stack = %s AND n = %d)", n, b.schema, sqlText(b.stack), n)))
	if err != nil {
		return nil, err
	}
	var rb storage.RevisionBody
	if err := json.Unmarshal(rec, &rb); err != nil {
		return nil, fmt.Errorf("revision %d of stack %s at %s: %w: %v", n, b.stack, b.loc, state.ErrCorrupt, err)
	}
	return &rb, nil
}

// Backups lists the stored backups, oldest first.
func (b *client) Backups(ctx context.Context) ([]storage.BackupInfo, error) {
	rows, err := b.pool.Query(ctx, b.sql.listBackups, b.stack)
	if err != nil {
		return nil, b.wrap("list backups", err)
	}
	defer rows.Close()
	var out []storage.BackupInfo
	for rows.Next() {
		var bi storage.BackupInfo
		if err := rows.Scan(&bi.Name, &bi.Time, &bi.Serial, &bi.Bytes); err != nil {
			return nil, b.wrap("list backups", err)
		}
		bi.Time = bi.Time.UTC()
		out = append(out, bi)
	}
	if err := rows.Err(); err != nil {
		return nil, b.wrap("list backups", err)
	}
	return out, nil
}

// Backup reads one backup as stored (its row's checksum checked), with
// the stack's lineage now.
func (b *client) Backup(ctx context.Context, name string) (*remote.StoredBackup, error) {
	var body []byte
	var lineage string
	err := b.pool.QueryRow(ctx, b.sql.readBackup, b.stack, name).Scan(&body, &lineage)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("backup %s of stack %s at %s: %w", name, b.stack, b.loc, storage.ErrNotFound)
	}
	if err != nil {
		return nil, b.wrap("read backup "+name, err)
	}
	at := b.at(fmt.Sprintf("backup %s (table %s.backups, row stack = %s AND name = %s)", name, b.schema, sqlText(b.stack), sqlText(name)))
	at.Restore = "another of the backups that backend keeps for this stack (bulwark doctor lists them)"
	rec, err := storage.Disclose(body, at)
	if err != nil {
		return nil, err
	}
	var st state.State
	if err := json.Unmarshal(rec, &st); err != nil {
		return nil, fmt.Errorf("backup %s of stack %s at %s: %w: %v", name, b.stack, b.loc, state.ErrCorrupt, err)
	}
	row, err := b.readStack(ctx, b.pool, false)
	if err != nil {
		return nil, b.wrap("read backup "+name, err)
	}
	return &remote.StoredBackup{State: &st, Where: b.where("backups") + " " + name, Lineage: row.lineage}, nil
}

// Stats are the stack's sizes and counts.
func (b *client) Stats(ctx context.Context) (storage.Stats, error) {
	var s storage.Stats
	s.SchemaVersion = SchemaVersion
	err := b.pool.QueryRow(ctx, b.sql.stats, b.stack).Scan(&s.StateBytes, &s.Resources, &s.JournalBytes, &s.JournalRecords,
		&s.RevisionBytes, &s.Revisions, &s.BackupBytes, &s.Backups, &s.WholeOps, &s.SummarizedOps)
	if err != nil {
		return s, b.wrap("stats", err)
	}
	return s, nil
}

// Holder reports who holds the stack's lock now: nil when nobody does, a
// Holder with no pid when the lock is held by a connection that left no row
// (it is taking the lock this instant, or its row was deleted by hand).
func (b *client) Holder(ctx context.Context) (*storage.Holder, error) {
	h, err := b.holder(ctx, b.pool)
	if err != nil {
		return nil, b.wrap("read lock holder", err)
	}
	return h, nil
}

func (b *client) inspect(ctx context.Context) (live, stale *storage.Holder, err error) {
	if live, err = b.Holder(ctx); err != nil || live != nil {
		return live, nil, err
	}
	var op, host, user string
	var pid int32
	var since time.Time
	switch err := b.pool.QueryRow(ctx, b.sql.oldHolder, b.stack).Scan(&op, &pid, &host, &user, &since); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil, nil
	case err != nil:
		return nil, nil, b.wrap("read lock holder", err)
	}
	// Taken between the two reads: the row is the new holder's.
	if live, err = b.Holder(ctx); err != nil || live != nil {
		return live, nil, err
	}
	return nil, &storage.Holder{Op: op, PID: int(pid), Host: host, User: user, Since: since.UTC()}, nil
}

func (b *client) holder(ctx context.Context, q querier) (*storage.Holder, error) {
	classid, objid := lockIDs(b.key)
	rows, err := q.Query(ctx, b.sql.holder, b.stack, classid, objid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var h *storage.Holder
	for rows.Next() {
		var op, host, user *string
		var pid *int32
		var since *time.Time
		if err := rows.Scan(&op, &pid, &host, &user, &since); err != nil {
			return nil, err
		}
		h = &storage.Holder{}
		if op != nil {
			h.Op, h.PID, h.Host, h.Since = *op, int(*pid), *host, since.UTC()
		}
		if user != nil {
			h.User = *user
		}
	}
	return h, rows.Err()
}

func (b *client) terminateHolder(ctx context.Context) (bool, error) {
	classid, objid := lockIDs(b.key)
	var ended bool
	err := b.pool.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(p.pid, 10000)), false) FROM pg_locks p
	WHERE p.locktype = 'advisory' AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND p.classid = $1::bigint::oid AND p.objid = $2::bigint::oid AND p.objsubid = 1 AND p.granted`, classid, objid).Scan(&ended)
	if err != nil {
		return false, b.wrap("terminate the lock's holder", err)
	}
	return ended, nil
}

// Stacks lists the stacks the database at rawURL holds (in its schema),
// sorted; a stack moved elsewhere is left out. For commands that look
// through every stack (ack, doctor without a spec).
func Stacks(ctx context.Context, rawURL string) ([]string, error) {
	connURL, schema, loc, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		return nil, mask(fmt.Errorf("postgres %s: %w", loc, err), urlPassword(rawURL))
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, mask(fmt.Errorf("postgres %s: connect: %w", loc, err), cfg.Password)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return listStacks(ctx, conn, schema, loc, cfg.Password)
}

// listStacks is Stacks's query, on q (a connection or a pool).
func listStacks(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, schema, loc, password string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT stack FROM `+pgx.Identifier{schema}.Sanitize()+`.stacks WHERE moved_to IS NULL ORDER BY stack`)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
			return nil, nil // no tables yet: no stacks
		}
		return nil, mask(fmt.Errorf("postgres %s: list stacks: %w", loc, err), password)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
