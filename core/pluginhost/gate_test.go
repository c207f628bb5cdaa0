package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The gate's limit through a sequence of calls: none until a throttle,
// half of what was in flight at the first one (at least 1), one cut for
// the calls sent into the same congestion, one more call per window of
// answers, and none again once it exceeds the most calls ever asked for.
func TestGateAIMD(t *testing.T) {
	type op struct {
		acquire  int   // calls admitted (each must go at once)
		done     []int // tickets (by admission order) answered
		throttle []int // tickets answered throttled
		limit    int   // the limit after the op
		lowest   int
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"no throttle, no limit", []op{
			{acquire: 8, limit: 0},
			{done: []int{0, 1, 2, 3, 4, 5, 6, 7}, limit: 0},
		}},
		{"halved once for one congestion", []op{
			{acquire: 8},
			// Three of the eight answered throttled: one cut, to 8/2.
			{throttle: []int{0, 1, 2}, limit: 4, lowest: 4},
		}},
		{"at least one", []op{
			{acquire: 1},
			{throttle: []int{0}, limit: 1, lowest: 1},
		}},
		{"a later congestion cuts again", []op{
			{acquire: 4},
			{throttle: []int{0}, limit: 2, lowest: 2}, // 4 in flight: 2
			{done: []int{1, 2, 3}, limit: 3},          // a window of 2 answers: +1; one more of the next
			{acquire: 3, limit: 3},                    // admitted after the cut
			{throttle: []int{4}, limit: 1, lowest: 1}, // 3 in flight: 1
		}},
		{"grows back, then limits nothing", []op{
			{acquire: 4},
			{throttle: []int{0}, limit: 2, lowest: 2},
			{done: []int{1, 2}, limit: 3},
			{done: []int{3}, limit: 3},
			{acquire: 3, limit: 3},
			{done: []int{4, 5, 6}, limit: 4},
			{acquire: 4, limit: 4},
			// 4 is the most ever asked for: one more window and the limit
			// is above it, so it goes.
			{done: []int{7, 8, 9, 10}, limit: 0, lowest: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(nil)
			var tickets []ticket
			lowest := 0
			for i, o := range tt.ops {
				for range o.acquire {
					ctx, cancel := context.WithCancel(context.Background())
					cancel() // must not wait: a cancelled ctx would fail it
					g.mu.Lock()
					ok := len(g.waiters) == 0 && g.admitsAt(g.now())
					g.mu.Unlock()
					if !ok {
						t.Fatalf("op %d: the gate does not admit a call at once (limit %d, in flight %d)", i, g.limit, g.inflight)
					}
					tk, err := g.acquire(ctx)
					if err != nil {
						t.Fatalf("op %d: acquire: %v", i, err)
					}
					tickets = append(tickets, tk)
				}
				for _, n := range o.throttle {
					g.throttled(tickets[n], 0, 1)
				}
				for _, n := range o.done {
					g.done(tickets[n])
				}
				if o.lowest != 0 {
					lowest = o.lowest
				}
				got := g.throttling()
				if got.Limit != o.limit || got.Lowest != lowest {
					t.Fatalf("op %d: limit %d lowest %d, want %d and %d", i, got.Limit, got.Lowest, o.limit, lowest)
				}
			}
		})
	}
}

// A full gate makes calls wait, first come first served, and a waiter
// whose ctx ends leaves the queue with ctx's error.
func TestGateWaits(t *testing.T) {
	g := newGate(nil)
	ctx := context.Background()
	a, _ := g.acquire(ctx)
	b, _ := g.acquire(ctx)
	c, _ := g.acquire(ctx)
	g.throttled(a, 0, 1) // 3 in flight: the limit is 1, b and c hold 2
	if g.throttling().Limit != 1 {
		t.Fatalf("limit %d, want 1", g.throttling().Limit)
	}

	gone, cancel := context.WithCancel(ctx)
	errs := make(chan error, 1)
	go func() {
		_, err := g.acquire(gone)
		errs <- err
	}()
	waitFor(t, func() bool { return queued(g) == 1 })
	admitted := make(chan string, 2)
	for i, name := range []string{"first", "second"} {
		go func() {
			if _, err := g.acquire(ctx); err != nil {
				t.Error(err)
			}
			admitted <- name
		}()
		waitFor(t, func() bool { return queued(g) == 2+i })
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose ctx ended: %v, want context.Canceled", err)
	}
	// b answered: a window of 1 at limit 1, the limit is 2, and with c
	// still in flight there is room for one: the first in line.
	g.done(b)
	if got := <-admitted; got != "first" {
		t.Fatalf("admitted %s first", got)
	}
	if queued(g) != 1 {
		t.Fatalf("%d waiting, want the second", queued(g))
	}
	g.done(c)
	if got := <-admitted; got != "second" {
		t.Fatalf("admitted %s second", got)
	}
}

// A throttle that says how long to wait holds the gate that long: no call
// is admitted before, and the waiters go once it has passed.
func TestGateHold(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g := newGate(clock)
	a, _ := g.acquire(context.Background())
	g.throttled(a, time.Hour, 1)
	g.mu.Lock()
	admits := g.admitsAt(g.now())
	g.mu.Unlock()
	if admits {
		t.Fatal("the gate admits a call during the hold")
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	g.mu.Lock()
	admits = g.admitsAt(g.now())
	g.mu.Unlock()
	if !admits {
		t.Fatal("the gate admits no call after the hold")
	}

	// With the real clock: a waiter behind a short hold is admitted when
	// the hold's timer fires.
	g = newGate(nil)
	a, _ = g.acquire(context.Background())
	g.throttled(a, 20*time.Millisecond, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := g.acquire(ctx); err != nil {
		t.Fatalf("a waiter behind a hold of 20ms: %v", err)
	}
}

// A hold that ends between two of the gate's looks at the clock loses no
// waiter. The gate once read the clock twice for one decision: once to
// see whether the hold still held (it did: the call waits) and once to arm
// the timer that ends the wait (it had passed: no timer). With no call in
// flight to wake it, the waiter then waited forever: an apply or teardown
// against a throttling provider hung about once in a hundred runs, every
// call of the provider waiting at its gate (found by a stuck run of
// cmd/bulwark's apply_throttled_backs_off). The clock here moves on 1 ms at
// every read and the hold is 1.5 ms, so every decision straddles its end.
func TestGateHoldEndingBetweenTwoReadsLosesNoWaiter(t *testing.T) {
	for _, waiters := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("%d waiting", waiters), func(t *testing.T) {
			now := time.Unix(1000, 0)
			var mu sync.Mutex
			clock := func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				now = now.Add(time.Millisecond)
				return now
			}
			g := newGate(clock)
			a, _ := g.acquire(context.Background())
			g.throttled(a, 1500*time.Microsecond, 1) // the limit is 1 from here
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs := make(chan error, waiters)
			for range waiters {
				go func() {
					tk, err := g.acquire(ctx)
					if err == nil {
						g.done(tk)
					}
					errs <- err
				}()
			}
			for range waiters {
				if err := <-errs; err != nil {
					g.mu.Lock()
					t.Fatalf("a waiter was never admitted (%v): limit %d, in flight %d, waiting %d, a timer armed: %v",
						err, g.limit, g.inflight, len(g.waiters), g.timer != nil)
				}
			}
		})
	}
}

// The wait before a throttled call goes again: the API's, when it said;
// else from 50–100 ms doubling to a 5–10 s cap.
func TestThrottleWait(t *testing.T) {
	none := func(time.Duration) time.Duration { return 0 }
	all := func(d time.Duration) time.Duration { return d - 1 }
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		jitter     func(time.Duration) time.Duration
		want       time.Duration
	}{
		{1, 3 * time.Second, all, 3 * time.Second},
		{1, 0, none, 50 * time.Millisecond},
		{1, 0, all, 100 * time.Millisecond},
		{2, 0, none, 100 * time.Millisecond},
		{4, 0, all, 800 * time.Millisecond},
		{8, 0, none, 5 * time.Second},
		{100, 0, all, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := throttleWait(tt.attempt, tt.retryAfter, tt.jitter); got != tt.want {
			t.Errorf("throttleWait(%d, %v) = %v, want %v", tt.attempt, tt.retryAfter, got, tt.want)
		}
	}
}

func queued(g *gate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}
