package webview_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
	"github.com/bulwark-iac/bulwark/core/storage/storagetest"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// A page lists the backend's stacks once, however many stacks it reads,
// and opens each stack it reads once per read: on PostgreSQL every listing
// and every open is a server session (a page of ten stacks made 21 of them,
// and the stack page's claims check 23). The stacks page opens each stack
// once; a stack's page opens its own twice (status, resources) and each
// other stack once (its claims check). Read a few at a time, the rows keep
// the listing's order, and each shows its own stack.
func TestAPageListsTheStacksOnce(t *testing.T) {
	dir := t.TempDir()
	counter := storagetest.NewOpenCounter(func(so storage.Options) storage.Backend {
		return filestore.New(stack.StackDir(dir, so.Stack), so)
	})
	names := []string{"s00", "s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08", "s09"}
	var lists atomic.Int32
	opts := stack.Options{StorageOptions: stack.StorageOptions{
		StateDir: dir, StateURL: "fake://counting", Open: counter.Open,
		ListStacks: func(context.Context) ([]string, error) {
			lists.Add(1)
			out := slices.Clone(names)
			slices.Reverse(out) // the source sorts them
			return out, nil
		},
	}}
	// Stack sNN records N+1 resources; s03 an operation that ended.
	for i, n := range names {
		var put []*state.Resource
		for j := range i + 1 {
			put = append(put, &state.Resource{Name: "r" + string(rune('a'+j)), Type: "generic", ID: n + "-" + string(rune('a'+j)), Provider: "mock", Source: "mock", Protection: protection.Ephemeral})
		}
		record(t, opts, n, put...)
	}
	const op = "op_01TESTLISTONCEOP0000000000"
	recordOp(t, opts, "s03", op)
	srv := httptest.NewServer(webview.New(webview.NewSource(opts), webview.Options{Graphviz: testGraphviz}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		path  string
		opens int
	}{
		{"/", 10}, {"/api/stacks", 10}, {"/stacks/s03", 11}, {"/api/stacks/s03", 11},
		// The timeline of an operation that ended: its records and the
		// stack's resources (a running one's reads the status too).
		{"/stacks/s03/operations/" + op, 2}, {"/stacks/s03/operations/" + op + "/events", 2},
	} {
		counter.Reset()
		lists.Store(0)
		body := mustGet(t, srv.URL+c.path)
		if n := lists.Load(); n != 1 {
			t.Errorf("GET %s listed the stacks %d times, want once", c.path, n)
		}
		if opens, closes := counter.Counts(); opens != c.opens || closes != c.opens {
			t.Errorf("GET %s opened %d backends and closed %d, want %d each", c.path, opens, closes, c.opens)
		}
		if c.path != "/api/stacks" {
			continue
		}
		var doc webview.StacksPage
		decode(t, body, &doc)
		if len(doc.Stacks) != len(names) {
			t.Fatalf("%d rows, want %d", len(doc.Stacks), len(names))
		}
		for i, row := range doc.Stacks {
			if row.Name != names[i] || row.Resources != i+1 || row.Error != "" {
				t.Errorf("row %d: %+v, want %s with %d resources", i, row, names[i], i+1)
			}
		}
	}
}
