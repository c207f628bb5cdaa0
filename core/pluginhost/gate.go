package pluginhost

import (
	"context"
	"errors"
	"sync"
	"time"
)

// gate bounds the calls made of one plugin at once, the way TCP bounds
// what it sends: additive increase, multiplicative decrease (AIMD). It
// starts with no limit of its own (the engine's --parallelism bounds the
// calls), and takes one only once the provider answers a call throttled
// (an sdk.Throttled diagnostic: the API's rate limit refused it): the limit
// becomes half of what was in flight then (at least 1), and every window
// of that many calls answered grows it by one, until it is above the most
// calls ever asked for at once, where it no longer limits anything and is
// dropped. A throttle answered to a call admitted before the last decrease
// decreases nothing more: the calls in flight when the limit was cut were
// all sent into the same congestion, and one cut answers them all (TCP
// halves once per round trip, not once per lost packet).
//
// A throttle that says how long to wait (RetryAfter) also holds the gate:
// no call is admitted before then, so the calls waiting do not all run
// into the same refusal as soon as a slot frees. A call waits in the order
// it came; one whose ctx ends stops waiting.
type gate struct {
	now func() time.Time

	mu       sync.Mutex
	limit    int // calls allowed at once; 0: no limit
	inflight int
	peak     int    // the most calls ever asked for at once, in flight and waiting
	epoch    uint64 // counts the decreases
	acks     int    // calls answered since the limit last grew
	hold     time.Time
	timer    *time.Timer // wakes the waiters when hold ends
	waiters  []*waiter

	stats Throttling
}

// waiter is a call waiting for the gate: granted (under gate.mu) and ready
// closed once it is admitted.
type waiter struct {
	ready   chan struct{}
	granted bool
	epoch   uint64
}

// ticket is one admitted call: the epoch it was admitted in.
type ticket struct{ epoch uint64 }

// Throttling is what a plugin's gate saw: how many calls the provider
// answered throttled, how many were sent again, and the limit on calls at
// once it lowered to (Lowest; 0 when it never did) and holds now (Limit; 0
// when none).
type Throttling struct {
	Throttled int
	Retried   int
	Lowest    int
	Limit     int
}

func newGate(now func() time.Time) *gate {
	if now == nil {
		now = time.Now
	}
	return &gate{now: now}
}

// acquire admits one call, waiting while the gate is full or held. It
// returns ctx's error when ctx ends first.
func (g *gate) acquire(ctx context.Context) (ticket, error) {
	return g.acquireOr(ctx, nil)
}

// errStopped is acquireOr's error when stop was closed first.
var errStopped = errors.New("stopped while waiting to be sent")

// acquireOr is acquire that also gives up, with errStopped, when stop is
// closed while the call waits (nil: never). A call the gate admits at once
// is admitted, whatever stop says.
func (g *gate) acquireOr(ctx context.Context, stop <-chan struct{}) (ticket, error) {
	g.mu.Lock()
	g.peak = max(g.peak, g.inflight+len(g.waiters)+1)
	now := g.now()
	if len(g.waiters) == 0 && g.admitsAt(now) {
		g.inflight++
		t := ticket{g.epoch}
		g.mu.Unlock()
		return t, nil
	}
	// In line behind the others: grantLocked admits the first of the line
	// if the gate has room after all, and arms the hold's timer if not.
	w := &waiter{ready: make(chan struct{})}
	g.waiters = append(g.waiters, w)
	g.grantLocked()
	g.mu.Unlock()
	why := errStopped
	select {
	case <-w.ready:
		return ticket{w.epoch}, nil
	case <-ctx.Done():
		why = ctx.Err()
	case <-stop:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.granted {
		// Admitted as ctx ended: give the place to the next.
		g.inflight--
	} else {
		for i, o := range g.waiters {
			if o == w {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				break
			}
		}
	}
	g.grantLocked()
	return ticket{}, why
}

// admitsAt reports whether one more call may go at now.
//
// Every decision of the gate reads the clock once and decides from that
// one reading: whether a call may go, and whether the calls left waiting
// need the timer. Reading it twice (once to admit, once to arm) let a
// hold end between the two: the waiter was refused by the first (the hold
// still held) and given no timer by the second (it had passed), and with
// no call in flight to end and wake it, it waited forever
// (TestGateHoldEndingBetweenTwoReadsLosesNoWaiter).
func (g *gate) admitsAt(now time.Time) bool {
	return (g.limit == 0 || g.inflight < g.limit) && !now.Before(g.hold)
}

// grantLocked admits the waiters the gate has room for, first come first.
func (g *gate) grantLocked() {
	now := g.now()
	for len(g.waiters) > 0 && g.admitsAt(now) {
		w := g.waiters[0]
		g.waiters = g.waiters[1:]
		g.inflight++
		w.granted, w.epoch = true, g.epoch
		close(w.ready)
	}
	g.armLocked(now)
}

// armLocked starts the timer that admits the waiters when the hold ends,
// if calls wait behind it. now is the reading the caller just found them
// not admitted at: either the hold had not ended then (the timer ends
// the wait) or the gate was full (a call in flight ends, and its done or
// throttled admits the next).
func (g *gate) armLocked(now time.Time) {
	if g.timer != nil || len(g.waiters) == 0 {
		return
	}
	wait := g.hold.Sub(now)
	if wait <= 0 {
		return
	}
	g.timer = time.AfterFunc(wait, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.timer = nil
		g.grantLocked()
	})
}

// done ends an admitted call answered without a throttle: one more call
// of the window toward growing the limit (any answer but a throttle says
// the provider kept up with it).
func (g *gate) done(t ticket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.limit > 0 {
		g.acks++
		if g.acks >= g.limit {
			g.limit++
			g.acks = 0
			if g.limit > g.peak {
				g.limit = 0 // above anything ever asked for: it limits nothing
			}
		}
	}
	g.grantLocked()
}

// throttled ends an admitted call that n requests of (one, but for a
// batch) the provider answered throttled, asking to wait retryAfter (0:
// it did not say): the limit is halved unless a decrease
// already answered the congestion this call was sent into, and the gate is
// held until retryAfter has passed.
func (g *gate) throttled(t ticket, retryAfter time.Duration, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stats.Throttled += n
	if t.epoch == g.epoch {
		g.limit = max(1, g.inflight/2)
		g.epoch++
		g.acks = 0
		if g.stats.Lowest == 0 || g.limit < g.stats.Lowest {
			g.stats.Lowest = g.limit
		}
	}
	g.inflight--
	if retryAfter > 0 {
		if until := g.now().Add(retryAfter); until.After(g.hold) {
			g.hold = until
			if g.timer != nil && g.timer.Stop() {
				g.timer = nil // armed for the earlier end: armed again below
			}
		}
	}
	g.grantLocked()
}

// retried counts n requests sent again after a throttle.
func (g *gate) retried(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stats.Retried += n
}

// throttling reports what the gate saw so far.
func (g *gate) throttling() Throttling {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	s.Limit = g.limit
	return s
}
