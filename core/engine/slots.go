package engine

import (
	"context"
	"sync/atomic"
)

// slots bounds how many of one kind of work (the writes, or the reads) run
// at once. A step asks for a slot just before the work and gives it back the
// moment the work returns: a step never holds a slot while it waits for
// another, so the two kinds cannot wait on each other.
type slots struct {
	free    chan struct{}
	waiting atomic.Int64 // steps asking for a slot that none has given yet
}

func newSlots(n int) *slots {
	return &slots{free: make(chan struct{}, max(1, n))}
}

// take waits for a slot (waiters are served in the order they came: a
// channel's senders queue) or for ctx to end.
func (s *slots) take(ctx context.Context) error {
	select {
	case s.free <- struct{}{}:
		return nil
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case s.free <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tryTake takes a slot if one is free now, without waiting.
func (s *slots) tryTake() bool {
	select {
	case s.free <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *slots) give() { <-s.free }

type writesKey struct{}

// execContext is ctx marked as the context of an Execute of the run
// (InRun): the one made for the run when ctx is the walk's, as it is.
func (sl stepSlots) execContext(ctx context.Context) context.Context {
	if ctx == sl.base && sl.exec != nil {
		return sl.exec
	}
	return context.WithValue(ctx, writesKey{}, sl)
}

// InRun reports whether ctx is that of an Execute of a run (a step), not
// of a compensation (which takes no read or write slot of the run: a
// rollback runs its own walk, up to Parallelism undos at once). A step's
// Create or Delete asks its provider for no read-back in the same call:
// the read would hold the write slot for a second round trip, where the
// step's Verify reads on a read slot while its "execute ok" is made durable
// and the steps that depend on it check (in a teardown, each reads its
// ownership meanwhile).
func InRun(ctx context.Context) bool {
	_, ok := ctx.Value(writesKey{}).(stepSlots)
	return ok
}
