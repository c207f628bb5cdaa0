package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// TestCrashMigrate is the crash harness on `state migrate` (a migration
// survives kill -9 anywhere, and never leaves two places that take
// writes): a migration of a stack with history (two revisions, a
// backup) is killed (kill -9, from the failpoint "state") after each of its
// durable steps in turn, from files to PostgreSQL and back, from files to
// S3 and from S3 to files. After every kill, at most one place takes a write (an
// apply is tried at each place that holds the stack); resume, or the
// migration run again, finishes it; then the old place refuses every
// write, naming the migration, the new one takes them, and its state
// records exactly what the world holds. Each pair runs the migration once
// to its end counting its boundaries (BULWARK_FAILPOINT_TALLY), then kills
// it at a fixed sample of them (migrateSample: the first, second and
// fourth, so each way of finishing it is tried around the start record and
// the fence; the middle; the last two, around the copy's last writes and
// the end record);
// BULWARK_CRASH_FULL=1 kills it at every one (about 15 a pair).
func TestCrashMigrate(t *testing.T) {
	if testing.Short() {
		t.Skip("kills state migrate at every step between three pairs of backends (-short)")
	}
	// The four pairs run side by side (each is a long sequence of kills,
	// mostly waiting on process starts and fsync), so the emulator's
	// credentials are set here, before them: a parallel test cannot set
	// environment variables. Each run has its own folders, PostgreSQL
	// schema and S3 prefix; the server of pgBase is shared, as by the
	// parallel scenarios of crashAtEveryStepBoundary.
	s3TestEnv(t)
	file := func(t crashT) string { return "file://" + filepath.Join(t.TempDir(), "state") }
	pg := func(t *testing.T) func(crashT) string {
		base := pgBase(t)
		return func(t crashT) string {
			schema := pgtest.Schema()
			u, err := pgtest.WithSchema(base, schema)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pgtest.DropSchema(base, schema) })
			return u
		}
	}
	t.Run("file to postgres", func(t *testing.T) {
		t.Parallel()
		crashMigrate(t, file, pg(t))
	})
	t.Run("postgres to file", func(t *testing.T) {
		t.Parallel()
		crashMigrate(t, pg(t), file)
	})
	s3 := func(t *testing.T) func(crashT) string {
		if os.Getenv("BULWARK_TEST_S3_ENDPOINT") == "" {
			t.Skip("BULWARK_TEST_S3_ENDPOINT is unset: start the emulators to run the crash harness on s3")
		}
		endpoint := crashS3Server(t)
		return func(t crashT) string { return s3Place(t, endpoint) }
	}
	t.Run("file to s3", func(t *testing.T) {
		t.Parallel()
		crashMigrate(t, file, s3(t))
	})
	t.Run("s3 to file", func(t *testing.T) {
		t.Parallel()
		crashMigrate(t, s3(t), file)
	})
}

// crashMigrate kills a migration from a place of from to one of to at each
// of its boundaries in turn (a fresh pair of places each time), or, unless
// crashFull, at the sample migrateSample picks of them.
func crashMigrate(t *testing.T, from, to func(crashT) string) {
	kills := 0
	if !crashFull() {
		tally := filepath.Join(t.TempDir(), "tally")
		if crashMigrateOnce(t, from(t), to(t), 0, tally) {
			t.Fatal("killed without a failpoint")
		}
		count := readTally(t, tally)["state"]
		if count < 6 {
			t.Fatalf("only %d boundaries counted: the migration has at least six durable steps", count)
		}
		picks := migrateSample(count)
		for _, n := range picks {
			if crashMigrateOnce(t, from(t), to(t), n, "") {
				kills++
			} else {
				t.Logf("state:%d not reached: the migration ended normally (checked as such)", n)
			}
		}
		if kills == 0 {
			t.Fatalf("no kill at %v of %d boundaries", picks, count)
		}
		t.Logf("killed at %d of %d boundaries (%v), each finished to one live place", kills, count, picks)
		return
	}
	for n := 1; ; n++ {
		if n > 40 {
			t.Fatalf("state:%d: the failpoint never stops firing", n)
		}
		if !crashMigrateOnce(t, from(t), to(t), n, "") {
			break
		}
		kills++
	}
	if kills < 6 {
		t.Fatalf("only %d kills: the migration has at least six durable steps", kills)
	}
	t.Logf("killed at each of %d boundaries, each finished to one live place", kills)
}

// migrateSample is the sample of a migration's count boundaries (1 to
// count) TestCrashMigrate kills at: N = 1, 2 and 4, around the start
// record and the fence, which finish the migration each way
// crashMigrateOnce has (resume at the source for odd N, at the destination
// when it holds the copy for N = 2 mod 4, the migration run again for N = 0
// mod 4), the middle one, and the last two, around the copy's last writes
// and the end record.
func migrateSample(count int) []int {
	var out []int
	for _, n := range []int{1, 2, 4, (count + 1) / 2, count - 1, count} {
		if n >= 1 && n <= count && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// placeEnv is a crash env whose stack lives at the place url names.
func placeEnv(t crashT, url string) *crashEnv {
	e := newCrashEnv(t, "mig")
	if dir, ok := strings.CutPrefix(url, "file://"); ok {
		e.stateDir = dir
	} else {
		e.stateURL = url
	}
	return e
}

// openPlace opens the stack mig at url with the tests' key.
func openPlace(t crashT, url string) storage.Backend {
	t.Helper()
	key, err := secrets.ParseKey(testSecretsKey, "the tests' key")
	if err != nil {
		t.Fatal(err)
	}
	b, err := backends.Open(context.Background(), url, storage.Options{Stack: "mig", Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext("mig"))}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// holdsStack reports whether the place at url holds stack mig (a state
// of its, not fenced).
func holdsStack(t crashT, url string) bool {
	t.Helper()
	b := openPlace(t, url)
	defer b.Close()
	st, err := b.Load(context.Background())
	if errors.Is(err, storage.ErrMoved) {
		return false
	}
	if err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	return st.Serial > 0
}

// crashMigrateOnce runs one iteration: the migration killed at its n-th
// boundary (n = 0: not killed, its passes through the failpoints counted in
// the file tally), finished, and checked. It reports whether it was
// killed.
func crashMigrateOnce(t *testing.T, fromURL, toURL string, n int, tally string) bool {
	t.Helper()
	fp, where := "", "not killed"
	if n > 0 {
		fp = fmt.Sprintf("state:%d", n)
		where = fp
	}
	src, dst := placeEnv(t, fromURL), placeEnv(t, toURL)
	world := filepath.Join(t.TempDir(), "world")
	dir := t.TempDir()
	specs := map[string]string{}
	for i, size := range []int{1, 2, 3} {
		p := filepath.Join(dir, fmt.Sprintf("stack%d.yaml", i+1))
		text := fmt.Sprintf(`version: 1
stack: mig
providers:
  mock:
    config: {world: %q}
resources:
  - name: network
    type: network
  - name: storage
    type: s3_bucket
    protection: durable
    config: {bucket: mig-storage}
  - name: compute
    type: compute
    depends_on: [network, storage]
    config: {size: %d, zone: a}
`, world, size)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		specs[fmt.Sprint(size)] = p
	}
	// History: two revisions and the backup the update took.
	src.must(0, "apply", "--yes", specs["1"])
	src.must(0, "apply", "--yes", specs["2"])

	src.tally = tally
	r := src.run(fp, "state", "migrate", specs["2"], "--to", toURL)
	src.tally = ""
	if !r.killed {
		if r.code != 0 {
			t.Fatalf("%s: the migration, not killed, failed: %s", where, r)
		}
	} else {
		src.assertNothingLeft()
		// At most one place takes a write: an apply is tried at each place
		// that holds the stack.
		took := 0
		for _, e := range []*crashEnv{src, dst} {
			url := fromURL
			if e == dst {
				url = toURL
			}
			if !holdsStack(t, url) {
				continue
			}
			if a := e.run("", "apply", "--yes", specs["3"]); !a.killed && a.code == 0 {
				took++
			}
		}
		if took > 1 {
			t.Fatalf("%s: both places took an apply after the kill\n%s", where, src.history())
		}
		// Finished by resume at the source (odd kills), or at the
		// destination when it holds the copy, or by the migration run
		// again.
		var fin crashRes
		switch {
		case n%2 == 1:
			fin = src.run("", "resume", specs["2"])
		case n%4 == 2 && holdsStackOrCopy(t, toURL):
			fin = dst.run("", "resume", specs["2"])
		default:
			fin = src.run("", "state", "migrate", specs["2"], "--to", toURL)
		}
		if !fin.killed && fin.code == 0 && strings.Contains(fin.stdout, "nothing to resume") {
			// Killed before its start record (the migration had not
			// begun: the source took the apply), or after its end record
			// (resume at the new place, live, has nothing to do): run
			// again, it begins, or says it is done.
			if took != 1 {
				t.Fatalf("%s: resume found no migration, but one had begun: %s\n%s", where, fin, src.history())
			}
			fin = src.run("", "state", "migrate", specs["2"], "--to", toURL)
		}
		if fin.killed || fin.code != 0 || !strings.Contains(fin.stdout, "from now on: bulwark --state '"+backends.Redact(toURL)+"'") {
			t.Fatalf("%s: finishing the migration: %s\n%s", where, fin, src.history())
		}
		if again := src.run("", "state", "migrate", specs["2"], "--to", toURL); again.code != 0 || !strings.Contains(again.stdout, "already") {
			t.Fatalf("%s: the migration run once more: %s", where, again)
		}
	}
	// One live place: the old one refuses, naming the migration; the new
	// one takes the update.
	if a := src.run("", "apply", "--yes", specs["3"]); a.code != 1 || !strings.Contains(a.stderr, "by migration op_") {
		t.Fatalf("%s: an apply at the old place: %s\n%s", where, a, src.history())
	}
	if a := dst.run("", "apply", "--yes", specs["3"]); a.code != 0 {
		t.Fatalf("%s: an apply at the new place: %s\n%s", where, a, src.history())
	}
	if a := dst.run("", "apply", "--yes", specs["3"]); a.code != 0 || !strings.Contains(a.stdout, "complete: 0 changed") {
		t.Fatalf("%s: a second apply at the new place changes something: %s", where, a)
	}
	// The state records exactly what the world holds, and the history
	// came along.
	b := openPlace(t, toURL)
	defer b.Close()
	ctx := context.Background()
	st, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var recorded, real []string
	for _, name := range st.Names() {
		recorded = append(recorded, name+"="+st.Resources[name].ID)
	}
	for _, w := range mockWorldAt(t, world) {
		real = append(real, w.Name+"="+w.ID)
	}
	slices.Sort(real)
	if !slices.Equal(recorded, real) {
		t.Fatalf("%s: the state records %v, the world holds %v\n%s", where, recorded, real, src.history())
	}
	if len(st.Revisions) < 3 {
		t.Fatalf("%s: %d revisions at the new place, want the two moved and the one applied there", where, len(st.Revisions))
	}
	if bs, err := b.Backups(ctx); err != nil || len(bs) < 1 {
		t.Fatalf("%s: backups at the new place: %v %v", where, bs, err)
	}
	dst.assertNothingLeft()
	return r.killed
}

// holdsStackOrCopy reports whether the place at url holds the stack or a
// migration's copy of it not yet live (its journal has records).
func holdsStackOrCopy(t crashT, url string) bool {
	b := openPlace(t, url)
	defer b.Close()
	recs, _, err := b.Journal(context.Background())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(recs, func(r journal.Record) bool { return r.Type == backends.OpMigrate })
}
