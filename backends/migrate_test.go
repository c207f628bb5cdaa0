package backends

import (
	"context"
	"errors"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// migrate runs Migrate from one URL to another as operation op.
func migrate(ctx context.Context, from, to string, o storage.Options, op string) (*Moved, error) {
	return Migrate(ctx, Migration{From: from, To: to, Options: o, Holder: storage.Holder{Op: op}, Open: Open})
}

func open(t *testing.T, url string, o storage.Options) storage.Backend {
	t.Helper()
	b, err := Open(context.Background(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// A stack moves from one postgres schema to another with its journal,
// revisions and lineage; the source then refuses, naming the new place; a
// second migrate onto the copy is refused.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	from, to := pgtest.URL(t), pgtest.URL(t)
	key, _ := secrets.NewKey("test")
	o := storage.Options{Stack: "web", Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext("web"))}}
	src := open(t, from, o)
	w, err := src.Lock(ctx, storage.Holder{Op: "op_1"})
	if err != nil {
		t.Fatal(err)
	}
	r := &state.Resource{Name: "db", Type: "generic", Provider: "mock", Source: "mock", ID: "x", Protection: protection.Durable,
		Attributes: map[string]any{"pw": "hunter2"}, Sensitive: []string{"pw"}}
	commits := []storage.Commit{
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep, Resource: "db", Status: journal.StepOK}},
			Change: storage.Change{Put: []*state.Resource{r}}},
		{Records: []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}},
			Change: storage.Change{Meta: &storage.Meta{Current: 1, Revisions: []state.Revision{{N: 1, Op: "op_1", Status: state.RevisionApplied}}}}},
	}
	for _, c := range commits {
		if _, err := w.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "stack: web\n"}); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	before, _ := src.Load(ctx)

	dst := open(t, to, o)
	moved, err := migrate(ctx, from, to, o, "op_migrate")
	if err != nil {
		t.Fatal(err)
	}
	if moved.Resources != 1 || moved.Records != 4 || moved.Revisions != 1 {
		t.Fatalf("moved %+v", moved)
	}
	after, err := open(t, to, o).Load(ctx)
	if err != nil || after.Lineage != before.Lineage || after.Resources["db"].Attributes["pw"] != "hunter2" || after.Current != 1 {
		t.Fatalf("copy: %+v %v", after, err)
	}
	if rb, err := dst.Revision(ctx, 1); err != nil || rb.Spec != "stack: web\n" {
		t.Fatalf("revision: %v %v", rb, err)
	}
	// The source refuses, naming the new place, to readers and writers.
	again := open(t, from, o)
	if _, err := again.Load(ctx); !errors.Is(err, storage.ErrMoved) || !strings.Contains(err.Error(), dst.Location()) {
		t.Fatalf("Load of the moved source: %v", err)
	}
	if _, err := again.Lock(ctx, storage.Holder{Op: "op_2"}); !errors.Is(err, storage.ErrMoved) {
		t.Fatalf("Lock of the moved source: %v", err)
	}
	// The copy goes on: a new lock, a commit.
	w2, err := dst.Lock(ctx, storage.Holder{Op: "op_3"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_3", Kind: journal.KindOp, Status: journal.OpRunning}}}); err != nil {
		t.Fatal(err)
	}
	w2.Release(ctx)
	// Moving onto a stack that has something is refused.
	third := pgtest.URL(t)
	if _, err := migrate(ctx, third, to, o, "op_m2"); err == nil || !strings.Contains(err.Error(), "nothing to move") {
		t.Fatalf("migrate onto a used stack: %v", err)
	}
}

// The common move: a stack kept in files moves to PostgreSQL (and its
// folder then refuses, naming the database); and back again, from
// PostgreSQL to a new folder.
func TestMigrateFileToPostgresAndBack(t *testing.T) {
	ctx := context.Background()
	o := storage.Options{Stack: "web"}
	dir := "file://" + t.TempDir()
	src := open(t, dir, o)
	w, err := src.Lock(ctx, storage.Holder{Op: "op_1"})
	if err != nil {
		t.Fatal(err)
	}
	r := &state.Resource{Name: "a", Type: "generic", Provider: "mock", Source: "mock", ID: "x", Protection: protection.Ephemeral}
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}},
		Change: storage.Change{Put: []*state.Resource{r}}}); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	to := pgtest.URL(t)
	if _, err := migrate(ctx, dir, to, o, "op_m"); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, dir, o).Load(ctx); !errors.Is(err, storage.ErrMoved) || !strings.Contains(err.Error(), "postgres://bulwark@") {
		t.Fatalf("the moved folder: %v", err)
	}
	st, err := open(t, to, o).Load(ctx)
	if err != nil || st.Resources["a"] == nil {
		t.Fatalf("at postgres: %v %v", st, err)
	}
	back := "file://" + t.TempDir()
	if _, err := migrate(ctx, to, back, o, "op_m2"); err != nil {
		t.Fatal(err)
	}
	if st, err := open(t, back, o).Load(ctx); err != nil || st.Resources["a"] == nil || st.Lineage == "" {
		t.Fatalf("back in files: %+v %v", st, err)
	}
}
