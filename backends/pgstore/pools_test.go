package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// sessions counts the server sessions whose application_name is app.
func sessions(t *testing.T, url, app string) int {
	t.Helper()
	var n int
	if err := rawConn(t, url).QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// pooledURL is url with an application_name of the test's own, so that
// its sessions can be counted.
func pooledURL(t *testing.T) (url, app string) {
	app = fmt.Sprintf("bulwark-pools-%d", time.Now().UnixNano())
	return pgtest.URL(t) + "&application_name=" + app, app
}

// Backends Pools opens share its pool: ten stacks opened, read and closed
// one after another make one server session, not ten; a Backend's Close
// leaves the pool to the others; Pools.Close ends the session, and an
// Open after it fails.
func TestPoolsShareOneSessionAcrossOpens(t *testing.T) {
	ctx := context.Background()
	url, app := pooledURL(t)
	pools := pgstore.NewPools()
	t.Cleanup(pools.Close)
	kept, err := pools.Open(ctx, url, storage.Options{Stack: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	var open []*pgstore.Backend
	for i := range 10 {
		b, err := pools.Open(ctx, url, storage.Options{Stack: fmt.Sprintf("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Load(ctx); err != nil {
			t.Fatal(err)
		}
		open = append(open, b)
	}
	if n := sessions(t, url, app); n != 1 {
		t.Errorf("%d server sessions with eleven backends open (each read in turn), want 1", n)
	}
	for _, b := range open {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kept.Load(ctx); err != nil {
		t.Fatalf("a Backend of the pools, after the others closed: %v", err)
	}
	names, err := pools.Stacks(ctx, url)
	if err != nil || len(names) != 0 {
		t.Errorf("Stacks: %v, %v (nothing was written: none)", names, err)
	}
	pools.Close()
	deadline := time.Now().Add(10 * time.Second)
	for sessions(t, url, app) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pools' session outlived Close")
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if _, err := pools.Open(ctx, url, storage.Options{Stack: "late"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Open after Close: %v, want refused", err)
	}
}

// Backends of one Pools used at once, each by its own writer (whose lock
// has a connection of its own), all write and read what they should, and
// a Backend of the pools reads what another process's wrote since: the
// pool keeps connections, never data.
func TestPoolsBackendsAtOnceReadFresh(t *testing.T) {
	ctx := context.Background()
	url, _ := pooledURL(t)
	pools := pgstore.NewPools()
	t.Cleanup(pools.Close)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			stack := fmt.Sprintf("s%d", i)
			b, err := pools.Open(ctx, url, storage.Options{Stack: stack})
			if err != nil {
				t.Error(err)
				return
			}
			defer b.Close()
			w, err := b.Lock(ctx, storage.Holder{Op: "op_" + stack})
			if err != nil {
				t.Error(err)
				return
			}
			for j := range i + 1 {
				name := fmt.Sprintf("r%d", j)
				if _, err := w.Commit(ctx, storage.Commit{
					Records: []journal.Record{{Op: "op_" + stack, Kind: journal.KindStep, Status: journal.StepOK, Resource: name}},
					Change:  storage.Change{Put: []*state.Resource{res(name, nil)}},
				}); err != nil {
					t.Error(err)
				}
			}
			if err := w.Release(ctx); err != nil {
				t.Error(err)
			}
			st, err := b.Load(ctx)
			if err != nil || len(st.Resources) != i+1 {
				t.Errorf("%s: %d resources, %v; want %d", stack, len(st.Resources), err, i+1)
			}
		})
	}
	wg.Wait()
	names, err := pools.Stacks(ctx, url)
	if err != nil || len(names) != 8 {
		t.Fatalf("Stacks: %v, %v", names, err)
	}

	reader, err := pools.Open(ctx, url, storage.Options{Stack: "s0"})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if st, err := reader.Load(ctx); err != nil || len(st.Resources) != 1 {
		t.Fatalf("s0: %+v, %v", st, err)
	}
	other := open(t, url, "s0", state.Sealing{}) // its own pool, as another process's
	w := lock(t, other, "op_other")
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("late", nil)}}}); err != nil {
		t.Fatal(err)
	}
	if st, err := reader.Load(ctx); err != nil || st.Resources["late"] == nil {
		t.Fatalf("the pools' reader does not see another's commit: %v, %v", st, err)
	}
}

// A pool Pools makes for a listing, the first thing a command may ask of
// it, has Open's settings (the application name, the connect timeout),
// which the backends opened later through it keep.
func TestPoolsListingFirstKeepsOpensSettings(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	pools := pgstore.NewPools()
	t.Cleanup(pools.Close)
	if _, err := pools.Stacks(ctx, url); err != nil {
		t.Fatal(err)
	}
	b, err := pools.Open(ctx, url, storage.Options{Stack: "web"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	want := "bulwark " + pgstore.DefaultConnectTimeout.String()
	if got := pools.Settings(); len(got) != 1 || got[0] != want {
		t.Errorf("pools %q, want one with %q", got, want)
	}
}
