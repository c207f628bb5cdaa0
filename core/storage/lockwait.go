package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Delays between a LockWait's tries: the first retry comes soon (a holder
// that is finishing lets go within moments), later ones back off so a long
// wait costs the backend little.
const (
	lockPollFirst = 100 * time.Millisecond
	lockPollMax   = 2 * time.Second
)

// LockWait takes be's lock for h as Lock does, but while another live
// holder has it (ErrLocked) tries again, polling with backoff (100 ms,
// doubling, at most 2 s apart), until timeout has passed since the first
// try: Terraform's -lock-timeout. waiting, when set, is called once, with
// the holder (nil when unreadable), when the first try finds the lock held.
// A timeout of 0 or less is Lock itself: a held lock fails at once. Any
// other error (lineage, a moved stack, the backend unreachable) is returned
// at once. A lock still held when timeout passes fails with the last
// *LockedError (errors.Is ErrLocked, exit 4), saying how long it waited;
// when ctx ends first (an interrupt), the wait stops the same way, nothing
// taken.
func LockWait(ctx context.Context, be Backend, h Holder, timeout time.Duration, waiting func(*Holder)) (Writer, error) {
	w, err := be.Lock(ctx, h)
	if timeout <= 0 || !errors.Is(err, ErrLocked) {
		return w, err
	}
	if waiting != nil {
		var le *LockedError
		var holder *Holder
		if errors.As(err, &le) {
			holder = le.Holder
		}
		waiting(holder)
	}
	deadline := time.Now().Add(timeout)
	delay := lockPollFirst
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("%w (still held after waiting %s for it: --lock-timeout)", err, timeout)
		}
		t := time.NewTimer(min(delay, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (stopped waiting for it: %v)", err, context.Cause(ctx))
		case <-t.C:
		}
		if !h.Since.IsZero() {
			// The holder holds it from when it takes it, not from when it
			// began to wait.
			h.Since = time.Now().UTC()
		}
		w, err = be.Lock(ctx, h)
		if !errors.Is(err, ErrLocked) {
			return w, err
		}
		delay = min(2*delay, lockPollMax)
	}
}

// WithLockTimeout is be whose Lock is LockWait's, with timeout and waiting
// (be itself when timeout is 0 or less): for a caller that hands the
// backend on to what takes the lock (state migrate, ack).
func WithLockTimeout(be Backend, timeout time.Duration, waiting func(*Holder)) Backend {
	if timeout <= 0 {
		return be
	}
	return lockWaiter{Backend: be, timeout: timeout, waiting: waiting}
}

type lockWaiter struct {
	Backend
	timeout time.Duration
	waiting func(*Holder)
}

func (b lockWaiter) Lock(ctx context.Context, h Holder) (Writer, error) {
	return LockWait(ctx, b.Backend, h, b.timeout, b.waiting)
}
