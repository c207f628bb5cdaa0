package providers

import (
	"context"
	"errors"
	"sync/atomic"
)

// ErrNotSent is the error of a call that never went out: the provider
// received nothing of it, so it changed nothing. A call returns it (wrapped)
// only when its SendStop was stopped before the call was sent (see
// SendStop); any other failure, even one before the call was sent, is an
// error of its own.
var ErrNotSent = errors.New("not sent: stopped before the call went out")

// SendStop lets the calls made under one context give up while they wait
// to be sent (a plugin host holds a call back while the provider throttles:
// pluginhost's gate), once stop is closed, as long as none of them has been
// sent yet. A step's Execute makes its calls under one (a first interrupt
// closes stop): while none has gone out, the step has changed nothing and
// may end unsent instead of waiting for the provider's rate limit; once one
// has gone out, the rest are sent as they come (what the first did must
// be finished or undone).
type SendStop struct {
	stop <-chan struct{}
	sent atomic.Bool
}

type sendStopKey struct{}

// WithSendStop returns ctx carrying a new SendStop on stop (nil: never
// stopped), and that SendStop.
func WithSendStop(ctx context.Context, stop <-chan struct{}) (context.Context, *SendStop) {
	s := &SendStop{stop: stop}
	return context.WithValue(ctx, sendStopKey{}, s), s
}

// SendStopOf returns the SendStop ctx carries (nil: none; its methods are
// nil-safe).
func SendStopOf(ctx context.Context) *SendStop {
	s, _ := ctx.Value(sendStopKey{}).(*SendStop)
	return s
}

// Stopped returns what a call waiting to be sent waits on besides being
// admitted: stop, while nothing has been sent under s; nil (never ready)
// once something has, or with no stop.
func (s *SendStop) Stopped() <-chan struct{} {
	if s == nil || s.sent.Load() {
		return nil
	}
	return s.stop
}

// Sending records that a call is going out under s: from then on no call
// under it gives up for stop. A call that is sent calls it before it sends.
func (s *SendStop) Sending() {
	if s != nil {
		s.sent.Store(true)
	}
}

// Unsent reports whether nothing has been sent under s.
func (s *SendStop) Unsent() bool {
	return s == nil || !s.sent.Load()
}
