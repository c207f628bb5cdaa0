package pluginhost

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// recordPauses replaces the waits between a throttled call and its retry
// with none, and records what each would have been.
func recordPauses(p *Plugin) *[]time.Duration {
	var mu sync.Mutex
	waits := &[]time.Duration{}
	p.host.opts.pause = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*waits = append(*waits, d)
		return ctx.Err()
	}
	return waits
}

// Every call a real plugin process answers throttled goes again, the same
// request, after the wait the provider asked for, until it is answered: no
// throttle reaches the caller, a throttled Create made nothing (its retry
// makes the one resource), and the plugin's Throttling counts them.
func TestThrottledCallsRetried(t *testing.T) {
	for _, mode := range []string{"", "batch"} {
		t.Run("mode="+mode, func(t *testing.T) {
			p, ctx := startTestPlugin(t, mode)
			waits := recordPauses(p)
			thing := func(name string) *providers.CreateRequest {
				return &providers.CreateRequest{Type: "thing", Name: name, IdempotencyKey: "k-" + name}
			}

			ds, err := p.ValidateResource(ctx, &providers.ValidateResourceRequest{Type: "thing", Name: "throttled"})
			if err != nil || ds.HasError() {
				t.Fatalf("ValidateResource: %v %v", ds, err)
			}
			made, err := p.Create(ctx, thing("throttled"))
			if err != nil || made.ID != "throttled-1" {
				t.Fatalf("Create: %+v %v, want the first and only resource", made, err)
			}
			got, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "throttled", ID: made.ID})
			if err != nil || !got.Exists {
				t.Fatalf("Read: %+v %v", got, err)
			}
			if _, err := p.Update(ctx, &providers.UpdateRequest{Type: "thing", Name: "throttled", ID: made.ID}); err != nil {
				t.Fatalf("Update: %v", err)
			}
			if _, err := p.Delete(ctx, &providers.DeleteRequest{Type: "thing", Name: "throttled", ID: made.ID}); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			want := map[string]any{"validate": 2.0, "create": 2.0, "read": 2.0, "update": 2.0, "delete": 2.0}
			if th := sizes(t, ctx, p, "throttles"); !reflect.DeepEqual(th, want) {
				t.Errorf("the plugin throttled %v, want %v", th, want)
			}
			if len(*waits) != 10 || (*waits)[0] != time.Millisecond {
				t.Errorf("waits %v, want ten of the 1ms the plugin asked for", *waits)
			}
			th := p.Throttling()
			if th.Throttled != 10 || th.Retried != 10 || th.Lowest != 1 {
				t.Errorf("Throttling %+v, want 10 throttled, 10 retried, lowered to 1", th)
			}
		})
	}
}

// In a batch call only the requests answered throttled go again; the
// others keep their answers and are not sent twice.
func TestThrottledBatchRetried(t *testing.T) {
	p, ctx := startTestPlugin(t, "batch")
	waits := recordPauses(p)
	var reqs []*providers.CreateRequest
	for _, name := range []string{"a", "throttled", "b"} {
		reqs = append(reqs, &providers.CreateRequest{Type: "thing", Name: name, IdempotencyKey: "k-" + name})
	}
	res, err := p.CreateMany(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Response == nil || r.Response.ID == "" {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	// a and b made once each in the first batch; throttled, refused there
	// and by its first retry (alone), made by the second.
	if res[0].Response.ID != "a-1" || res[2].Response.ID != "b-2" || res[1].Response.ID != "throttled-3" {
		t.Errorf("ids %s %s %s", res[0].Response.ID, res[1].Response.ID, res[2].Response.ID)
	}
	if got := sizes(t, ctx, p, "batches"); !reflect.DeepEqual(got, []any{3.0}) {
		t.Errorf("CreateManys %v, want the one of 3 (the retries go alone)", got)
	}
	if len(*waits) != 2 {
		t.Errorf("waits %v, want 2", *waits)
	}
	// The Creates' throttles lowered the writes' gate only: reads go on.
	if r, w := p.reading.throttling(), p.writing.throttling(); r.Lowest != 0 || r.Limit != 0 || w.Lowest != 1 {
		t.Errorf("after throttled Creates: reads' gate %+v, writes' %+v; want reads unlimited, writes lowered to 1", r, w)
	}

	vs, err := p.ValidateMany(ctx, []*providers.ValidateResourceRequest{{Type: "thing", Name: "x"}, {Type: "thing", Name: "throttled"}})
	if err != nil || len(vs) != 2 || vs[1].Diagnostics.HasError() || vs[1].Err != nil {
		t.Fatalf("ValidateMany: %+v %v", vs, err)
	}
	rs, err := p.ReadMany(ctx, []*providers.ReadRequest{{Type: "thing", Name: "x"}, {Type: "thing", Name: "throttled", ID: res[1].Response.ID}})
	if err != nil || len(rs) != 2 || rs[1].Err != nil || !rs[1].Response.Exists {
		t.Fatalf("ReadMany: %+v %v", rs, err)
	}
}

// A call waiting to be retried stops when its ctx ends, with ctx's error.
func TestThrottledStopsWithContext(t *testing.T) {
	p, ctx := startTestPlugin(t, "")
	ctx, cancel := context.WithCancel(ctx)
	p.host.opts.pause = func(ctx context.Context, d time.Duration) error {
		cancel()
		<-ctx.Done()
		return context.Cause(ctx)
	}
	_, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "throttled", IdempotencyKey: "k"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Create cancelled while backing off: %v, want context.Canceled", err)
	}
	if th := p.Throttling(); th.Throttled != 1 || th.Retried != 0 {
		t.Errorf("Throttling %+v, want 1 throttled and none retried", th)
	}
}

// A call held at the gate (the provider throttled, the calls at once were
// lowered, and the gate is full) gives up when its SendStop is stopped
// before anything went out under it: the error wraps
// providers.ErrNotSent, and the provider received nothing (it makes
// nothing). One the gate
// admits at once is sent whatever the stop says, and so is every call
// made under a SendStop something was already sent under: what went out
// must be finished.
func TestHeldCallGivesUpWhenStoppedBeforeSending(t *testing.T) {
	p, ctx := startTestPlugin(t, "")
	create := func(ctx context.Context, name string) (*providers.CreateResponse, error) {
		return p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: name, IdempotencyKey: "k-" + name})
	}
	// Two in flight, one answered throttled: the limit is 1, and the other
	// keeps the gate full until it is done.
	a, _ := p.writing.acquire(ctx)
	b, _ := p.writing.acquire(ctx)
	p.writing.throttled(a, 0, 1)
	if l := p.writing.throttling().Limit; l != 1 {
		t.Fatalf("limit %d, want 1", l)
	}

	stop := make(chan struct{})
	held, ss := providers.WithSendStop(ctx, stop)
	errs := make(chan error, 1)
	go func() {
		_, err := create(held, "held")
		errs <- err
	}()
	waitFor(t, func() bool { return queued(p.writing) == 1 })
	close(stop)
	select {
	case err := <-errs:
		if !errors.Is(err, providers.ErrNotSent) {
			t.Fatalf("a held Create stopped before it was sent: %v, want providers.ErrNotSent", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a held Create stopped before it was sent still waits at the gate")
	}
	if !ss.Unsent() || queued(p.writing) != 0 {
		t.Fatalf("unsent %v, %d still queued: want nothing sent and the queue empty", ss.Unsent(), queued(p.writing))
	}

	// Something sent under a SendStop already: a held call waits to be
	// sent, stopped or not, and goes once the gate has room.
	sent, ss2 := providers.WithSendStop(ctx, stop)
	if _, err := p.Read(sent, &providers.ReadRequest{Type: "thing", Name: "probe"}); err != nil {
		t.Fatal(err)
	}
	if ss2.Unsent() {
		t.Fatal("a Read went out under the SendStop, which still says nothing was sent")
	}
	made := make(chan *providers.CreateResponse, 1)
	go func() {
		r, err := create(sent, "after")
		if err != nil {
			t.Error(err)
		}
		made <- r
	}()
	waitFor(t, func() bool { return queued(p.writing) == 1 })
	p.writing.done(b)
	// The plugin numbers what it makes: the first thing made, so the
	// Create that gave up made nothing.
	if r := <-made; r == nil || r.ID != "after-1" {
		t.Fatalf("the held Create of a SendStop that had sent: %+v, want it made, the first thing made", r)
	}

	// Admitted at once: sent, though stopped.
	at, _ := providers.WithSendStop(ctx, stop)
	if r, err := create(at, "held"); err != nil || r.ID != "held-2" {
		t.Fatalf("a Create the gate admits at once, stopped: %+v %v; want it sent, the second thing made", r, err)
	}
}
