// Package groupcommit lets concurrent Commits share one write: the first
// caller to find no write in flight becomes the leader and flushes
// everything queued; the others wait for the group that carries theirs. A
// backend's flush decides what one group's write is (a transaction, a WAL
// object).
//
// A leader writes one group, its own, and returns to its caller: when
// Commits queued meanwhile are waiting, a goroutine goes on flushing them,
// group after group, so no caller's step waits on writes that are not its
// own. A Deferred Commit (records alone, storage.Commit.Deferred) is queued
// without waiting and starts no write: it rides on the group of the next
// Commit that is waited for, or on Flush.
package groupcommit

import (
	"context"
	"fmt"
	"sync"

	"github.com/bulwark-iac/bulwark/core/storage"
)

// Pending is one Commit waiting for its group's write. The flush sets
// Serial (the state's serial after it) or Err, for each Pending of the
// group; the Queue tells the caller once the flush returned.
type Pending struct {
	Commit storage.Commit
	Serial int64
	Err    error
	// Deferred: its caller does not wait for it (see Queue.Commit).
	Deferred bool
	done     chan struct{}
}

// Queue holds the Commits waiting for a write.
type Queue struct {
	flush func(ctx context.Context, group []*Pending)

	mu       sync.Mutex
	queue    []*Pending
	waited   int // Pendings in queue whose caller waits for them
	flushing bool
	inflight []*Pending // the group being written, taken from queue
}

// New returns a Queue that writes each group with flush.
func New(flush func(ctx context.Context, group []*Pending)) *Queue {
	return &Queue{flush: flush}
}

// Commit queues c and waits for the write that carries it, returning its
// Pending with Serial or Err set. When ctx ends first, Commit stops waiting
// and returns ctx's error: the group's write is not any one caller's, so it
// goes on (c may still be written), under a context that is not cancelled
// with ctx.
//
// A Deferred c that changes no state is queued and returned at once (its
// Pending's Serial and Err unset, done is not to be waited on): it is
// written, in order, with the next group that carries a waited Commit, and
// a failure of that group (or of c alone) is that group's waited Commits'
// error.
func (q *Queue) Commit(ctx context.Context, c storage.Commit) (*Pending, error) {
	p := &Pending{Commit: c, Deferred: c.Deferred && c.Change.Empty(), done: make(chan struct{})}
	q.mu.Lock()
	q.queue = append(q.queue, p)
	if p.Deferred {
		q.mu.Unlock()
		return p, nil
	}
	q.waited++
	lead := !q.flushing
	if lead {
		q.flushing = true
	}
	q.mu.Unlock()
	if lead {
		q.lead(context.WithoutCancel(ctx), false)
	}
	select {
	case <-p.done:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Flush writes what is queued (deferred Commits) and waits for it, and for
// the group being written when it is called (which may carry deferred
// Commits queued before): once it returns, every Commit queued before it
// was written or failed. The error is the first of a deferred Commit of
// those groups, or of the group Flush's own write went in. Nothing queued
// or in flight: nil at once.
func (q *Queue) Flush(ctx context.Context) error {
	q.mu.Lock()
	empty := len(q.queue) == 0
	inflight := q.inflight
	q.mu.Unlock()
	var err error
	if !empty {
		// An empty waited Commit carries them: it writes nothing of its
		// own. Its group is written after the one in flight.
		p, cerr := q.Commit(ctx, storage.Commit{})
		if cerr != nil {
			return cerr
		}
		err = p.Err
	}
	for _, p := range inflight {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, p := range inflight {
		if p.Deferred && p.Err != nil {
			return p.Err
		}
	}
	return err
}

// lead writes one group (the leader's own, when called by Commit) and
// hands the rest to a goroutine of its own (more): the queue stays
// flushing until no waited Commit is queued.
func (q *Queue) lead(ctx context.Context, more bool) {
	for {
		q.mu.Lock()
		if q.waited == 0 {
			// Only deferred Commits (or nothing) are left: they wait for
			// the next waited Commit.
			q.flushing = false
			q.mu.Unlock()
			return
		}
		group := q.queue
		q.queue, q.waited, q.inflight = nil, 0, group
		q.mu.Unlock()
		q.flush(ctx, group)
		// A deferred Commit has no caller to tell: its failure is the
		// failure of the waited ones it was written with.
		var derr error
		for _, g := range group {
			if g.Deferred && g.Err != nil && derr == nil {
				derr = g.Err
			}
		}
		for _, g := range group {
			if derr != nil && !g.Deferred && g.Err == nil {
				g.Err = fmt.Errorf("a deferred record written with this commit failed: %w", derr)
			}
			close(g.done)
		}
		q.mu.Lock()
		q.inflight = nil
		q.mu.Unlock()
		if !more {
			q.mu.Lock()
			if q.waited == 0 {
				q.flushing = false
				q.mu.Unlock()
				return
			}
			q.mu.Unlock()
			// Others queued while this group was written: a goroutine
			// writes theirs, so this caller's step goes on now.
			go q.lead(ctx, true)
			return
		}
	}
}

// Write is a Writer's Commit through q, the same on every backend that
// writes in groups: an empty c is a no-op that returns the current serial
// (serial, which the caller reads under its own lock); a Deferred one
// returns it once queued (storage.Commit.Deferred); any other waits for
// the group that carries it. loc names the backend in the error of a
// caller that stopped waiting (ctx ended: c may still be written).
func (q *Queue) Write(ctx context.Context, c storage.Commit, loc string, serial func() int64) (int64, error) {
	if c.Empty() {
		return serial(), nil
	}
	p, err := q.Commit(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("commit to %s: %w (it may still be written)", loc, err)
	}
	if p.Deferred {
		// Queued: written with the next waited Commit.
		return serial(), nil
	}
	return p.Serial, p.Err
}
