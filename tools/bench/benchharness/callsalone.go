package benchharness

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// The calls alone: what a latency row's provider calls take when nothing
// but the calls is made. A driver in the harness's own process starts the
// mock through core/pluginhost (go-plugin, mutual TLS, the host's own
// wrapping, as bulwark does) and makes exactly the calls the row's limit
// counts, in the limit's order and with its parallelism: every resource's
// Read at once; then one write per resource (a Create; in a teardown a
// Delete) in one of parallelism write slots, a resource ready once what it
// depends on (in a teardown, what depends on it) has been written, the
// ready ones taking free slots in index order; each write followed by a
// Read off the slots (Verify's). No spec, no plan, no journal, no state, no
// engine: the gap between it and the limit is what the provider calls cost
// on this machine (both processes' gRPC, the mock's own work, the wake-ups
// of two processes on shared cores), which no engine removes; the gap
// between bulwark and it is bulwark's own.
//
// Each call is made alone (a context with a deadline: the host joins no
// calls into ReadMany or CreateMany), as to the mock without batch calls.
// The mock keeps no call log here (bulwark's runs keep one: one append a
// call more for the mock). The host side is the harness's long-lived
// process, whose heap is warm after its first run, where each bulwark
// command is a fresh process that faults its heap in: if anything, the
// calls alone are cheaper here than any engine's could be.

// callsProvider is what the driver calls: a started plugin.
type callsProvider interface {
	Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error)
	Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error)
	Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error)
}

// callsTimeout bounds one run of the driver when the harness has no budget
// (LatencyConfig.Budget, which bounds it otherwise); a deadline also keeps
// the host from joining calls.
const callsTimeout = 10 * time.Minute

// runCallsAlone starts the mock with latency latencyMS (its world in a
// fresh folder under world, or its data folder when world is empty), makes
// an apply's calls on g, then a teardown's, each within budget (0:
// callsTimeout), and returns each one's wall time, from its first call to
// its last answer.
func runCallsAlone(ctx context.Context, pluginDir, scratch, world string, g Graph, latencyMS, parallelism int, budget time.Duration) (apply, teardown time.Duration, err error) {
	if budget <= 0 {
		budget = callsTimeout
	}
	dir, err := os.MkdirTemp(scratch, "calls-alone-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	cfg := map[string]any{"latency_ms": latencyMS}
	if world != "" {
		w, err := os.MkdirTemp(world, "bulwark-bench-world-")
		if err != nil {
			return 0, 0, err
		}
		defer os.RemoveAll(w)
		cfg["world"] = w
	}
	h := pluginhost.New(pluginhost.Options{Dirs: []string{pluginDir}})
	defer h.Close()
	// The plugin is asked to prepare its heap as bulwark asks it for a
	// command of this size.
	p, err := h.Start(ctx, pluginhost.Config{Name: "mock", Source: "mock", DataDir: dir, Config: cfg, HugeHeap: len(g) >= stack.HugeHeapResources})
	if err != nil {
		return 0, 0, fmt.Errorf("calls alone: start the mock provider: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	ids, apply, err := callsApply(actx, p, g, parallelism)
	if err != nil {
		return 0, 0, err
	}
	tctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	teardown, err = callsTeardown(tctx, p, g, ids, parallelism)
	return apply, teardown, err
}

// benchType is the type of every generated resource (BulwarkSpecWith).
const benchType = "generic"

// callsApply makes an apply's calls on g and returns the ids the Creates
// answered, by resource.
func callsApply(ctx context.Context, p callsProvider, g Graph, parallelism int) ([]string, time.Duration, error) {
	n := len(g)
	ids := make([]string, n)
	t0 := time.Now()
	err := eachAtOnce(n, func(i int) error {
		_, err := p.Read(ctx, &providers.ReadRequest{Type: benchType, Name: ResourceName(i)})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("calls alone: read: %w", err)
	}
	err = writeSchedule(g, parallelism, func(i int) error {
		resp, err := p.Create(ctx, &providers.CreateRequest{Type: benchType, Name: ResourceName(i), IdempotencyKey: fmt.Sprintf("calls-alone-%d", i)})
		if err != nil {
			return fmt.Errorf("calls alone: create %s: %w", ResourceName(i), err)
		}
		ids[i] = resp.ID
		return nil
	}, func(i int) error {
		resp, err := p.Read(ctx, &providers.ReadRequest{Type: benchType, Name: ResourceName(i), ID: ids[i]})
		if err == nil && !resp.Exists {
			err = fmt.Errorf("not found")
		}
		if err != nil {
			return fmt.Errorf("calls alone: verify %s: %w", ResourceName(i), err)
		}
		return nil
	})
	return ids, time.Since(t0), err
}

// callsTeardown makes a teardown's calls on g, whose resources have ids.
func callsTeardown(ctx context.Context, p callsProvider, g Graph, ids []string, parallelism int) (time.Duration, error) {
	n := len(g)
	read := func(i int) (*providers.ReadResponse, error) {
		return p.Read(ctx, &providers.ReadRequest{Type: benchType, Name: ResourceName(i), ID: ids[i]})
	}
	t0 := time.Now()
	err := eachAtOnce(n, func(i int) error {
		_, err := read(i)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("calls alone: read: %w", err)
	}
	// reversed's index r is resource n-1-r (see Graph.reversed).
	err = writeSchedule(g.reversed(), parallelism, func(r int) error {
		i := n - 1 - r
		if _, err := p.Delete(ctx, &providers.DeleteRequest{Type: benchType, Name: ResourceName(i), ID: ids[i]}); err != nil {
			return fmt.Errorf("calls alone: delete %s: %w", ResourceName(i), err)
		}
		return nil
	}, func(r int) error {
		i := n - 1 - r
		resp, err := read(i)
		if err == nil && resp.Exists {
			err = fmt.Errorf("still there")
		}
		if err != nil {
			return fmt.Errorf("calls alone: verify %s gone: %w", ResourceName(i), err)
		}
		return nil
	})
	return time.Since(t0), err
}

// eachAtOnce runs fn for 0..n-1, all at once, and returns the first error.
func eachAtOnce(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeSchedule runs g's list schedule for real: parallelism slots, each
// taking the lowest-indexed ready resource and calling write for it; a
// resource is ready once write has returned for everything it depends on;
// verify runs for each written resource at once, off the slots. It returns
// when every verify has, with the first error (after which no write
// starts).
func writeSchedule(g Graph, parallelism int, write, verify func(i int) error) error {
	n := len(g)
	dependents := make([][]int, n)
	waiting := make([]int, n)
	var ready []int // ascending
	for i, ds := range g {
		waiting[i] = len(ds)
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
		if len(ds) == 0 {
			ready = append(ready, i)
		}
	}
	var (
		mu       sync.Mutex
		wake     = sync.NewCond(&mu)
		started  int
		firstErr error
		verifies sync.WaitGroup
		slots    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		wake.Broadcast()
		mu.Unlock()
	}
	for range max(parallelism, 1) {
		slots.Go(func() {
			for {
				mu.Lock()
				for len(ready) == 0 && started < n && firstErr == nil {
					wake.Wait()
				}
				if started == n || firstErr != nil {
					mu.Unlock()
					return
				}
				i := ready[0]
				ready = ready[1:]
				started++
				mu.Unlock()
				if err := write(i); err != nil {
					fail(err)
					return
				}
				verifies.Go(func() {
					if err := verify(i); err != nil {
						fail(err)
					}
				})
				mu.Lock()
				for _, d := range dependents[i] {
					if waiting[d]--; waiting[d] == 0 {
						ready = insertSorted(ready, d)
					}
				}
				wake.Broadcast()
				mu.Unlock()
			}
		})
	}
	slots.Wait()
	verifies.Wait()
	return firstErr
}
