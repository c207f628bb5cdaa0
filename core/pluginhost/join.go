package pluginhost

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// join joins the calls of one kind (Reads, Creates) that concurrent
// callers make of one plugin into batch calls (ReadMany, CreateMany): group
// commit, for calls. A call that finds none of the group in flight goes at
// once, alone, on its caller's goroutine, so a lone call waits for nothing
// and is handed to no other goroutine; the calls that arrive while one is in
// flight wait for it to end and then go together, in one batch. So the
// Verify reads (and the Creates) of steps running side by side share round
// trips, and each is still sent after it was asked for: a Read observes
// everything its caller did before asking, and a Create goes only once its
// caller has journaled it as started (the caller asks only then). Nothing
// is ever sent earlier than asked; a call waits only while another is in
// flight. Nor longer than patience: calls queued behind one that takes
// longer than that (a Create of a database that takes minutes) go without
// waiting for it, in a batch of their own beside it, so a slow call never
// holds back the others for more than patience; and once the group's calls
// are seen to take longer than patience (a provider that answers in 50 ms),
// queued calls wait only gatherWindow, long enough for the calls asked in
// the same burst to join them.
type join[Q, R any] struct {
	one  func(context.Context, Q) (R, error)
	many func(context.Context, []Q) ([]Result[R], error)
	// patience is how long the calls queued behind those in flight wait
	// for one of them to end before they go on their own (0: joinPatience).
	patience time.Duration
	// now is the clock the calls are timed with (nil: time.Now).
	now func() time.Time
	// took is how long the group's last call to end took (ns): when that
	// is longer than patience, queued calls wait only gatherWindow.
	took atomic.Int64

	mu     sync.Mutex
	flying int // calls of the group in flight, or about to be
	queue  []*joined[Q, R]
	timer  *time.Timer // armed while calls are queued and no one has taken them
	armed  uint64      // counts the timers armed: a stale one that fires does nothing
}

// joinPatience is how long calls queued behind a call in flight wait for
// it before they go in a call of their own: far longer than a round trip
// to a plugin (well under a millisecond), so calls that take no time share
// calls as much as they can, and short enough that a call taking seconds
// or minutes delays nothing queued behind it by more than that.
const joinPatience = 5 * time.Millisecond

// gatherWindow is how long queued calls wait when the group's calls take
// longer than patience (a provider that answers in 50 ms, say): waiting
// for the one in flight would cost them patience on every round, so they
// wait just long enough for the calls asked in the same burst (the write
// slots one batch's answer frees) to join them.
const gatherWindow = time.Millisecond

// Result is one call of a batch: what the single call would have returned
// (declared in core/providers, which consumers of a batch import).
type Result[R any] = providers.Result[R]

// joined is one caller's call waiting for the next call of the group.
type joined[Q, R any] struct {
	ctx  context.Context
	req  Q
	res  Result[R]
	done chan struct{}
}

// maxJoined is the most calls one batch of the group carries; more wait
// for the next (the same bound the batch reads of a plan use).
const maxJoined = 500

// call answers req: alone at once when no call is in flight, else in the
// batch that follows the one in flight. A caller whose ctx ends while it
// waits returns ctx's error at once: its request is dropped if it was not
// sent yet, and its outcome is unknown if it was (as for a single call
// whose ctx ends).
func (j *join[Q, R]) call(ctx context.Context, req Q) (R, error) {
	j.mu.Lock()
	if j.flying == 0 {
		j.flying = 1
		j.mu.Unlock()
		start := j.clock()
		resp, err := j.one(ctx, req)
		j.ended(start)
		j.next()
		return resp, err
	}
	w := &joined[Q, R]{ctx: ctx, req: req, done: make(chan struct{})}
	j.queue = append(j.queue, w)
	j.armLocked()
	j.mu.Unlock()
	select {
	case <-w.done:
		return w.res.Response, w.res.Err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// next hands the group on when a call of it ends: the calls queued
// meanwhile go in one batch (served from a goroutine of its own, so the
// caller whose call ended returns at once, and the ended call's place in
// flight passes to that batch), or, with none queued, one fewer is in
// flight.
func (j *join[Q, R]) next() {
	j.mu.Lock()
	if len(j.queue) == 0 {
		j.flying--
		j.mu.Unlock()
		return
	}
	j.disarmLocked()
	j.mu.Unlock()
	go j.serve()
}

// armLocked starts the patience timer for what is queued, if it is not
// running; j.mu is held.
func (j *join[Q, R]) armLocked() {
	if j.timer != nil || len(j.queue) == 0 {
		return
	}
	wait := j.queueWait()
	j.armed++
	armed := j.armed
	j.timer = time.AfterFunc(wait, func() { j.impatient(armed) })
}

// queueWait is how long calls queued now wait for a call in flight before
// they go on their own: patience, or gatherWindow (if shorter) when the
// group's last call took longer than patience, since the one in flight
// most likely will too.
func (j *join[Q, R]) queueWait() time.Duration {
	wait := j.patience
	if wait == 0 {
		wait = joinPatience
	}
	if time.Duration(j.took.Load()) > wait {
		return min(wait, gatherWindow)
	}
	return wait
}

// clock is the time by j's clock.
func (j *join[Q, R]) clock() time.Time {
	if j.now != nil {
		return j.now()
	}
	return time.Now()
}

// ended records how long a call of the group that began at start took.
func (j *join[Q, R]) ended(start time.Time) {
	j.took.Store(int64(j.clock().Sub(start)))
}

// disarmLocked stops the patience timer: what is queued is being taken;
// j.mu is held.
func (j *join[Q, R]) disarmLocked() {
	if j.timer != nil {
		j.timer.Stop() // when it already fired, armed tells it it is stale
		j.timer = nil
		j.armed++
	}
}

// impatient runs when calls have been queued for patience behind calls
// still in flight: they go now, in a call of their own beside those.
func (j *join[Q, R]) impatient(armed uint64) {
	j.mu.Lock()
	if armed != j.armed {
		j.mu.Unlock()
		return
	}
	j.timer = nil
	if len(j.queue) == 0 {
		j.mu.Unlock()
		return
	}
	j.flying++
	j.mu.Unlock()
	j.serve()
}

// serve sends what is queued, in batches of at most maxJoined, until the
// queue is empty; it holds one place in flight, given up at the end.
func (j *join[Q, R]) serve() {
	for {
		j.mu.Lock()
		n := min(len(j.queue), maxJoined)
		batch := j.queue[:n:n]
		j.queue = j.queue[n:]
		if n == 0 {
			j.flying--
			j.mu.Unlock()
			return
		}
		j.disarmLocked()
		j.armLocked() // for what is left past maxJoined
		j.mu.Unlock()
		live := batch[:0:0]
		for _, w := range batch {
			if w.ctx.Err() == nil {
				live = append(live, w)
			}
		}
		if len(live) == 0 {
			continue
		}
		j.send(live)
	}
}

// send makes one call of the group for live, and hands each caller its
// result.
func (j *join[Q, R]) send(live []*joined[Q, R]) {
	reqs := make([]Q, len(live))
	for i, w := range live {
		reqs[i] = w.req
	}
	// The call is the group's, not one caller's: no caller's cancellation
	// ends it while another still waits for it (each waiter stops waiting
	// on its own); once every one of them has stopped, it is cancelled, as
	// each of their single calls would have been. The call timeout still
	// bounds it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(live[0].ctx))
	defer cancel()
	var waiting atomic.Int64
	waiting.Store(int64(len(live)))
	for _, w := range live {
		stop := context.AfterFunc(w.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	var res []Result[R]
	var err error
	start := j.clock()
	if len(live) == 1 {
		var resp R
		resp, err = j.one(ctx, reqs[0])
		res = []Result[R]{{Response: resp, Err: err}}
		err = nil
	} else {
		res, err = j.many(ctx, reqs)
	}
	j.ended(start) // before the callers, who ask the next calls, are answered
	for i, w := range live {
		if err != nil {
			w.res = Result[R]{Err: err}
		} else {
			w.res = res[i]
		}
		close(w.done)
	}
}
