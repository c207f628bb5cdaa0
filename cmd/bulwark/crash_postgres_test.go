package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// TestCrashOnPostgres: an apply on PostgreSQL killed (kill -9, from a
// failpoint) after each of its journal writes, state writes and provider
// calls in turn, is resumed from another machine (another --state-dir, the
// same backend and the same mock world), to convergence: resume ends it,
// a second resume has nothing to do, the state records exactly what the
// world holds, and an apply then changes nothing.
func TestCrashOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("kills an apply at every write boundary on PostgreSQL (-short)")
	}
	base := pgBase(t)
	for _, point := range []string{"journal", "state", "provider"} {
		t.Run(point, func(t *testing.T) {
			kills := 0
			for n := 1; ; n++ {
				if n > 200 {
					t.Fatalf("%s:%d: the failpoint never stops firing", point, n)
				}
				if !crashPostgresOnce(t, base, fmt.Sprintf("%s:%d", point, n)) {
					break
				}
				kills++
			}
			t.Logf("killed at each of %d %s boundaries, each resumed from another machine to convergence", kills, point)
		})
	}
}

// TestCrashAtEveryStepBoundaryOnPostgres is the crash harness of
// crash_test.go on PostgreSQL (every backend survives what the file backend
// survives), each iteration in a schema of its own: a failed apply's
// rollback (creates, compensations, deletes), and, from a copy of a stack
// rep1.yaml was applied to (copyPostgresStack), a replacement with its
// cleanup phase and a failed replacement's rollback, killed at every
// journal record, state write and provider mutation, and resumed to
// convergence. (A first apply's kills, resumed from another machine, are
// TestCrashOnPostgres's; the backend's own write boundaries, the
// conformance suite's.)
func TestCrashAtEveryStepBoundaryOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a failed apply's rollback at every step boundary on PostgreSQL (-short)")
	}
	base := pgBase(t)
	crashAtEveryStepBoundary(t, func(t crashT) string {
		schema := pgtest.Schema()
		u, err := pgtest.WithSchema(base, schema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pgtest.DropSchema(base, schema) })
		return u
	}, map[string]int{"failed_apply_rollback": 1, "replace_cleanup": 1, "failed_replace_rollback": 1})
}

// crashPostgresOnce runs one iteration; it reports whether the apply was
// killed.
func crashPostgresOnce(t *testing.T, base, fp string) bool {
	t.Helper()
	schema := pgtest.Schema()
	url, err := pgtest.WithSchema(base, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgtest.DropSchema(base, schema) })
	here, there := newCrashEnv(t, "crash"), newCrashEnv(t, "crash")
	world := filepath.Join(t.TempDir(), "world")
	spec := filepath.Join(t.TempDir(), "stack.yaml")
	text := fmt.Sprintf(`version: 1
stack: crash
providers:
  mock:
    config: {world: %q}
resources:
  - name: network
    type: network
  - name: storage
    type: s3_bucket
    protection: durable
    config: {bucket: crash-storage}
  - name: compute
    type: compute
    depends_on: [network, storage]
    config: {size: 2, zone: a, secret: hunter2}
`, world)
	if err := os.WriteFile(spec, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := here.run(fp, "--state", url, "apply", spec)
	if !r.killed {
		if r.code != 0 {
			t.Fatalf("%s (not killed): %s", fp, r)
		}
	} else {
		here.assertNothingLeft()
		if r1 := there.run("", "--state", url, "resume", spec); r1.killed || r1.code != 0 {
			t.Fatalf("%s: resume from another machine: %s\n%s", fp, r1, here.history())
		}
		if r2 := there.run("", "--state", url, "resume", spec); r2.code != 0 || !strings.Contains(r2.stdout, "nothing to resume") {
			t.Fatalf("%s: a second resume: %s", fp, r2)
		}
	}
	if r3 := there.run("", "--state", url, "apply", spec); r3.code != 0 || !strings.Contains(r3.stdout, "complete: 0 changed") {
		t.Fatalf("%s: apply after the resume changes something: %s", fp, r3)
	}
	// The state records exactly what the world holds, by id and key.
	ctx := context.Background()
	b, err := pgstore.Open(ctx, url, storage.Options{Stack: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var recorded, real []string
	for _, name := range st.Names() {
		res := st.Resources[name]
		recorded = append(recorded, res.Name+"="+res.ID)
	}
	for _, w := range mockWorldAt(t, world) {
		real = append(real, w.Name+"="+w.ID)
	}
	slices.Sort(real)
	if !slices.Equal(recorded, real) {
		t.Fatalf("%s: the state records %v, the world holds %v\n%s", fp, recorded, real, here.history())
	}
	there.assertNothingLeft()
	return r.killed
}

// copyPostgresStack copies e's stack (its schema's rows) into to's fresh
// schema, as copyTree copies a state folder: the stack's row, resources,
// journal, revisions and backups, not the lock's holder row (no bulwark
// holds to's stack; its advisory lock is keyed by the schema, so it is
// to's own). A template with nothing in it (a scenario without setup) is
// not copied: the command under test creates the stack.
func (e *crashEnv) copyPostgresStack(to *crashEnv) {
	e.t.Helper()
	if st := e.readRemoteState(); len(st.Resources) == 0 && len(st.Revisions) == 0 && len(e.remoteJournal()) == 0 {
		return
	}
	// Opening to's place creates its tables (pgstore.Open); the rows are
	// then copied as they are, column for column (both schemas are at
	// the same version).
	to.remote().Close()
	from := pgx.Identifier{pgSchemaOf(e.t, e.stateURL)}.Sanitize()
	var sql strings.Builder
	sql.WriteString("BEGIN;\n")
	for _, table := range []string{"stacks", "resources", "journal", "revisions", "backups"} {
		fmt.Fprintf(&sql, "INSERT INTO {{s}}.%s SELECT * FROM %s.%s WHERE stack = %s;\n", table, from, table, pgQuote(e.stack))
	}
	sql.WriteString("COMMIT;\n")
	if err := pgtest.Exec(to.stateURL, sql.String()); err != nil {
		e.t.Fatalf("copy the stack from %s to %s: %v", e.stateURL, to.stateURL, err)
	}
}

// pgSchemaOf is the schema a postgres --state URL names.
func pgSchemaOf(t crashT, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	s := pu.Query().Get("schema")
	if s == "" {
		t.Fatalf("%s names no schema", u)
	}
	return s
}

// pgQuote is s as an SQL string literal.
func pgQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
