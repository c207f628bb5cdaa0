package s3store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/storage"
)

// The claims lock of a prefix: among racers exactly one takes it; a
// released one is free; a planted lock object that does not parse, or one
// naming a holder whose lease runs, is never taken; a lock object
// overwritten under its holder (taken over) makes its Held fail, so it
// records nothing; and it is no stack of the prefix.
func TestClaimsLock(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	home := s.home(t, "3s")
	forger := openHome(t, home, storage.Options{Stack: storage.ClaimsName})
	plant := func(body string) {
		t.Helper()
		if _, err := forger.c.put(ctx, lockKey, []byte(body), cond{}, nil); err != nil {
			t.Fatal(err)
		}
	}

	const n = 8
	var (
		mu   sync.Mutex
		won  []storage.ClaimsLock
		errs []error
		wg   sync.WaitGroup
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := ClaimsLock(ctx, home, storage.Holder{Op: "op_racer"})
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
		t.Fatalf("Held: %v", err)
	}
	if names, err := Stacks(ctx, home); err != nil || len(names) != 0 {
		t.Errorf("stacks of the prefix: %v %v, want none (the claims lock is no stack)", names, err)
	}

	// Overwritten under its holder (a forged release, a takeover): the
	// holder's Held fails, and a taker may take what now says released.
	plant(`{"format":2,"holder":{"op":"op_forger","pid":1,"host":"x","since":"2026-01-01T00:00:00Z","until":"2026-01-01T00:00:00Z"},"token":"forged","released":true}`)
	if err := held.Held(ctx); !errors.Is(err, storage.ErrLost) {
		t.Fatalf("Held after the object was overwritten: %v, want ErrLost", err)
	}
	held.Release(ctx)
	taker, err := ClaimsLock(ctx, home, storage.Holder{Op: "op_taker"})
	if err != nil {
		t.Fatalf("a released lock: %v", err)
	}
	if err := taker.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if again, err := ClaimsLock(ctx, home, storage.Holder{}); err != nil {
		t.Fatalf("after release: %v", err)
	} else {
		again.Release(ctx)
	}

	// Planted: a record that does not parse, and one whose holder's lease
	// runs for an hour yet: neither is taken.
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, body := range []string{`not a lock`, `{"format":2,"holder":{"op":"op_other","pid":4242,"host":"elsewhere","since":"2026-01-01T00:00:00Z","until":"` + future + `"},"token":"t"}`} {
		plant(body)
		if l, err := ClaimsLock(ctx, home, storage.Holder{}); !errors.Is(err, storage.ErrLocked) {
			if l != nil {
				l.Release(ctx)
			}
			t.Fatalf("with a planted lock object %q: %v, want ErrLocked", body, err)
		}
	}
	// One whose lease ran out is stale: taken over.
	plant(`{"format":2,"holder":{"op":"op_gone","pid":4242,"host":"elsewhere","since":"2026-01-01T00:00:00Z","until":"2026-01-01T00:00:01Z"},"token":"t"}`)
	l, err := ClaimsLock(ctx, home, storage.Holder{})
	if err != nil {
		t.Fatalf("a stale lock object: %v", err)
	}
	l.Release(ctx)
}
