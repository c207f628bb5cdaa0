package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// TestPostgresScripts runs the scripts of testdata/postgres (what is
// PostgreSQL's own: a connection cut, state migrate to and from it) with the
// real binary against a PostgreSQL server ($BULWARK_TEST_POSTGRES_URL, or
// one started for these tests): each script gets $POSTGRES, the server's URL
// with a schema of its own; the scripts say where they use it.
func TestPostgresScripts(t *testing.T) {
	runScripts(t, "testdata/postgres", postgresScripts(pgBase(t), false))
}

var (
	pgOnce sync.Once
	pgSrv  *pgtest.Server
	pgErr  error
)

// pgBase is pgtest.Base, with one throwaway server (when
// $BULWARK_TEST_POSTGRES_URL is unset) for every test of the package,
// stopped when they end (cleanupM).
func pgBase(t *testing.T) string {
	t.Helper()
	if u := os.Getenv(pgtest.EnvURL); u != "" {
		return u
	}
	pgOnce.Do(func() { pgSrv, pgErr = pgtest.Start() })
	if pgErr != nil {
		return pgtest.Base(t) // skips, or fails when CI=true, saying why
	}
	return pgSrv.URL
}

// pgAvailable reports whether a PostgreSQL server is there for a script
// outside testdata/postgres (the condition [postgres]): $BULWARK_TEST_POSTGRES_URL,
// else one started now, once. In CI (CI=true) none is an error, as for
// testdata/postgres, so a CI that lost its database cannot pass by skipping.
func pgAvailable() (bool, error) {
	if os.Getenv(pgtest.EnvURL) != "" {
		return true, nil
	}
	pgOnce.Do(func() { pgSrv, pgErr = pgtest.Start() })
	if pgErr != nil && os.Getenv("CI") == "true" {
		return false, fmt.Errorf("no PostgreSQL server for the scripts: %w", pgErr)
	}
	return pgErr == nil, nil
}

// pg-schema sets $POSTGRES to a URL of the [postgres] server with a schema
// of the script's own, dropped when it ends.
func cmdPgSchema(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: pg-schema")
	}
	ok, err := pgAvailable()
	ts.Check(err)
	if !ok {
		ts.Fatalf("pg-schema: no PostgreSQL server (guard the script with [!postgres] skip)")
	}
	base := os.Getenv(pgtest.EnvURL)
	if base == "" {
		base = pgSrv.URL
	}
	schema := pgtest.Schema()
	u, err := pgtest.WithSchema(base, schema)
	ts.Check(err)
	ts.Defer(func() { _ = pgtest.DropSchema(base, schema) })
	ts.Setenv("POSTGRES", u)
}

func stopPostgres() {
	if pgSrv != nil {
		pgSrv.Stop()
	}
}

// pg-hold-lock URL STACK OP takes STACK's lock at URL as operation OP (this
// test process holds it, on host testhost) until the script ends.
func cmdPgHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: pg-hold-lock URL STACK OP")
	}
	ctx := context.Background()
	b, err := pgstore.Open(ctx, args[0], storage.Options{Stack: args[1]})
	ts.Check(err)
	w, err := b.Lock(ctx, storage.Holder{Op: args[2], PID: os.Getpid(), Host: "testhost", Since: time.Now()})
	ts.Check(err)
	ts.Defer(func() {
		w.Release(ctx)
		b.Close()
	})
}

// pg-wait-lock URL STACK polls, with a deadline, until a live process holds
// STACK's lock at URL.
func cmdPgWaitLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pg-wait-lock URL STACK")
	}
	ctx := context.Background()
	b, err := pgstore.Open(ctx, args[0], storage.Options{Stack: args[1]})
	ts.Check(err)
	defer b.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, err := b.Holder(ctx)
		if err == nil && h != nil && h.PID != 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nobody took the lock of %s within 20s", args[1])
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// pg-exec URL SQL runs SQL on the server of URL, {{s}} standing for its
// bulwark schema (to damage what bulwark stored, as a person or a bug
// could).
func cmdPgExec(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pg-exec URL SQL")
	}
	ts.Check(pgtest.Exec(args[0], args[1]))
}

// pg-cut-lock URL STACK ends, on the server, the session that holds STACK's
// lock at URL (a connection cut), and waits until it has ended.
func cmdPgCutLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pg-cut-lock URL STACK")
	}
	ctx := context.Background()
	b, err := pgstore.Open(ctx, args[0], storage.Options{Stack: args[1]})
	ts.Check(err)
	defer b.Close()
	ended, err := b.TerminateHolder(ctx)
	ts.Check(err)
	if !ended {
		ts.Fatalf("nobody holds the lock of %s", args[1])
	}
}

// wait-match FILE REGEXP polls, with a deadline, until FILE has a line that
// matches REGEXP.
func cmdWaitMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: wait-match FILE REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s has no line matching %s within 20s", args[0], args[1])
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
	}
}
