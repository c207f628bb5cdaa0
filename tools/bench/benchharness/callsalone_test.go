package benchharness

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// fakeCalls is an in-memory provider that records the order of the calls
// and checks, as each write starts, what the schedule promises.
type fakeCalls struct {
	t  *testing.T
	g  Graph
	mu sync.Mutex
	// log is every call as "Read r000001", "Create r000001"…, in order.
	log []string
	// exists: the resources made and not deleted, by name; ids by name.
	exists   map[string]string
	written  map[string]bool // writes that returned
	inFlight int
	most     int // the most writes in flight at once
}

func newFakeCalls(t *testing.T, g Graph) *fakeCalls {
	return &fakeCalls{t: t, g: g, exists: map[string]string{}, written: map[string]bool{}}
}

func (f *fakeCalls) note(call, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, call+" "+name)
}

func (f *fakeCalls) Read(_ context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	f.note("Read", req.Name)
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.exists[req.Name]
	if ok && req.ID != "" && req.ID != id {
		return nil, fmt.Errorf("read %s with id %s, made as %s", req.Name, req.ID, id)
	}
	return &providers.ReadResponse{Exists: ok, ID: id}, nil
}

// write checks what must hold when name's write starts: wait are the
// resources whose writes must have returned first.
func (f *fakeCalls) write(call, name string, wait []string, do func()) {
	f.note(call, name)
	f.mu.Lock()
	for _, w := range wait {
		if !f.written[w] {
			f.t.Errorf("%s %s started before the write of %s returned", call, name, w)
		}
	}
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	f.mu.Unlock()
	do()
	f.mu.Lock()
	f.inFlight--
	f.written[call+" "+name] = true
	f.mu.Unlock()
}

func (f *fakeCalls) Create(_ context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	i := resourceIndex(f.t, req.Name)
	var wait []string
	for _, d := range f.g[i] {
		wait = append(wait, "Create "+ResourceName(d))
	}
	id := "id-" + req.Name
	f.write("Create", req.Name, wait, func() {
		f.mu.Lock()
		f.exists[req.Name] = id
		f.mu.Unlock()
	})
	return &providers.CreateResponse{ID: id}, nil
}

func (f *fakeCalls) Delete(_ context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error) {
	i := resourceIndex(f.t, req.Name)
	var wait []string
	for j, ds := range f.g {
		if slices.Contains(ds, i) {
			wait = append(wait, "Delete "+ResourceName(j))
		}
	}
	f.write("Delete", req.Name, wait, func() {
		f.mu.Lock()
		delete(f.exists, req.Name)
		f.mu.Unlock()
	})
	return &providers.DeleteResponse{}, nil
}

func resourceIndex(t *testing.T, name string) int {
	var i int
	if _, err := fmt.Sscanf(name, "r%06d", &i); err != nil {
		t.Fatalf("resource name %q: %v", name, err)
	}
	return i
}

// The driver makes the calls the limit counts, in its order: every Read
// first, then each resource's write once what it waits for has been
// written, at most P at once, each followed by a Read of what it wrote;
// the teardown deletes what depends on a resource before it.
func TestCallsAloneMakesTheLimitsCalls(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		n, p  int
	}{{Flat, 30, 4}, {Layers, 40, 3}, {Chain, 12, 5}, {Layers, 40, 1}} {
		t.Run(fmt.Sprintf("%s %d P %d", tc.shape, tc.n, tc.p), func(t *testing.T) {
			g := ShapeGraph(tc.shape, tc.n)
			f := newFakeCalls(t, g)
			ctx := context.Background()
			ids, _, err := callsApply(ctx, f, g, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			checkPhase(t, f.log, "Create", tc.n)
			if f.most > tc.p || f.most < 1 {
				t.Errorf("apply: %d writes in flight at once, want 1..%d", f.most, tc.p)
			}
			for i, id := range ids {
				if id != "id-"+ResourceName(i) {
					t.Errorf("apply: resource %d recorded id %q", i, id)
				}
			}
			f.log, f.most = nil, 0
			if _, err := callsTeardown(ctx, f, g, ids, tc.p); err != nil {
				t.Fatal(err)
			}
			checkPhase(t, f.log, "Delete", tc.n)
			if f.most > tc.p {
				t.Errorf("teardown: %d writes in flight at once, want at most %d", f.most, tc.p)
			}
			if len(f.exists) != 0 {
				t.Errorf("teardown left %d resources", len(f.exists))
			}
		})
	}
}

// checkPhase checks one command's call log: n Reads, then n writes, each
// followed (not necessarily at once) by a Read of the same resource.
func checkPhase(t *testing.T, log []string, write string, n int) {
	t.Helper()
	if len(log) != 3*n {
		t.Fatalf("%d calls, want %d (a Read, a %s and a Read per resource): %v", len(log), 3*n, write, log)
	}
	for i, c := range log[:n] {
		if c[:5] != "Read " {
			t.Fatalf("call %d is %q: every Read comes before the first %s", i, c, write)
		}
	}
	wrote := map[string]bool{}
	for _, c := range log[n:] {
		name := c[len(c)-7:]
		switch c[:len(c)-8] {
		case write:
			if wrote[name] {
				t.Errorf("%s twice", c)
			}
			wrote[name] = true
		case "Read":
			if !wrote[name] {
				t.Errorf("verify %s before its %s", name, write)
			}
		default:
			t.Errorf("unexpected call %q", c)
		}
	}
	if len(wrote) != n {
		t.Errorf("%d %ss, want %d", len(wrote), write, n)
	}
}

// A failed write stops the schedule: no write starts after it, and its
// error is the one returned.
func TestWriteScheduleStopsAtTheFirstError(t *testing.T) {
	g := ShapeGraph(Chain, 10)
	var mu sync.Mutex
	var wrote []int
	err := writeSchedule(g, 3, func(i int) error {
		mu.Lock()
		wrote = append(wrote, i)
		mu.Unlock()
		if i == 4 {
			return fmt.Errorf("boom at %d", i)
		}
		return nil
	}, func(int) error { return nil })
	if err == nil || err.Error() != "boom at 4" {
		t.Fatalf("err %v, want boom at 4", err)
	}
	if !slices.Equal(wrote, []int{0, 1, 2, 3, 4}) {
		t.Errorf("wrote %v, want the chain up to the failing write", wrote)
	}
}
