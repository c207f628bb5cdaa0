// Package groupcommit lets concurrent Commits share one write: the first
// caller to find no write in flight becomes the leader and flushes
// everything queued, group after group, until the queue is empty; the
// others wait for the group that carries theirs. A backend's flush decides
// what one group's write is (a transaction, a WAL object).
package groupcommit

import (
	"context"
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
	done   chan struct{}
}

// Queue holds the Commits waiting for a write.
type Queue struct {
	flush func(ctx context.Context, group []*Pending)

	mu       sync.Mutex
	queue    []*Pending
	flushing bool
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
func (q *Queue) Commit(ctx context.Context, c storage.Commit) (*Pending, error) {
	p := &Pending{Commit: c, done: make(chan struct{})}
	q.mu.Lock()
	q.queue = append(q.queue, p)
	lead := !q.flushing
	if lead {
		q.flushing = true
	}
	q.mu.Unlock()
	if lead {
		fctx := context.WithoutCancel(ctx)
		for {
			q.mu.Lock()
			group := q.queue
			q.queue = nil
			if len(group) == 0 {
				q.flushing = false
				q.mu.Unlock()
				break
			}
			q.mu.Unlock()
			q.flush(fctx, group)
			for _, g := range group {
				close(g.done)
			}
		}
	}
	select {
	case <-p.done:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
