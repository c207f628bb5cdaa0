package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaVersion is the version of the tables this package reads and writes.
// Open migrates a database at an older version up to it, and refuses one at
// a newer version (a newer bulwark wrote it: upgrade this one).
const SchemaVersion = 3

// migrations[i] takes the schema from version i to version i+1. Each runs in
// the one transaction that also records the new version, so a migration is
// all done or not at all. {{s}} is the quoted schema name. A migration, once
// released, is never edited: a change is a new migration.
var migrations = []string{
	// 0 -> 1: the first tables.
	`
CREATE TABLE {{s}}.stacks (
	stack       text PRIMARY KEY,
	lineage     text NOT NULL DEFAULT '',
	serial      bigint NOT NULL DEFAULT 0,
	journal_seq bigint NOT NULL DEFAULT 0,
	lock_epoch  bigint NOT NULL DEFAULT 0,
	meta        bytea,
	moved_to    text,
	updated     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE {{s}}.resources (
	stack text NOT NULL REFERENCES {{s}}.stacks ON DELETE CASCADE,
	name  text NOT NULL,
	body  bytea NOT NULL,
	PRIMARY KEY (stack, name)
);
CREATE TABLE {{s}}.journal (
	stack   text NOT NULL REFERENCES {{s}}.stacks ON DELETE CASCADE,
	seq     bigint NOT NULL,
	op      text NOT NULL,
	kind    text NOT NULL,
	lineage text NOT NULL DEFAULT '',
	body    bytea NOT NULL,
	PRIMARY KEY (stack, seq)
);
CREATE INDEX journal_op ON {{s}}.journal (stack, op);
CREATE TABLE {{s}}.revisions (
	stack text NOT NULL REFERENCES {{s}}.stacks ON DELETE CASCADE,
	n     integer NOT NULL,
	body  bytea NOT NULL,
	PRIMARY KEY (stack, n)
);
CREATE TABLE {{s}}.backups (
	stack   text NOT NULL REFERENCES {{s}}.stacks ON DELETE CASCADE,
	name    text NOT NULL,
	seq     bigint NOT NULL,
	taken   timestamptz NOT NULL,
	serial  bigint NOT NULL,
	lineage text NOT NULL DEFAULT '',
	body    bytea NOT NULL,
	PRIMARY KEY (stack, name)
);
CREATE TABLE {{s}}.locks (
	stack       text PRIMARY KEY REFERENCES {{s}}.stacks ON DELETE CASCADE,
	op          text NOT NULL,
	pid         integer NOT NULL,
	host        text NOT NULL,
	since       timestamptz NOT NULL,
	backend_pid integer NOT NULL
);
`,
	// 1 -> 2: every body the state is read from carries its checksum
	// (storage.Enclose: {"checksum":"sha256:…","record":BODY}), checked
	// on every read, so a row edited by hand is refused. The bodies
	// written before are taken as they are (they were trusted until now):
	// each is wrapped, its checksum computed by the server over its bytes
	// (json.Marshal's, compact, as storage.Checksum sums them), untouched.
	`
UPDATE {{s}}.resources SET body = ` + enclose("body") + `;
UPDATE {{s}}.revisions SET body = ` + enclose("body") + `;
UPDATE {{s}}.backups SET body = ` + enclose("body") + `;
UPDATE {{s}}.stacks SET meta = ` + enclose("meta") + ` WHERE meta IS NOT NULL;
`,
	// 2 -> 3: a lock's holder names its user (who holds the stack); a
	// row written before has none ('').
	`
ALTER TABLE {{s}}.locks ADD COLUMN "user" text NOT NULL DEFAULT '';
`,
}

// enclose is storage.Enclose in SQL, of a bytea column holding compact
// JSON: the bytes are not converted, only wrapped.
func enclose(col string) string {
	return `convert_to('{"checksum":"sha256:' || encode(sha256(` + col + `), 'hex') || '","record":', 'UTF8') || ` + col + ` || convert_to('}', 'UTF8')`
}

// migrateLockKey serializes migrations (and the first CREATE SCHEMA) among
// bulwarks opening one database at once: a transaction-level advisory lock,
// released at commit. It is a key of its own, never a stack's (those are
// session-level locks, hashed from the stack's name: see lockKey).
const migrateLockKey int64 = 0x62756c7761726b00 // "bulwark\0"

// ensureSchema creates the schema and its tables when missing and migrates
// them to SchemaVersion, and returns the version found before.
func ensureSchema(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	q := pgx.Identifier{schema}.Sanitize()
	// Most opens find the schema current: one read, no lock.
	if v, err := readVersion(ctx, pool, q); err == nil && v == SchemaVersion {
		return v, nil
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
		return 0, fmt.Errorf("create schema %s: %w", schema, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q+`.schema_version (
	version integer PRIMARY KEY,
	applied timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return 0, fmt.Errorf("create %s.schema_version: %w", schema, err)
	}
	var found int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+q+`.schema_version`).Scan(&found); err != nil {
		return 0, err
	}
	if found > SchemaVersion {
		return found, &SchemaError{Schema: schema, Found: found}
	}
	for v := found; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[v], "{{s}}", q)); err != nil {
			return found, fmt.Errorf("migrate schema %s from version %d to %d: %w", schema, v, v+1, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+`.schema_version (version) VALUES ($1)`, v+1); err != nil {
			return found, err
		}
	}
	return found, tx.Commit(ctx)
}

func readVersion(ctx context.Context, pool *pgxpool.Pool, q string) (int, error) {
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+q+`.schema_version`).Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined table, schema
		return 0, nil
	}
	return v, err
}

// SchemaError refuses a database whose tables a newer bulwark wrote.
type SchemaError struct {
	Schema string
	Found  int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("schema %s is at version %d, newer than this bulwark's %d: a newer bulwark migrated it; upgrade bulwark (it never downgrades a schema)",
		e.Schema, e.Found, SchemaVersion)
}
