package webview_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// Two stacks on one file backend record the same object (the mock's db of
// stack alpha, and a record of it in stack beta, as a keyless provider's
// import or a copied state leaves it): the stack page of each marks that
// resource as a conflict naming the other stack, on the page and in /api;
// a resource only one stack records is not marked.
func TestStackPageShowsClaimsConflicts(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(os.Getenv("HOME"), ".config"))
	root := t.TempDir()
	opts := stack.Options{}
	opts.PluginDirs = []string{mockPlugins(t)}
	opts.StateDir = filepath.Join(root, "state")
	apply := func(name string) {
		text := strings.ReplaceAll(strings.ReplaceAll(shopV1, "%WORLD%", filepath.Join(root, "world-"+name)), "stack: shop", "stack: "+name)
		sp, err := spec.Parse(filepath.Join(root, name+".yaml"), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if res, err := stack.Apply(t.Context(), sp, opts); stack.ExitCode(res, err) != stack.ExitOK {
			t.Fatalf("apply %s: %v", name, err)
		}
	}
	apply("alpha")
	apply("beta")

	load := func(name string) *state.State {
		be, err := opts.Backend(t.Context(), name, state.Sealing{})
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		st, err := be.Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// beta records alpha's db as its own "shared".
	db := *load("alpha").Resources["db"]
	db.Name = "shared"
	record(t, opts, "beta", &db)

	srv := httptest.NewServer(webview.New(webview.NewSource(opts), webview.Options{Graphviz: testGraphviz}))
	t.Cleanup(srv.Close)
	for name, want := range map[string]map[string]webview.Claim{
		"alpha": {"db": {Stack: "beta", Address: "shared"}},
		"beta":  {"shared": {Stack: "alpha", Address: "db"}},
	} {
		var doc webview.StackPage
		decode(t, mustGet(t, srv.URL+"/api/stacks/"+name), &doc)
		if doc.Conflicts != 1 {
			t.Errorf("%s: %d conflicts, want 1", name, doc.Conflicts)
		}
		for _, r := range doc.Resources {
			claim, conflicted := want[r.Name]
			switch {
			case conflicted && (len(r.Conflicts) != 1 || r.Conflicts[0] != claim):
				t.Errorf("%s: %s conflicts %+v, want %+v", name, r.Name, r.Conflicts, claim)
			case !conflicted && len(r.Conflicts) != 0:
				t.Errorf("%s: %s marked in conflict with %+v", name, r.Name, r.Conflicts)
			}
		}
		page := mustGet(t, srv.URL+"/stacks/"+name)
		other := want[map[string]string{"alpha": "db", "beta": "shared"}[name]]
		contains(t, name, page, "Conflicts: 1 resource(s)", `also in <a href="/stacks/`+other.Stack+`">`+other.Stack+`</a> as `+other.Address)
	}
}

// record writes rs into stack name's state through opts's backend, under
// its lock, as an operation would.
func record(t *testing.T, opts stack.Options, name string, rs ...*state.Resource) {
	t.Helper()
	be, err := opts.Backend(t.Context(), name, state.Sealing{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	w, err := be.Lock(t.Context(), storage.Holder{Op: "op_01TESTRECORD00000000000000", PID: os.Getpid(), Host: "test", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(t.Context(), storage.Commit{Change: storage.Change{Put: rs}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// recordOp writes the journal records of an operation op of stack name
// that started and succeeded.
func recordOp(t *testing.T, opts stack.Options, name, op string) {
	t.Helper()
	be, err := opts.Backend(t.Context(), name, state.Sealing{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	w, err := be.Lock(t.Context(), storage.Holder{Op: op, PID: os.Getpid(), Host: "test", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	recs := []journal.Record{
		{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning, Time: now},
		{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded, Time: now},
	}
	if _, err := w.Commit(t.Context(), storage.Commit{Records: recs}); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}
