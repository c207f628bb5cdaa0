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

// WritesScarce reports whether, in the Execute ctx was given to, another
// step wants a write slot or soon will: the write slots are all taken
// (this Execute's among them), a step waits for one, or a step is on deck
// (checking, or waiting for what it depends on to be verified, before it
// asks for one). An Execute whose provider can read back what it made in
// the same call asks for that read only when none does: the read holds
// the write slot for a second round trip, which costs nothing when no one
// else will want the slot meanwhile, and saves Verify a call of its own (a
// chain, where nothing else overlaps). Otherwise the slot is worth more to
// the steps behind, and Verify reads on a read slot instead. (Whether
// anyone waits for a write slot at this instant is not enough: at the
// start of a run, and in layers, the steps that will want the slots are
// still checking while the first Creates begin.)
func WritesScarce(ctx context.Context) bool {
	sl, ok := ctx.Value(writesKey{}).(stepSlots)
	if !ok {
		return false
	}
	w, d := sl.writes, sl.deck
	return w.waiting.Load() > 0 || len(w.free) >= cap(w.free) || d.waiting.Load() > 0 || len(d.free) > 0
}
