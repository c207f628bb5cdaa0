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

func (s *slots) give() { <-s.free }

type writesKey struct{}

// WritesScarce reports whether, in the Execute ctx was given to, the write
// slots are all taken (this Execute's among them) or other steps wait for
// one. An Execute whose provider can read back what it made in the same
// call asks for that read only when they are not: the read holds the
// write slot for a second round trip, which costs nothing while another
// slot stands free, and saves Verify a call of its own (a chain, where
// nothing else overlaps). When they are scarce, the slot is worth more to
// the steps behind, and Verify reads on a read slot instead. (Whether
// anyone waits at this instant is not enough: in layers, the next layer's
// steps become ready while the Creates of this one are under way.)
func WritesScarce(ctx context.Context) bool {
	s, ok := ctx.Value(writesKey{}).(*slots)
	return ok && (s.waiting.Load() > 0 || len(s.free) >= cap(s.free))
}
