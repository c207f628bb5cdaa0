package stack_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// gate is a provider whose Reads wait until want of them are in flight at
// once (or a deadline passes, which fails the test): reads made one after
// the other never get through it in time, reads made in parallel do at
// once. It records the most in flight it saw.
type gate struct {
	*fakeProvider
	t    *testing.T
	want int

	mu       sync.Mutex
	inFlight int
	most     int
	open     chan struct{}
	opened   bool
}

func (g *gate) Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight >= g.want && !g.opened {
		g.opened = true
		close(g.open)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.open:
	case <-time.After(30 * time.Second):
		g.t.Errorf("Read %s waited 30s for %d reads at once; at most %d were in flight", req.Name, g.want, g.most)
		g.mu.Lock()
		if !g.opened {
			g.opened = true
			close(g.open)
		}
		g.mu.Unlock()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.fakeProvider.Read(ctx, req)
}

type gateStarter struct{ g *gate }

func (s gateStarter) Start(context.Context, pluginhost.Config) (stack.Provider, error) {
	return s.g, nil
}
func (gateStarter) Close() {}

// A plan reads independent resources in parallel, up to --read-parallelism
// and never more.
func TestPlanReadsInParallel(t *testing.T) {
	for _, tc := range []struct{ n, parallelism int }{{12, 1}, {12, 4}, {12, 10}, {3, 10}} {
		t.Run(fmt.Sprintf("%d resources, parallelism %d", tc.n, tc.parallelism), func(t *testing.T) {
			e := newEnv(t)
			var rs []res
			for i := range tc.n {
				rs = append(rs, res{name: fmt.Sprintf("r%02d", i), typ: "network"})
			}
			want := min(tc.n, tc.parallelism)
			g := &gate{fakeProvider: &fakeProvider{w: e.w, source: "fake"}, t: t, want: want, open: make(chan struct{})}
			o := e.opts(parallelism(1))
			o.ReadParallelism = tc.parallelism
			o.Starter = func() stack.Starter { return gateStarter{g} }
			pv, err := stack.Plan(e.ctx, mkSpec(t, rs...), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(pv.Changes) != tc.n {
				t.Fatalf("plan has %d changes, want %d", len(pv.Changes), tc.n)
			}
			if g.most != want {
				t.Errorf("at most %d reads were in flight, want %d", g.most, want)
			}
		})
	}
}

// batching is a provider that offers ReadMany: every read goes through it,
// in batches; single Reads are counted (and fail the test).
type batching struct {
	*fakeProvider
	t *testing.T

	mu      sync.Mutex
	batches [][]string
	singles int
	fail    string // the read of this name fails

	validations       []int // sizes of the ValidateMany batches
	singleValidations int
	invalid           string // the validation of this name fails
}

func (b *batching) ReadsMany() bool { return true }

func (b *batching) ValidatesMany() bool { return true }

func (b *batching) ValidateMany(ctx context.Context, reqs []*providers.ValidateResourceRequest) ([]pluginhost.ValidateResult, error) {
	out := make([]pluginhost.ValidateResult, len(reqs))
	for i, r := range reqs {
		out[i].Diagnostics, out[i].Err = b.fakeProvider.ValidateResource(ctx, r)
		if r.Name == b.invalid {
			out[i].Diagnostics = providers.Diagnostics{providers.AttributeErrorf([]string{"size"}, "%s is too large", r.Name)}
		}
	}
	b.mu.Lock()
	b.validations = append(b.validations, len(reqs))
	b.mu.Unlock()
	return out, nil
}

func (b *batching) ValidateResource(ctx context.Context, req *providers.ValidateResourceRequest) (providers.Diagnostics, error) {
	b.mu.Lock()
	b.singleValidations++
	b.mu.Unlock()
	return b.fakeProvider.ValidateResource(ctx, req)
}

func (b *batching) ReadMany(ctx context.Context, reqs []*providers.ReadRequest) ([]pluginhost.ReadResult, error) {
	var names []string
	out := make([]pluginhost.ReadResult, len(reqs))
	for i, r := range reqs {
		names = append(names, r.Name)
		if r.Name == b.fail {
			out[i].Err = fmt.Errorf("cannot read %s", r.Name)
			continue
		}
		out[i].Response, out[i].Err = b.fakeProvider.Read(ctx, r)
	}
	b.mu.Lock()
	b.batches = append(b.batches, names)
	b.mu.Unlock()
	return out, nil
}

func (b *batching) Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	b.mu.Lock()
	b.singles++
	b.mu.Unlock()
	return b.fakeProvider.Read(ctx, req)
}

type batchingStarter struct{ b *batching }

func (s batchingStarter) Start(context.Context, pluginhost.Config) (stack.Provider, error) {
	return s.b, nil
}
func (batchingStarter) Close() {}

// A provider that offers ReadMany is read in batches, as many as there are
// calls to spread them over, each read once; the plan is the one single
// Reads make, and a failed read in a batch fails the plan naming it.
func TestPlanReadsInBatches(t *testing.T) {
	e := newEnv(t)
	var rs []res
	for i := range 25 {
		rs = append(rs, res{name: fmt.Sprintf("r%02d", i), typ: "network", size: i})
	}
	// Some exist already, one with another size.
	e.mustApply(t, mkSpec(t, rs[:10]...))
	rs[3].size = 99
	// Under a new version of the provider, so that every config is
	// validated again (a record remembers the validation it was changed
	// under, state.Resource.Validated), in batches.
	e.w.mu.Lock()
	e.w.version = "0.0.2"
	e.w.mu.Unlock()
	sp := mkSpec(t, rs...)
	single, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ parallelism, batches int }{{10, 9}, {1, 1}, {4, 4}} {
		t.Run(fmt.Sprintf("parallelism %d", tc.parallelism), func(t *testing.T) {
			b := &batching{fakeProvider: &fakeProvider{w: e.w, source: "fake"}, t: t}
			o := e.opts(parallelism(tc.parallelism))
			o.Starter = func() stack.Starter { return batchingStarter{b} }
			pv, err := stack.Plan(e.ctx, sp, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pv, single) {
				t.Errorf("the batched plan\n%+v\ndiffers from the one single reads make\n%+v", pv, single)
			}
			seen := map[string]int{}
			for _, batch := range b.batches {
				for _, n := range batch {
					seen[n]++
				}
			}
			if len(b.batches) != tc.batches || len(seen) != len(rs) || b.singles != 0 {
				t.Errorf("%d batches (want %d) %v, %d single reads, want every resource read once in a batch", len(b.batches), tc.batches, b.batches, b.singles)
			}
			for n, c := range seen {
				if c != 1 {
					t.Errorf("%s read %d times", n, c)
				}
			}
			validated := 0
			for _, v := range b.validations {
				validated += v
			}
			if len(b.validations) != tc.batches || validated != len(rs) || b.singleValidations != 0 {
				t.Errorf("validations in batches %v, %d single; want %d batches of every resource", b.validations, b.singleValidations, tc.batches)
			}

			b.invalid = "r05"
			_, err = stack.Plan(e.ctx, sp, o)
			var problems spec.Problems
			if !errors.As(err, &problems) || len(problems) != 1 || !strings.Contains(problems[0].Error(), `resource "r05"`) {
				t.Errorf("an invalid resource in a batch: %v, want its problem", err)
			}
			b.invalid = ""

			b.fail = "r07"
			if _, err := stack.Plan(e.ctx, sp, o); err == nil || err.Error() != "read r07: cannot read r07" {
				t.Errorf("a failed read in a batch: %v, want it named", err)
			}
		})
	}
}

// An apply's steps check what its pre-flight read saw instead of reading it
// again: a no-op apply reads each resource once (in the batch), an apply
// from empty once before and once after its Create (Verify). A teardown
// reads each once in its ownership check, again in each delete's Check
// (the deletion path never decides on an old read) and after each Delete.
func TestChecksReusePreflightReads(t *testing.T) {
	e := newEnv(t)
	var rs []res
	for i := range 6 {
		rs = append(rs, res{name: fmt.Sprintf("r%02d", i), typ: "network"})
	}
	sp := mkSpec(t, rs...)
	for _, tc := range []struct {
		what    string
		run     func(o stack.Options) (*stack.Result, error)
		singles int // Reads outside the batch: the Verifys, a delete's Check
	}{
		{"apply from empty", func(o stack.Options) (*stack.Result, error) { return stack.Apply(e.ctx, sp, o) }, len(rs)},
		{"no-op apply", func(o stack.Options) (*stack.Result, error) { return stack.Apply(e.ctx, sp, o) }, 0},
		{"teardown", func(o stack.Options) (*stack.Result, error) { return stack.Teardown(e.ctx, sp, o) }, 2 * len(rs)},
	} {
		b := &batching{fakeProvider: &fakeProvider{w: e.w, source: "fake"}, t: t}
		o := e.opts()
		o.Starter = func() stack.Starter { return batchingStarter{b} }
		r, err := tc.run(o)
		if code := stack.ExitCode(r, err); code != stack.ExitOK {
			t.Fatalf("%s: exit %d: %v %v", tc.what, code, err, resErr(r))
		}
		n := 0
		for _, batch := range b.batches {
			n += len(batch)
		}
		if n != len(rs) || b.singles != tc.singles {
			t.Errorf("%s: %d reads in batches, %d single reads; want %d and %d", tc.what, n, b.singles, len(rs), tc.singles)
		}
	}
	if got := len(e.w.Snapshot()); got != 0 {
		t.Errorf("%d resources left after the teardown", got)
	}
}

// An attacker's window: between a teardown's ownership check and the delete
// of a resource, what its recorded id holds is taken by another stack (here,
// while the resource that depends on it is deleted). The delete's Check
// reads again and refuses; nothing of the other stack's is deleted.
func TestTeardownDecidesEachDeleteOnAFreshRead(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
	e.mustApply(t, sp)
	e.w.OnDelete(func(name string) {
		if name == "b" {
			e.w.SetKey("a", "bulwark:other:01JZZZZZZZZZZZZZZZZZZZZZZZ:01JZZZZZZZZZZZZZZZZZZZZZZZ")
		}
	})
	r, err := stack.Teardown(e.ctx, sp, e.opts())
	if code := stack.ExitCode(r, err); code == stack.ExitOK {
		t.Fatalf("teardown succeeded though a now belongs to another stack")
	}
	if e.w.ByName("a") == nil {
		t.Fatal("a, now another stack's, was deleted")
	}
	for _, d := range e.w.Deletes() {
		if d.Name == "a" {
			t.Fatalf("a Delete of a was sent: %+v", d)
		}
	}
}

// The ownership read that decides a delete is made after the Deletes of
// what depends on it have returned, never while one is in flight (an early
// delete does not wait for their Verifies, but it does wait for that): a
// stack that takes the resource over meanwhile is seen. b's Delete waits,
// up to a deadline, for a read of a to begin; none may.
func TestTeardownReadsOwnershipAfterTheDependentsDeleteReturned(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
	e.mustApply(t, sp)
	var (
		mu       sync.Mutex
		deleting bool
		during   []string
	)
	readOfA := make(chan struct{}, 1)
	e.w.OnRead(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		if name == "a" && deleting {
			during = append(during, name)
			select {
			case readOfA <- struct{}{}:
			default:
			}
		}
	})
	e.w.OnDelete(func(name string) {
		if name != "b" {
			return
		}
		mu.Lock()
		deleting = true
		mu.Unlock()
		select {
		case <-readOfA:
		case <-time.After(300 * time.Millisecond):
		}
		mu.Lock()
		deleting = false
		mu.Unlock()
	})
	r, err := stack.Teardown(e.ctx, sp, e.opts())
	if code := stack.ExitCode(r, err); code != stack.ExitOK {
		t.Fatalf("teardown: exit %d: %v %v", code, err, resErr(r))
	}
	if len(during) > 0 {
		t.Fatalf("a was read while b's Delete was in flight (%d reads): its ownership was decided on a read older than b's delete", len(during))
	}
}
