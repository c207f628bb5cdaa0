package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// A database at schema version 2 (locks without a user) is migrated by
// Open: the lock row a dead holder left is still read (no user), and a
// holder taking the lock now is named with its user, to every other
// process and in the lock-held error.
func TestSchemaMigratesLocksToUser(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	conn := rawConn(t, url)
	s := pgx.Identifier{schemaOf(t, url)}.Sanitize()
	for _, q := range []string{
		`CREATE SCHEMA ` + s,
		`CREATE TABLE ` + s + `.schema_version (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`,
		strings.ReplaceAll(pgstore.MigrationTo1, "{{s}}", s),
		strings.ReplaceAll(pgstore.MigrationTo2, "{{s}}", s),
		`INSERT INTO ` + s + `.schema_version (version) VALUES (1), (2)`,
		`INSERT INTO ` + s + `.stacks (stack) VALUES ('web')`,
		`INSERT INTO ` + s + `.locks (stack, op, pid, host, since, backend_pid) VALUES ('web', 'op_old', 4242, 'oldhost', now(), 0)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	b := open(t, url, "web", state.Sealing{})
	if b.FoundVersion() != 2 {
		t.Fatalf("Open found schema version %d, want 2", b.FoundVersion())
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM `+s+`.schema_version`).Scan(&v); err != nil || v != pgstore.SchemaVersion || v < 3 {
		t.Fatalf("schema version after Open: %d %v, want %d", v, err, pgstore.SchemaVersion)
	}
	live, stale, err := b.Inspect(ctx)
	if err != nil || live != nil || stale == nil || stale.Op != "op_old" || stale.PID != 4242 || stale.User != "" {
		t.Fatalf("Inspect of the row written before users: live %+v stale %+v %v", live, stale, err)
	}
	w, err := b.Lock(ctx, storage.Holder{Op: "op_new", User: "ci-bot"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	other := open(t, url, "web", state.Sealing{})
	if h, err := other.Holder(ctx); err != nil || h == nil || h.Op != "op_new" || h.User != "ci-bot" {
		t.Fatalf("Holder seen by another process: %+v %v, want op_new by ci-bot", h, err)
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = other.Lock(lctx, storage.Holder{Op: "op_third"})
	var le *storage.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "ci-bot") {
		t.Fatalf("a second Lock: %v, want a LockedError naming ci-bot", err)
	}
}
