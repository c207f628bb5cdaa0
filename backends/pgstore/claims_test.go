package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// The claims lock of a schema: one holder at a time among racers; free once
// released or once its holder's session ends (as a kill ends it), and then
// the old holder's Held says it is lost; and nothing written to the tables
// (a holder row of the name .claims, naming a dead session) frees it.
func TestClaimsLock(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	// The tables exist, as beside any stack.
	b, err := pgstore.Open(ctx, u, storage.Options{Stack: "web"})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()

	// Racers: exactly one takes it.
	const n = 6
	var (
		mu   sync.Mutex
		won  []storage.ClaimsLock
		wg   sync.WaitGroup
		errs []error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := pgstore.ClaimsLock(ctx, u, storage.Holder{Op: "op_racer"})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won = append(won, l)
			} else {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d racers took the claims lock, want 1 (errors %v)", len(won), errs)
	}
	for _, err := range errs {
		if !errors.Is(err, storage.ErrLocked) {
			t.Errorf("a racer that lost: %v, want ErrLocked", err)
		}
	}
	held := won[0]
	if err := held.Held(ctx); err != nil {
		t.Fatalf("Held of the holder: %v", err)
	}

	// A planted holder row naming a dead session frees nothing.
	if err := pgtest.Exec(u, `INSERT INTO {{s}}.stacks (stack) VALUES ('.claims') ON CONFLICT DO NOTHING;
		INSERT INTO {{s}}.locks (stack, op, pid, host, since, backend_pid) VALUES ('.claims', 'op_forged', 999999, 'nowhere', now(), 999999)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.ClaimsLock(ctx, u, storage.Holder{}); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("with a forged holder row: %v, want ErrLocked", err)
	}
	// Nor is it any stack's lock: a stack's lock is taken beside it.
	sb, err := pgstore.Open(ctx, u, storage.Options{Stack: "claims"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	w, err := sb.Lock(ctx, storage.Holder{Op: "op_stack"})
	if err != nil {
		t.Fatalf("a stack's lock beside the claims lock: %v", err)
	}
	w.Release(ctx)

	// Its session ended on the server (a kill, a cut): lost, and free.
	classid, objid := pgstore.ClaimsLockIDs(schemaOf(t, u))
	if err := pgtest.Exec(u, fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = %d AND objid = %d AND objsubid = 1`, classid, objid)); err != nil {
		t.Fatal(err)
	}
	if err := held.Held(ctx); !errors.Is(err, storage.ErrLost) {
		t.Fatalf("Held after the session ended: %v, want ErrLost", err)
	}
	held.Release(ctx)
	next, err := pgstore.ClaimsLock(ctx, u, storage.Holder{})
	if err != nil {
		t.Fatalf("after the holder's session ended: %v", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Released: free again.
	again, err := pgstore.ClaimsLock(ctx, u, storage.Holder{})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.Release(ctx)
}
