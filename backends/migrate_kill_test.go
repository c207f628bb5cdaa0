package backends

import (
	"context"
	"errors"
	"fmt"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// seed gives the stack at url two operations' worth of history: a
// resource, a revision with its body, and a backup.
func seed(t *testing.T, url string, o storage.Options) {
	t.Helper()
	ctx := context.Background()
	b := open(t, url, o)
	w, err := b.Lock(ctx, storage.Holder{Op: "op_1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	r := &state.Resource{Name: "db", Type: "generic", Provider: "mock", Source: "mock", ID: "x", Protection: protection.Durable,
		Attributes: map[string]any{"pw": "hunter2"}, Sensitive: []string{"pw"}}
	for _, c := range []storage.Commit{
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Resource: "db", Status: journal.StepOK}}, Change: storage.Change{Put: []*state.Resource{r}}},
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}},
			Change: storage.Change{Meta: &storage.Meta{Current: 1, Revisions: []state.Revision{{N: 1, Op: "op_1", Status: state.RevisionApplied}}}}},
	} {
		if _, err := w.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "stack: web\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PutBackup(ctx, journal.NewOpID(), 5); err != nil {
		t.Fatal(err)
	}
}

// killed is what a Boundary that kills panics with.
type killed struct{}

// migrateKilledAt runs a migration that stops dead after its nth durable
// step (the locks are then let go, as a kill's are); it reports whether it
// was stopped.
func migrateKilledAt(ctx context.Context, from, to string, o storage.Options, n int) (stopped bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(killed); !ok {
				panic(r)
			}
			stopped = true
		}
	}()
	i := 0
	_, err = Migrate(ctx, Migration{From: from, To: to, Options: o, Holder: storage.Holder{Op: journal.NewOpID()}, Open: Open,
		Boundary: func() {
			if i++; i == n {
				panic(killed{})
			}
		}})
	return false, err
}

// live reports whether the stack at url takes writes: it loads, holds the
// stack, and no operation of its journal is unfinished (what every
// mutating command checks first).
func live(t *testing.T, url string, o storage.Options) bool {
	t.Helper()
	ctx := context.Background()
	b := open(t, url, o)
	st, err := b.Load(ctx)
	if errors.Is(err, storage.ErrMoved) {
		return false
	}
	if err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	recs, _, err := b.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial == 0 {
		return false
	}
	status := map[string]string{}
	for _, r := range recs {
		if r.Kind == journal.KindOp {
			status[r.Op] = r.Status
		}
	}
	for _, s := range status {
		if s == journal.OpRunning {
			return false
		}
	}
	return true
}

// A migration killed after each of its durable steps, on every pair of
// backends, never leaves two places that take writes; run again, it
// finishes: the source refuses for good, naming the migration and the
// destination, and the destination holds the stack whole and takes writes.
// (Before the fix, a kill between the copy and the source's mark left both
// live, and the re-run refused the destination as "already holds".)
func TestMigrateKilledAtEveryStep(t *testing.T) {
	ctx := context.Background()
	key, _ := secrets.NewKey("test")
	o := storage.Options{Stack: "web", Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext("web"))}}
	file := func(t *testing.T) string { return "file://" + t.TempDir() }
	pairs := []struct {
		name     string
		from, to func(t *testing.T) string
	}{
		{"file to postgres", file, func(t *testing.T) string { return pgtest.URL(t) }},
		{"file to s3", file, s3URL},
		{"s3 to file", s3URL, file},
		{"postgres to file", func(t *testing.T) string { return pgtest.URL(t) }, file},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			for n := 1; ; n++ {
				if n > 30 {
					t.Fatal("the migration never ends")
				}
				from, to := p.from(t), p.to(t)
				seed(t, from, o)
				stopped, err := migrateKilledAt(ctx, from, to, o, n)
				if err != nil {
					t.Fatalf("kill %d: %v", n, err)
				}
				if !stopped {
					t.Logf("killed at each of %d steps, each finished by a re-run", n-1)
					return
				}
				a, b := live(t, from, o), live(t, to, o)
				if a && b {
					t.Fatalf("kill %d: both places take writes", n)
				}
				// Run again, it finishes.
				moved, err := migrate(ctx, from, to, o, journal.NewOpID())
				if err != nil {
					t.Fatalf("kill %d: the re-run: %v", n, err)
				}
				if moved.To != Redact(to) {
					t.Fatalf("kill %d: the place to use is %s, want %s", n, moved.To, Redact(to))
				}
				if live(t, from, o) || !live(t, to, o) {
					t.Fatalf("kill %d: after the re-run, the source is live %v, the destination %v", n, live(t, from, o), live(t, to, o))
				}
				_, err = open(t, from, o).Lock(ctx, storage.Holder{Op: "op_late"})
				var me *storage.MovedError
				if !errors.As(err, &me) || me.To != Redact(to) || me.Migration != moved.Op || !strings.Contains(err.Error(), moved.Op) {
					t.Fatalf("kill %d: the source's lock: %v", n, err)
				}
				st, err := open(t, to, o).Load(ctx)
				if err != nil || st.Resources["db"] == nil || st.Resources["db"].Attributes["pw"] != "hunter2" || st.Current != 1 {
					t.Fatalf("kill %d: the copy: %+v %v", n, st, err)
				}
				dst := open(t, to, o)
				if rb, err := dst.Revision(ctx, 1); err != nil || rb.Spec != "stack: web\n" {
					t.Fatalf("kill %d: revision at the destination: %v %v", n, rb, err)
				}
				if bs, err := dst.Backups(ctx); err != nil || len(bs) != 1 {
					t.Fatalf("kill %d: backups at the destination: %v %v", n, bs, err)
				}
				// A third run has nothing to do.
				if again, err := migrate(ctx, from, to, o, journal.NewOpID()); err != nil || !again.Already {
					t.Fatalf("kill %d: a third run: %+v %v", n, again, err)
				}
				// And the destination goes on.
				w, err := dst.Lock(ctx, storage.Holder{Op: "op_after"})
				if err != nil {
					t.Fatalf("kill %d: lock the destination: %v", n, err)
				}
				if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_after", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}}); err != nil {
					t.Fatalf("kill %d: commit at the destination: %v", n, err)
				}
				w.Release(ctx)
			}
		})
	}
}

// Refusals: what another stack holds is never overwritten, and nothing is
// fenced for it; a migration left unfinished is finished only towards its
// own destination; PendingMigration finds it at both places.
func TestMigrateRefusesAndFinds(t *testing.T) {
	ctx := context.Background()
	o := storage.Options{Stack: "web"}
	file := func() string { return "file://" + t.TempDir() }

	t.Run("a destination holding another stack's history", func(t *testing.T) {
		from, to := file(), file()
		seed(t, from, o)
		seed(t, to, o) // another lineage
		if _, err := migrate(ctx, from, to, o, "op_m"); err == nil || !strings.Contains(err.Error(), "already holds stack web") {
			t.Fatalf("migrate onto another stack: %v", err)
		}
		if !live(t, from, o) || !live(t, to, o) {
			t.Fatal("a refused migration changed a place")
		}
	})

	t.Run("an unfinished migration goes to its own place only", func(t *testing.T) {
		for n := 1; n <= 3; n++ { // after the start record, the fence, the copy
			from, to, other := file(), file(), file()
			seed(t, from, o)
			stopped, err := migrateKilledAt(ctx, from, to, o, n)
			if !stopped || err != nil {
				t.Fatalf("kill %d: %v %v", n, stopped, err)
			}
			_, err = migrate(ctx, from, other, o, "op_other")
			if err == nil || !strings.Contains(err.Error(), Redact(to)) {
				t.Fatalf("kill %d: a migration elsewhere: %v", n, err)
			}
			p, err := PendingMigration(ctx, Open, from, o)
			if err != nil || p == nil || p.To != Redact(to) || p.From != Redact(from) {
				t.Fatalf("kill %d: pending at the source: %+v %v", n, p, err)
			}
			if n == 3 {
				// The copy is at the destination, not live yet: it names
				// the migration too.
				q, err := PendingMigration(ctx, Open, to, o)
				if err != nil || q == nil || q.Op != p.Op || q.From != Redact(from) || q.To != Redact(to) {
					t.Fatalf("pending at the destination: %+v %v", q, err)
				}
			}
			if live(t, other, o) {
				t.Fatal("the refused destination holds the stack")
			}
		}
	})

	t.Run("a place that holds nothing", func(t *testing.T) {
		if _, err := migrate(ctx, file(), file(), o, "op_m"); err == nil || !strings.Contains(err.Error(), "nothing to move") {
			t.Fatalf("migrate nothing: %v", err)
		}
	})
}

func ExampleMovedMarker() {
	m := storage.MovedMarker{Migration: "op_01", To: "s3://team-state/stacks?region=eu-west-1"}
	fmt.Println(storage.ParseMovedMarker(m.String()) == m, storage.ParseMovedMarker("file:///old/place").To)
	// Output: true file:///old/place
}

// An attacker who can write the old place's marker but not its journal
// cannot turn a resume into a copy of the stack to a place of theirs: the
// marker alone fences (every command refuses), and the migration it names
// must have its start record in the journal, under the lock, before
// anything is copied.
func TestMigrateForgedMarkerCopiesNothing(t *testing.T) {
	ctx := context.Background()
	o := storage.Options{Stack: "web"}
	dir := t.TempDir()
	from, theirs := "file://"+dir, "file://"+t.TempDir()
	seed(t, from, o)
	forged := storage.MovedMarker{Migration: "op_forged", To: theirs}.String()
	if err := os.WriteFile(filepath.Join(dir, "web", "moved"), []byte(forged+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, from, o).Lock(ctx, storage.Holder{Op: "op_apply"}); !errors.Is(err, storage.ErrMoved) {
		t.Fatalf("a command at the marked place: %v", err)
	}
	p, err := PendingMigration(ctx, Open, from, o)
	if err != nil || p == nil || p.Op != "op_forged" {
		t.Fatalf("pending: %+v %v", p, err)
	}
	_, err = migrate(ctx, from, theirs, o, "op_resume")
	if err == nil || !strings.Contains(err.Error(), "start record is not in its journal") {
		t.Fatalf("a resume of the forged migration: %v", err)
	}
	st, err := open(t, theirs, o).Load(ctx)
	if err != nil || st.Serial != 0 || len(st.Resources) != 0 {
		t.Fatalf("the attacker's place holds %+v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(theirs, "file://"), "web", "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the attacker's place has a state.json: %v", err)
	}
}

// Killed again while taking up a killed migration (at the first durable
// step of the re-run, whatever it is by then), it still finishes, to one
// live place.
func TestMigrateKilledTwice(t *testing.T) {
	ctx := context.Background()
	o := storage.Options{Stack: "web"}
	for n := 1; n <= 6; n++ {
		from, to := "file://"+t.TempDir(), s3URL(t)
		seed(t, from, o)
		if stopped, err := migrateKilledAt(ctx, from, to, o, n); !stopped || err != nil {
			t.Fatalf("kill %d: %v %v", n, stopped, err)
		}
		if _, err := migrateKilledAt(ctx, from, to, o, 1); err != nil {
			t.Fatalf("kill %d, then 1: %v", n, err)
		}
		if live(t, from, o) && live(t, to, o) {
			t.Fatalf("kill %d, then 1: both places take writes", n)
		}
		if _, err := migrate(ctx, from, to, o, journal.NewOpID()); err != nil {
			t.Fatalf("kill %d, then 1: the last run: %v", n, err)
		}
		if live(t, from, o) || !live(t, to, o) {
			t.Fatalf("kill %d, then 1: the source is live %v, the destination %v", n, live(t, from, o), live(t, to, o))
		}
	}
}
