package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// joinFake is a provider's two read calls, recording what each call
// carried; the first single Read blocks until release is closed.
type joinFake struct {
	release chan struct{}
	manyErr error

	mu    sync.Mutex
	calls [][]string // the names each call carried, in call order
	first bool
}

func (f *joinFake) one(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	f.mu.Lock()
	f.calls = append(f.calls, []string{req.Name})
	block := !f.first
	f.first = true
	f.mu.Unlock()
	if block {
		<-f.release
	}
	return &providers.ReadResponse{Exists: true, ID: "id-" + req.Name}, nil
}

func (f *joinFake) many(ctx context.Context, reqs []*providers.ReadRequest) ([]ReadResult, error) {
	f.mu.Lock()
	var names []string
	for _, r := range reqs {
		names = append(names, r.Name)
	}
	f.calls = append(f.calls, names)
	f.mu.Unlock()
	if f.manyErr != nil {
		return nil, f.manyErr
	}
	out := make([]ReadResult, len(reqs))
	for i, r := range reqs {
		if r.Name == "bad" {
			out[i].Err = errors.New("bad read")
			continue
		}
		out[i].Response = &providers.ReadResponse{Exists: true, ID: "id-" + r.Name}
	}
	return out, nil
}

// waitQueued polls until n calls wait in j's queue.
func waitQueued[Q, R any](t *testing.T, j *join[Q, R], n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j.mu.Lock()
		got := len(j.queue)
		j.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond) // poll interval, not a wait for an outcome
	}
}

func TestReadJoin(t *testing.T) {
	for _, tc := range []struct {
		name      string
		waiting   []string // reads made while the first is in flight, in order
		cancelled string   // one of them whose caller stops waiting before it is sent
		manyErr   error
		wantCalls [][]string
		wantErr   map[string]string // name -> error text ("" for none)
	}{
		{
			name:      "a lone read goes alone",
			wantCalls: [][]string{{"first"}},
		},
		{
			name:      "reads made while one is in flight go together, in order",
			waiting:   []string{"a", "b", "c"},
			wantCalls: [][]string{{"first"}, {"a", "b", "c"}},
		},
		{
			name:      "one waiting read goes alone",
			waiting:   []string{"a"},
			wantCalls: [][]string{{"first"}, {"a"}},
		},
		{
			name:      "each read keeps its own error",
			waiting:   []string{"a", "bad", "c"},
			wantCalls: [][]string{{"first"}, {"a", "bad", "c"}},
			wantErr:   map[string]string{"bad": "bad read"},
		},
		{
			name:      "a failed call fails every read it carried",
			waiting:   []string{"a", "b"},
			manyErr:   errors.New("provider exited"),
			wantCalls: [][]string{{"first"}, {"a", "b"}},
			wantErr:   map[string]string{"a": "provider exited", "b": "provider exited"},
		},
		{
			name:      "a read whose caller stopped waiting is not sent",
			waiting:   []string{"a", "gone", "b"},
			cancelled: "gone",
			wantCalls: [][]string{{"first"}, {"a", "b"}},
			wantErr:   map[string]string{"gone": context.Canceled.Error()},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &joinFake{release: make(chan struct{}), manyErr: tc.manyErr}
			j := &join[*providers.ReadRequest, *providers.ReadResponse]{one: f.one, many: f.many, patience: time.Hour}
			type got struct {
				resp *providers.ReadResponse
				err  error
			}
			results := map[string]got{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			readAs := func(ctx context.Context, name string) {
				defer wg.Done()
				resp, err := j.call(ctx, &providers.ReadRequest{Name: name})
				mu.Lock()
				results[name] = got{resp, err}
				mu.Unlock()
			}
			wg.Add(1)
			go readAs(context.Background(), "first")
			// The first is in flight (blocked in one) before any other asks.
			deadline := time.Now().Add(30 * time.Second)
			for {
				f.mu.Lock()
				n := len(f.calls)
				f.mu.Unlock()
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the first read never reached the provider")
				}
				time.Sleep(time.Millisecond)
			}
			for i, name := range tc.waiting {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				wg.Add(1)
				go readAs(ctx, name)
				waitQueued(t, j, i+1)
				if name == tc.cancelled {
					cancel()
					deadline := time.Now().Add(30 * time.Second)
					for {
						mu.Lock()
						_, done := results[name]
						mu.Unlock()
						if done {
							break
						}
						if time.Now().After(deadline) {
							t.Fatal("a cancelled read kept waiting")
						}
						time.Sleep(time.Millisecond)
					}
				}
			}
			close(f.release)
			wg.Wait()
			f.mu.Lock()
			calls := f.calls
			f.mu.Unlock()
			if !slices.EqualFunc(calls, tc.wantCalls, slices.Equal) {
				t.Errorf("calls %v, want %v", calls, tc.wantCalls)
			}
			for name, g := range results {
				want := tc.wantErr[name]
				if fmt.Sprint(g.err) != want && !(want == "" && g.err == nil) {
					t.Errorf("%s: error %v, want %q", name, g.err, want)
				}
				if g.err == nil && (g.resp == nil || g.resp.ID != "id-"+name) {
					t.Errorf("%s: got %+v, not its own answer", name, g.resp)
				}
			}
			j.mu.Lock()
			flying, queued := j.flying, len(j.queue)
			j.mu.Unlock()
			if queued != 0 {
				t.Errorf("%d reads left queued", queued)
			}
			// The group hands on once its last call ends: a read made now
			// goes alone again.
			deadline = time.Now().Add(30 * time.Second)
			for flying > 0 {
				if time.Now().After(deadline) {
					t.Fatal("the group never stopped flying")
				}
				time.Sleep(time.Millisecond)
				j.mu.Lock()
				flying = j.flying
				j.mu.Unlock()
			}
		})
	}
}

// TestReadJoinManyAtOnce runs many readers at once (for the race detector):
// every one gets its own answer, and no call carries more than maxJoined.
func TestReadJoinManyAtOnce(t *testing.T) {
	f := &joinFake{release: make(chan struct{})}
	close(f.release)
	j := &join[*providers.ReadRequest, *providers.ReadResponse]{one: f.one, many: f.many, patience: time.Hour}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("r%d", i)
			resp, err := j.call(context.Background(), &providers.ReadRequest{Name: name})
			if err != nil || resp.ID != "id-"+name {
				errs <- fmt.Errorf("%s: %+v %v", name, resp, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for _, c := range f.calls {
		if len(c) > maxJoined {
			t.Errorf("a call carried %d reads", len(c))
		}
		total += len(c)
	}
	if total != 200 {
		t.Errorf("%d reads sent, want 200", total)
	}
}

// TestJoinGroupCallCancel: a call of the group carries several callers, so
// one caller's cancellation stops that caller's wait, not the call; the
// call is cancelled once every caller it carries has stopped waiting (as
// each one's single call would have been).
func TestJoinGroupCallCancel(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan context.Context, 1)
	j := &join[string, string]{
		patience: time.Hour,
		one: func(ctx context.Context, req string) (string, error) {
			<-release
			return req, nil
		},
		many: func(ctx context.Context, reqs []string) ([]Result[string], error) {
			entered <- ctx
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	first := make(chan error, 1)
	go func() {
		_, err := j.call(context.Background(), "first")
		first <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j.mu.Lock()
		flying := j.flying
		j.mu.Unlock()
		if flying > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call never went")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { _, err := j.call(ctxA, "a"); errA <- err }()
	waitQueued(t, j, 1)
	go func() { _, err := j.call(ctxB, "b"); errB <- err }()
	waitQueued(t, j, 2)
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}
	var group context.Context
	select {
	case group = <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting calls never went together")
	}
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Errorf("a, cancelled: %v, want context.Canceled", err)
	}
	if group.Err() != nil {
		t.Fatal("one caller's cancellation ended the group's call while another still waited for it")
	}
	cancelB()
	if err := <-errB; !errors.Is(err, context.Canceled) {
		t.Errorf("b, cancelled: %v, want context.Canceled", err)
	}
	select {
	case <-group.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the group's call went on after every caller stopped waiting")
	}
}

// TestJoinPatience: calls queued behind one that does not end go on their
// own once they have waited patience, in a call beside it, not after it;
// and once everything ended, nothing is left in flight.
func TestJoinPatience(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var calls [][]string
	record := func(reqs ...string) {
		mu.Lock()
		calls = append(calls, reqs)
		mu.Unlock()
	}
	j := &join[string, string]{
		patience: time.Millisecond,
		one: func(ctx context.Context, req string) (string, error) {
			record(req)
			if req == "slow" {
				<-release
			}
			return req, nil
		},
		many: func(ctx context.Context, reqs []string) ([]Result[string], error) {
			record(reqs...)
			out := make([]Result[string], len(reqs))
			for i, r := range reqs {
				out[i].Response = r
			}
			return out, nil
		},
	}
	slow := make(chan error, 1)
	go func() {
		_, err := j.call(context.Background(), "slow")
		slow <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(calls)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow call never went")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := j.call(context.Background(), name); err != nil || got != name {
				t.Errorf("%s: %q %v", name, got, err)
			}
		}()
	}
	// All three answered while the slow call is still in flight.
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the calls queued behind the slow one waited for it")
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow call ended first (%v)", err)
	default:
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sent := 0
	for _, c := range calls[1:] {
		sent += len(c)
	}
	mu.Unlock()
	if sent != 3 {
		t.Errorf("calls %v: want the three sent once each", calls)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		j.mu.Lock()
		flying, queued := j.flying, len(j.queue)
		j.mu.Unlock()
		if flying == 0 && queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls still in flight, %d queued, after everything ended", flying, queued)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestJoinQueueWait: calls queued behind one in flight wait patience for it
// while the group's calls are quick, but once its last call took longer
// than patience (a provider with latency) only gatherWindow: waiting for a
// call that takes 50 ms would add patience to every round of Creates. The
// group's calls are timed on a fake clock each call moves on.
func TestJoinQueueWait(t *testing.T) {
	var clock time.Time
	j := &join[time.Duration, string]{
		patience: 5 * time.Millisecond,
		now:      func() time.Time { return clock },
		one: func(_ context.Context, d time.Duration) (string, error) {
			clock = clock.Add(d) // the call takes d
			return "", nil
		},
		many: func(_ context.Context, ds []time.Duration) ([]Result[string], error) {
			clock = clock.Add(slices.Max(ds))
			return make([]Result[string], len(ds)), nil
		},
	}
	steps := []struct {
		took time.Duration // the call made before asking
		want time.Duration
	}{
		{0, 5 * time.Millisecond}, // nothing ended yet: patience
		{300 * time.Microsecond, 5 * time.Millisecond},
		{5 * time.Millisecond, 5 * time.Millisecond}, // not longer than patience
		{50 * time.Millisecond, gatherWindow},
		{2 * time.Second, gatherWindow},
		{100 * time.Microsecond, 5 * time.Millisecond}, // quick again
	}
	for i, s := range steps {
		if s.took > 0 {
			if _, err := j.call(context.Background(), s.took); err != nil {
				t.Fatal(err)
			}
		}
		if got := j.queueWait(); got != s.want {
			t.Errorf("step %d, after a call of %v: queued calls wait %v, want %v", i, s.took, got, s.want)
		}
	}
	// Through a batch too, and never longer than a patience shorter than
	// the gather window.
	j.patience = 500 * time.Microsecond
	j.send([]*joined[time.Duration, string]{
		{ctx: context.Background(), req: time.Second, done: make(chan struct{})},
		{ctx: context.Background(), req: time.Millisecond, done: make(chan struct{})},
	})
	if got := j.queueWait(); got != 500*time.Microsecond {
		t.Errorf("after a batch of 1 s with patience 500µs: wait %v, want 500µs", got)
	}
	j.patience = 5 * time.Millisecond
	if got := j.queueWait(); got != gatherWindow {
		t.Errorf("after a batch of 1 s: wait %v, want %v", got, gatherWindow)
	}
}
