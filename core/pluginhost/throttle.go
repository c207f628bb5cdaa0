package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/providers"
)

// The backoff of a call answered throttled without a wait of the API's
// own: backoffFirst, doubling each time the same call is throttled again,
// up to backoffMax, each wait drawn between half of that and all of it so
// that calls throttled together do not come back together.
const (
	backoffFirst = 100 * time.Millisecond
	backoffMax   = 10 * time.Second
)

// throttleWait is how long a call answered throttled for the attempt-th
// time (1 for the first) waits before it goes again: the API's retryAfter
// when it gave one, else the backoff. jitter(d) draws a duration in [0, d).
func throttleWait(attempt int, retryAfter time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := backoffFirst
	for i := 1; i < attempt && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	return d/2 + jitter(d/2+1)
}

func jitter(d time.Duration) time.Duration { return rand.N(d) }

// Throttling reports what the plugin's gates have seen, together: the
// calls the provider answered throttled, those sent again, and how far the
// calls at once were lowered (the lower of the two gates).
func (p *Plugin) Throttling() Throttling {
	r, w := p.reading.throttling(), p.writing.throttling()
	lower := func(a, b int) int {
		if a == 0 || (b != 0 && b < a) {
			return b
		}
		return a
	}
	return Throttling{Throttled: r.Throttled + w.Throttled, Retried: r.Retried + w.Retried,
		Lowest: lower(r.Lowest, w.Lowest), Limit: lower(r.Limit, w.Limit)}
}

// pause waits d between a throttled call and its next try, or until ctx
// ends.
func (p *Plugin) pause(ctx context.Context, d time.Duration) error {
	if p.host.opts.pause != nil {
		return p.host.opts.pause(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// gated makes one call of the plugin through its gate g (see gate), and
// makes it again, the same request, for as long as the provider answers it
// throttled (throttle says whether it did): a throttle never fails the
// call. A Create carries its idempotency key, so its retry finds what a
// try the provider did not answer as throttled made; the other calls are
// idempotent. Each try has the whole call timeout. Only ctx ending stops
// it, with ctx's error.
//
// The wait is journaled nowhere, and needs no record of its own: a Create
// is sent only once its step's "execute started" record is durable, and
// that record's id is the key every try carries, so a crash during the
// backoff leaves a Create in flight with a known key, which resume
// resolves by that key as after any crash mid-Create
// (docs/architecture.md, "The plugin host's backoff and the journal").
//
// A call that waits at the gate to be sent the first time gives up when
// ctx's providers.SendStop is stopped (a first interrupt) before anything
// was sent under it: nothing went out, and the error wraps
// providers.ErrNotSent. Once a try has gone out the call is the provider's:
// it is retried through its backoff as before, since what a try answered
// throttled may have half done is finished by the retry.
func gated[R any](ctx context.Context, p *Plugin, g *gate, method string, call func(context.Context) (R, error),
	throttle func(R, error) (providers.Diagnostic, bool)) (R, error) {
	ss := providers.SendStopOf(ctx)
	for attempt := 1; ; attempt++ {
		t, err := g.acquireOr(ctx, ss.Stopped())
		if err != nil {
			var zero R
			return zero, p.gateError(method, err)
		}
		ss.Sending()
		resp, err := call(ctx)
		d, ok := throttle(resp, err)
		if !ok {
			g.done(t)
			return resp, err
		}
		if err := p.backOff(ctx, g, t, method, attempt, 1, d); err != nil {
			var zero R
			return zero, err
		}
	}
}

// gatedBatch is gated for a batch call (ReadMany, ValidateMany,
// CreateMany), which goes through the gate as one call: the requests
// answered throttled (throttle says which) are sent again, together, in
// the batch after the wait, and every other request keeps the answer it
// had. An error of the whole call ends it, unless the call itself was
// answered throttled (every request is sent again).
func gatedBatch[Q, R any](ctx context.Context, p *Plugin, g *gate, method string, reqs []Q,
	call func(context.Context, []Q) ([]R, error), throttle func(R) (providers.Diagnostic, bool)) ([]R, error) {
	out := make([]R, len(reqs))
	pending := make([]int, len(reqs)) // the indexes in reqs still to answer
	for i := range pending {
		pending[i] = i
	}
	ss := providers.SendStopOf(ctx)
	for attempt := 1; ; attempt++ {
		t, err := g.acquireOr(ctx, ss.Stopped())
		if err != nil {
			return nil, p.gateError(method, err)
		}
		ss.Sending()
		batch := make([]Q, len(pending))
		for i, at := range pending {
			batch[i] = reqs[at]
		}
		res, err := call(ctx, batch)
		if err != nil {
			d, ok := providers.IsThrottled(err)
			if !ok {
				g.done(t)
				return nil, err
			}
			if err := p.backOff(ctx, g, t, method, attempt, len(pending), d); err != nil {
				return nil, err
			}
			continue
		}
		var again []int
		var worst providers.Diagnostic
		for i, r := range res {
			if d, ok := throttle(r); ok {
				again = append(again, pending[i])
				worst.RetryAfter = max(worst.RetryAfter, d.RetryAfter)
				worst.Summary = d.Summary
				continue
			}
			out[pending[i]] = r
		}
		if len(again) == 0 {
			g.done(t)
			return out, nil
		}
		if err := p.backOff(ctx, g, t, method, attempt, len(again), worst); err != nil {
			return nil, err
		}
		pending = again
	}
}

// backOff ends the call t admitted by g that n requests of were answered
// throttled (d, the throttled diagnostic: its RetryAfter), logs it, and
// waits before they go again.
func (p *Plugin) backOff(ctx context.Context, g *gate, t ticket, method string, attempt, n int, d providers.Diagnostic) error {
	g.throttled(t, d.RetryAfter, n)
	wait := throttleWait(attempt, d.RetryAfter, jitter)
	p.host.opts.Logger.Info("provider throttled the call; backing off", "provider", p.cfg.Name, "method", method,
		"requests", n, "attempt", attempt, "wait", wait, "concurrency", g.throttling().Limit, "said", d.Summary)
	if err := p.pause(ctx, wait); err != nil {
		return fmt.Errorf("provider %s: %s was throttled (%s) and waits to be retried: %w", p.cfg.Name, method, printable.Text(d.Summary), err)
	}
	g.retried(n)
	return nil
}

func (p *Plugin) gateError(method string, err error) error {
	if errors.Is(err, errStopped) {
		err = providers.ErrNotSent
	}
	return fmt.Errorf("provider %s: %s: waiting for the provider's rate limit: %w", p.cfg.Name, method, err)
}

// throttledErr is the throttle check of a call whose answer is its error.
func throttledErr[R any](_ R, err error) (providers.Diagnostic, bool) {
	return providers.IsThrottled(err)
}

// throttledResult is the throttle check of one result of a batch.
func throttledResult[R any](r Result[R]) (providers.Diagnostic, bool) {
	return providers.IsThrottled(r.Err)
}
