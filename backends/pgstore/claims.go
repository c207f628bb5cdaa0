package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/bulwark-iac/bulwark/core/storage"
)

// claimsLock is the claims lock of a database schema (storage.ClaimsLock):
// a session-level advisory lock on a connection of its own, under a key no
// stack's lock can have (claimsKey). The server decides who holds it: no
// row is read to decide it, so nothing written to the tables can forge or
// free it, and a holder whose session ends (a kill, a cut connection) loses
// it at once.
type claimsLock struct {
	mu   sync.Mutex
	conn *pgx.Conn
	key  int64
	loc  string
	pw   string
}

// claimsKey is the advisory lock key of the schema's claims lock: lockKey
// of storage.ClaimsName, a name no stack has (a stack's starts with a
// letter), so it is no stack's key. It must never change between bulwark
// versions.
func claimsKey(schema string) int64 { return lockKey(schema, storage.ClaimsName) }

// ClaimsLock tries once to take the claims lock of the schema rawURL names:
// held by another session, a *storage.LockedError (the caller waits and
// tries again). The lock lives as long as its connection; Release ends
// both.
func ClaimsLock(ctx context.Context, rawURL string, _ storage.Holder) (storage.ClaimsLock, error) {
	connURL, schema, loc, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		return nil, mask(fmt.Errorf("postgres %s: %w", loc, err), urlPassword(rawURL))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.RuntimeParams["application_name"] = "bulwark claims"
	// As the stack's lock connection: the server finds a vanished client.
	cfg.RuntimeParams["tcp_keepalives_idle"] = "10"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "5"
	cfg.RuntimeParams["tcp_keepalives_count"] = "4"
	wrap := func(what string, err error) error {
		return mask(fmt.Errorf("postgres %s: %s: %w", loc, what, err), cfg.Password)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, wrap("claims lock", err)
	}
	key := claimsKey(schema)
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, wrap("claims lock", err)
	}
	if !got {
		conn.Close(context.WithoutCancel(ctx))
		return nil, &storage.LockedError{Location: loc + " (claims lock)"}
	}
	return &claimsLock{conn: conn, key: key, loc: loc, pw: cfg.Password}, nil
}

// Held asks the server whether this session still holds the lock.
func (c *claimsLock) Held(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return fmt.Errorf("postgres %s: claims lock: %w: released", c.loc, storage.ErrLost)
	}
	classid, objid := lockIDs(c.key)
	var held bool
	err := c.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND pid = pg_backend_pid() AND classid = $1 AND objid = $2 AND objsubid = 1)`, classid, objid).Scan(&held)
	switch {
	case err != nil:
		return mask(fmt.Errorf("postgres %s: claims lock: %w: %w", c.loc, storage.ErrLost, err), c.pw)
	case !held:
		return fmt.Errorf("postgres %s: claims lock: %w: this session no longer holds it", c.loc, storage.ErrLost)
	}
	return nil
}

// Release unlocks and ends the lock's session (its end alone would free
// it).
func (c *claimsLock) Release(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	conn := c.conn
	c.conn = nil
	_, uerr := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, c.key)
	cerr := conn.Close(ctx)
	if err := errors.Join(uerr, cerr); err != nil {
		return mask(fmt.Errorf("postgres %s: release the claims lock: %w", c.loc, err), c.pw)
	}
	return nil
}
