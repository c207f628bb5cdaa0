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
// failpoint) after its journal writes, state writes and provider calls, is
// resumed from another machine (another --state-dir, the same backend and
// the same mock world), to convergence: resume ends it, a second resume has
// nothing to do, the state records exactly what the world holds, and an
// apply then changes nothing. The apply runs once to its end counting its
// boundaries (BULWARK_FAILPOINT_TALLY), then is killed at a fixed sample of
// each point's (crashSample: the first, where a stack's lineage is not yet
// in its rows, which a resume elsewhere once took for foreign resources;
// the last; the middle journal record); BULWARK_CRASH_FULL=1 kills it at
// every one (about 20).
func TestCrashOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("kills an apply at every write boundary on PostgreSQL (-short)")
	}
	base := pgBase(t)
	var tally map[string]int
	if !crashFull() {
		f := filepath.Join(t.TempDir(), "tally")
		if crashPostgresOnce(t, base, "", f) {
			t.Fatal("killed without a failpoint")
		}
		tally = readTally(t, f)
	}
	for _, point := range []string{"journal", "state", "provider"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			kills := 0
			if tally != nil {
				picks := crashSample(point, tally[point])
				for _, n := range picks {
					if crashPostgresOnce(t, base, fmt.Sprintf("%s:%d", point, n), "") {
						kills++
					} else {
						t.Logf("%s:%d not reached: the apply ended normally (checked as such)", point, n)
					}
				}
				if kills == 0 {
					t.Fatalf("%s never killed the apply (%d boundaries counted)", point, tally[point])
				}
				t.Logf("killed at %d of %d %s boundaries (%v), each resumed from another machine to convergence", kills, tally[point], point, picks)
				return
			}
			for n := 1; ; n++ {
				if n > 200 {
					t.Fatalf("%s:%d: the failpoint never stops firing", point, n)
				}
				if !crashPostgresOnce(t, base, fmt.Sprintf("%s:%d", point, n), "") {
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
// rollback (creates, compensations, deletes), a teardown, and, from a copy
// of a stack rep1.yaml was applied to (copyPostgresStack), a replacement
// with its cleanup phase and a failed replacement's rollback, each killed
// at a fixed sample of its journal records, state writes and provider
// mutations (the first and the last of each, and the middle journal
// record: crashSample), and resumed to convergence. BULWARK_CRASH_FULL=1
// kills them at every boundary. (A first apply's kills, resumed from
// another machine, are TestCrashOnPostgres's; the backend's own write
// boundaries, the conformance suite's; every scenario at every boundary,
// the file backend's TestCrashAtEveryStepBoundary.)
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
	}, slices.DeleteFunc(slices.Clone(crashRemoteScenarios), func(s string) bool { return s == "apply" }))
}

// crashPostgresOnce runs one iteration, the apply killed at fp (and
// counting its passes through the failpoints in the file tally, when set);
// it reports whether the apply was killed.
func crashPostgresOnce(t *testing.T, base, fp, tally string) bool {
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
	here.tally = tally
	r := here.run(fp, "--state", url, "apply", "--yes", spec)
	here.tally = ""
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
	if r3 := there.run("", "--state", url, "apply", "--yes", spec); r3.code != 0 || !strings.Contains(r3.stdout, "complete: 0 changed") {
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
