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
	"time"

	"github.com/bulwark-iac/bulwark/core/state"
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

// Stack is what Prepare checks a group against: the stack as of the last
// group written.
type Stack struct {
	Loc     string // the backend's Location, for errors
	Where   string // where resources are stored, for a level's error
	Lineage string
	// Adoptable: the stack holds nothing yet, so a first Meta may name its
	// lineage (storage.NextLineage).
	Adoptable bool
	Serial    int64
	Now       time.Time
	Sealing   state.Sealing
}

// Accepted is one Commit of a group as its backend stores it.
type Accepted struct {
	*Pending
	// Sealed is its change checked and sealed (storage.SealChange).
	Sealed storage.Change
	// Lineage is the stack's with it: its records are stamped with it.
	Lineage string
	// Stored is what encode laid it out as, for its backend's write.
	Stored any
}

// Prepare is what every backend that writes in groups does to a group
// before writing it: each Commit, in order, has its lineage checked
// (storage.NextLineage), its change checked and sealed (storage.SealChange)
// and its records stamped (storage.Stamp); then encode, when set, lays it
// out as its backend stores it. A Commit that fails any of them fails
// alone (its Err set, nothing of it in the group) and the others go on.
// Each accepted Commit's Serial is the state's after it (a Commit of
// records alone changes no state). Prepare returns the accepted Commits,
// oldest first, and the stack's lineage and serial after them.
func Prepare(group []*Pending, s Stack, encode func(*Accepted) error) (acc []*Accepted, lineage string, serial int64) {
	lineage, serial = s.Lineage, s.Serial
	for _, p := range group {
		ch := p.Commit.Change
		next, err := storage.NextLineage(s.Loc, lineage, ch.Meta, s.Adoptable)
		if err != nil {
			p.Err = err
			continue
		}
		sealed, err := storage.SealChange(ch, s.Where, s.Sealing)
		if err != nil {
			p.Err = fmt.Errorf("commit to %s: %w", s.Loc, err)
			continue
		}
		// Stamped in place: the caller learns the ids.
		storage.Stamp(p.Commit.Records, s.Now, next)
		a := &Accepted{Pending: p, Sealed: sealed, Lineage: next}
		if encode != nil {
			if err := encode(a); err != nil {
				p.Err = fmt.Errorf("commit to %s: %w", s.Loc, err)
				continue
			}
		}
		lineage = next
		if !ch.Empty() {
			serial++
		}
		p.Serial = serial
		acc = append(acc, a)
	}
	return acc, lineage, serial
}
