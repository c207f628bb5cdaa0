package pluginhost

import (
	"context"
	"sync"

	"github.com/bulwark-iac/bulwark/sdk"
)

// readJoin joins the Reads that concurrent callers make of one plugin into
// ReadMany calls (group commit, for reads): a Read that finds no call of
// the group in flight goes at once, alone, so a lone Read waits for
// nothing; the Reads that arrive while a call is in flight wait for it to
// end and then go together, in one ReadMany. So the Verify reads of steps
// running side by side (and a teardown's Check reads) share round trips,
// and each is still sent after it was asked for: it observes everything
// its caller did before asking.
type readJoin struct {
	one  func(context.Context, *sdk.ReadRequest) (*sdk.ReadResponse, error)
	many func(context.Context, []*sdk.ReadRequest) ([]ReadResult, error)

	mu     sync.Mutex
	flying bool // a call of the group is in flight, or about to be
	queue  []*joinedRead
}

// joinedRead is one caller's Read waiting for the next call of the group.
type joinedRead struct {
	ctx  context.Context
	req  *sdk.ReadRequest
	res  ReadResult
	done chan struct{}
}

// maxJoined is the most Reads one ReadMany of the group carries; more wait
// for the next (the same bound the batch reads of a plan use).
const maxJoined = 500

// read answers req: alone at once when no call is in flight, else in the
// ReadMany that follows the one in flight. A caller whose ctx ends while it
// waits returns ctx's error; its read is dropped if it was not sent yet.
func (j *readJoin) read(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	j.mu.Lock()
	if !j.flying {
		j.flying = true
		j.mu.Unlock()
		resp, err := j.one(ctx, req)
		j.next()
		return resp, err
	}
	w := &joinedRead{ctx: ctx, req: req, done: make(chan struct{})}
	j.queue = append(j.queue, w)
	j.mu.Unlock()
	select {
	case <-w.done:
		return w.res.Response, w.res.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next hands the group on when a call of it ends: the Reads queued
// meanwhile go in one ReadMany (served from a goroutine of its own, so the
// caller whose call ended returns at once), or, with none queued, the next
// Read goes alone.
func (j *readJoin) next() {
	j.mu.Lock()
	if len(j.queue) == 0 {
		j.flying = false
		j.mu.Unlock()
		return
	}
	j.mu.Unlock()
	go j.serve()
}

// serve sends what is queued, in ReadManys of at most maxJoined, until the
// queue is empty.
func (j *readJoin) serve() {
	for {
		j.mu.Lock()
		n := min(len(j.queue), maxJoined)
		batch := j.queue[:n:n]
		j.queue = j.queue[n:]
		if n == 0 {
			j.flying = false
			j.mu.Unlock()
			return
		}
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
		reqs := make([]*sdk.ReadRequest, len(live))
		for i, w := range live {
			reqs[i] = w.req
		}
		// The call is the group's, not one caller's: no caller's
		// cancellation ends it (each waiter stops waiting on its own); the
		// call timeout still bounds it.
		ctx := context.WithoutCancel(live[0].ctx)
		var res []ReadResult
		var err error
		if len(live) == 1 {
			var resp *sdk.ReadResponse
			resp, err = j.one(ctx, reqs[0])
			res = []ReadResult{{Response: resp, Err: err}}
			err = nil
		} else {
			res, err = j.many(ctx, reqs)
		}
		for i, w := range live {
			if err != nil {
				w.res = ReadResult{Err: err}
			} else {
				w.res = res[i]
			}
			close(w.done)
		}
	}
}
