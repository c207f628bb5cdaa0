package mockprovider_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

// Changes made at the same time are committed in groups; each must come
// out as if the calls had run one after the other: per name one resource,
// the same id for every Create under its key, a conflict for every other
// key, an injected failure for its name alone, and the log on disk holding
// each resource once.
func TestConcurrentChangesAsOneAfterAnother(t *testing.T) {
	dir := t.TempDir()
	p := configured(t, dir, sdk.Attributes{"fail_create": []any{"r7", "r13"}})
	const names, tries = 40, 3
	type result struct {
		id       string
		conflict bool
		err      error
	}
	res := make([][]result, names)
	for i := range res {
		res[i] = make([]result, 2*tries)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range names {
		for j := range 2 * tries {
			wg.Go(func() {
				<-start
				name := fmt.Sprintf("r%d", i)
				// Two keys per name, each tried three times.
				key := fmt.Sprintf("k%d-%d", i, j%2)
				cr, err := p.Create(context.Background(), &sdk.CreateRequest{Type: "generic", Name: name, IdempotencyKey: key})
				switch {
				case err == nil:
					res[i][j] = result{id: cr.ID}
				case sdk.IsConflict(err):
					res[i][j] = result{conflict: true}
				default:
					res[i][j] = result{err: err}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	for i := range names {
		failing := i == 7 || i == 13
		ids := map[string]bool{}
		won := -1
		for j, r := range res[i] {
			switch {
			case failing:
				if r.err == nil || !bytes.Contains([]byte(r.err.Error()), []byte("injected failure")) {
					t.Errorf("r%d try %d: %+v, want the injected failure", i, j, r)
				}
			case r.err != nil:
				t.Errorf("r%d try %d: %v", i, j, r.err)
			case r.conflict:
			default:
				ids[r.id] = true
				if won >= 0 && won != j%2 {
					t.Errorf("r%d: both keys made it", i)
				}
				won = j % 2
			}
		}
		if failing {
			continue
		}
		if len(ids) != 1 {
			t.Errorf("r%d: ids %v, want one", i, ids)
		}
		for j, r := range res[i] {
			if j%2 != won && !r.conflict {
				t.Errorf("r%d try %d under the other key: %+v, want a conflict", i, j, r)
			}
		}
	}
	closeProvider(t, p)
	q := configured(t, dir, nil)
	for i := range names {
		rr := read(t, q, &sdk.ReadRequest{Type: "generic", Name: fmt.Sprintf("r%d", i)})
		if want := i != 7 && i != 13; rr.Exists != want {
			t.Errorf("r%d exists = %v after a restart, want %v", i, rr.Exists, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, mockprovider.WorldFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(b, []byte(`"type": "generic"`)); got != names-2 {
		t.Errorf("the world file holds %d resources, want %d", got, names-2)
	}
}

// A Read that arrives after another process's change returned sees it,
// however many Reads of this process are in flight (they share the stats
// of the world's files only with Reads that arrived before the stats
// began).
func TestReadAfterAnotherProcessChange(t *testing.T) {
	cfg := sdk.Attributes{"world": t.TempDir()}
	a, b := configured(t, t.TempDir(), cfg), configured(t, t.TempDir(), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var busy atomic.Int64
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := a.Read(ctx, &sdk.ReadRequest{Type: "generic", Name: "other"}); err != nil {
					// The test's end cancels ctx under a Read in flight.
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				busy.Add(1)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for busy.Load() == 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	for i := range 200 {
		name := fmt.Sprintf("x%d", i)
		cr := create(t, b, "generic", name, "k-"+name, nil)
		if rr := read(t, a, &sdk.ReadRequest{Type: "generic", Name: name}); !rr.Exists || rr.ID != cr.ID {
			t.Fatalf("%s, made by the other process, read as %+v", name, rr)
		}
		if _, err := b.Delete(context.Background(), &sdk.DeleteRequest{Type: "generic", Name: name, ID: cr.ID}); err != nil {
			t.Fatal(err)
		}
		if rr := read(t, a, &sdk.ReadRequest{ID: cr.ID}); rr.Exists {
			t.Fatalf("%s, deleted by the other process, still read", name)
		}
	}
	cancel()
	wg.Wait()
	if busy.Load() == 0 {
		t.Fatal("no Read ran beside the checked ones")
	}
}
