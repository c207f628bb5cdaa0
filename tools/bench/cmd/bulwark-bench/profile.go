package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/gcpace"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/tools/bench/benchharness"
)

// profileRun is what -profile runs.
type profileRun struct {
	command             string
	shape               benchharness.Shape
	n, latencyMS, count int
	pluginDir, scratch  string
	parallelism         int
	cpuFile             string
	pluginPrefix        string // "" profiles no plugin
	memFile             string // "" takes no heap profile
	allocFile           string // "" takes no allocation profile
	traceFile           string // "" takes no execution trace
	// tfProvider, when set (fwtest or sdktest), profiles the stack of n
	// items of that Terraform test provider, found in tfMirror, instead of
	// the mock's.
	tfProvider, tfMirror string
}

// profile runs one command of one generated stack in this process, through
// core/stack as the CLI calls it (the mock provider still a plugin
// process), with the CPU profile on for that command alone, and writes the
// profile to cpuFile. The commands before it on the stack (an apply before a
// no-op plan, a no-op apply or a teardown) run first, unprofiled. With a
// count above 1 it does so that many times, each on a fresh stack, the
// profile covering every profiled run (more samples, the same shape). With a
// plugin prefix, the plugins the profiled command starts profile themselves
// (sdk.CPUProfileEnv), each into PREFIX.PID.
func profile(ctx context.Context, r profileRun) error {
	if r.count < 1 {
		r.count = 1
	}
	// The collector paced as the CLI paces its own (cmd/bulwark's main).
	gcpace.Start()
	var fns []func() error
	for i := 0; i < r.count; i++ {
		fn, err := profileStack(ctx, r)
		if err != nil {
			return err
		}
		fns = append(fns, fn)
	}
	f, err := os.Create(r.cpuFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if r.pluginPrefix != "" {
		prefix, err := filepath.Abs(r.pluginPrefix)
		if err != nil {
			return err
		}
		os.Setenv(sdk.CPUProfileEnv, prefix)
		defer os.Unsetenv(sdk.CPUProfileEnv)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	var peak *heapPeak
	if r.memFile != "" {
		peak = watchHeap()
	}
	// What the profiled runs allocate, counted by the runtime (every
	// allocation, not a profile's sample): the figure to drive down per
	// resource.
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(allocs)
	objs0, bytes0, gcs0 := allocs[0].Value.Uint64(), allocs[1].Value.Uint64(), allocs[2].Value.Uint64()
	if r.allocFile != "" {
		runtime.GC() // the profile's counts start from the last GC's
	}
	if r.traceFile != "" {
		tf, err := os.Create(r.traceFile)
		if err != nil {
			return err
		}
		defer tf.Close()
		if err := trace.Start(tf); err != nil {
			return err
		}
	}
	cpu0, switches0 := selfCPU()
	var walls []time.Duration
	for _, fn := range fns {
		start := time.Now()
		err = fn()
		walls = append(walls, time.Since(start).Round(time.Millisecond))
		if err != nil {
			break
		}
	}
	cpu, switches := selfCPU()
	cpu, switches = cpu-cpu0, switches-switches0
	pprof.StopCPUProfile()
	if r.traceFile != "" {
		trace.Stop()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", r.command, err)
	}
	metrics.Read(allocs)
	runs := uint64(r.count * r.n)
	// This process's own user and system time (the plugins are other
	// processes): the figure the sampled profile only estimates.
	fmt.Fprintf(os.Stderr, "bulwark CPU (user+system, this process): %v a run, %.1f µs per resource; %.1f context switches per resource\n",
		(cpu / time.Duration(r.count)).Round(100*time.Microsecond), float64(cpu.Microseconds())/float64(runs), float64(switches)/float64(runs))
	fmt.Fprintf(os.Stderr, "allocated per resource: %d objects, %d bytes; %d GC cycles in all\n",
		(allocs[0].Value.Uint64()-objs0)/runs, (allocs[1].Value.Uint64()-bytes0)/runs, allocs[2].Value.Uint64()-gcs0)
	if r.allocFile != "" {
		runtime.GC() // a heap profile shows what the last GC saw
		if err := writeHeapProfile(r.allocFile); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "what the runs allocated (and what the process did before them): %s\n"+
			"  go tool pprof -sample_index=alloc_objects -top %s\n", r.allocFile, r.allocFile)
	}
	fmt.Fprintf(os.Stderr, "%s of %d %s resources in process, %d time(s): %v; CPU profile in %s (bulwark's side only: the mock is another process)\n"+
		"  go tool pprof -top -nodecount 30 %s\n", r.command, r.n, r.shape, r.count, walls, r.cpuFile, r.cpuFile)
	if peak != nil {
		most, err := peak.stop(r.memFile)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "live heap at its largest (as a GC found it): %.1f MiB; its heap profile in %s\n"+
			"  go tool pprof -sample_index=inuse_space -top %s\n", float64(most)/(1<<20), r.memFile, r.memFile)
	}
	if r.pluginPrefix != "" {
		fmt.Fprintf(os.Stderr, "the plugins' profiles: %s.PID\n  go tool pprof -top -nodecount 30 %s.*\n", r.pluginPrefix, r.pluginPrefix)
	}
	return nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileStack makes a fresh stack, runs what comes before r.command on it
// (unprofiled) and returns the command itself, to run under the profile.
func profileStack(ctx context.Context, r profileRun) (func() error, error) {
	dir, err := os.MkdirTemp(r.scratch, "profile-")
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(dir, "spec.yaml")
	text := benchharness.BulwarkSpec(r.shape, r.n, r.latencyMS)
	pluginDir := r.pluginDir
	if r.tfProvider != "" {
		text, pluginDir = benchharness.TFItemSpec(r.tfProvider, r.n), r.tfMirror
		// One world for every profiled stack (the providers find it in
		// the environment, which is this process's): each stack's
		// objects have ids of their own, and a stack prepared first must
		// find its objects when it is profiled after another was made.
		os.Setenv(benchharness.WorldEnv, filepath.Join(r.scratch, "world"))
	}
	if r.tfProvider == "" && r.shape == benchharness.Modules {
		// The module the spec calls, read when the spec is.
		if err := benchharness.WriteFiles(dir, benchharness.BulwarkFiles(r.shape, r.n, benchharness.MockConfig{LatencyMS: r.latencyMS})); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(specPath, text, 0o600); err != nil {
		return nil, err
	}
	sp, err := spec.Parse(specPath, text)
	if err != nil {
		return nil, err
	}
	// The events file stays open for the process's life (a few per run).
	ev, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	// Seal as the CLI does, with a key of the run's own (never the user's).
	key, err := secrets.NewKey("bench")
	if err != nil {
		return nil, err
	}
	opts := stack.Options{
		SecretOptions:  stack.SecretOptions{Secrets: &secrets.Source{Env: key.Encode()}},
		StorageOptions: stack.StorageOptions{StateDir: filepath.Join(dir, "state")},
		PluginOptions:  stack.PluginOptions{PluginDirs: []string{pluginDir}},
		OutputOptions:  stack.OutputOptions{Events: events.NewWriter(ev, nil)},
		RunOptions:     stack.RunOptions{Parallelism: r.parallelism},
	}
	apply := func() error {
		res, err := stack.Apply(ctx, sp, opts)
		if err == nil && res.Err != nil {
			err = res.Err
		}
		return err
	}
	var fn func() error
	switch r.command {
	case benchharness.CmdValidate:
		fn = func() error { return stack.Validate(ctx, sp, opts) }
	case benchharness.CmdPlan, benchharness.CmdNoopPlan:
		fn = func() error { _, err := stack.Plan(ctx, sp, opts); return err }
	case benchharness.CmdApply:
		fn = apply
	case benchharness.CmdNoop:
		fn = apply
	case benchharness.CmdTeardown:
		fn = func() error {
			res, err := stack.Teardown(ctx, sp, opts)
			if err == nil && res.Err != nil {
				err = res.Err
			}
			return err
		}
	default:
		return nil, fmt.Errorf("-profile %q: want one of validate, plan, apply, no-op plan, no-op apply, teardown", r.command)
	}
	if r.command == benchharness.CmdNoopPlan || r.command == benchharness.CmdNoop || r.command == benchharness.CmdTeardown {
		fmt.Fprintf(os.Stderr, "apply first (not profiled)\n")
		if err := apply(); err != nil {
			return nil, fmt.Errorf("the apply before %s: %w", r.command, err)
		}
	}
	return fn, nil
}

// heapPeak samples the heap in use while a profiled command runs and keeps
// the heap profile of the moment it was largest: what holds the memory at
// the peak, which a profile written at the end (after the command let go of
// it) does not show.
type heapPeak struct {
	done chan struct{}
	out  chan heapSample
}

type heapSample struct {
	bytes   uint64
	profile []byte
}

func watchHeap() *heapPeak {
	h := &heapPeak{done: make(chan struct{}), out: make(chan heapSample, 1)}
	go func() {
		var best heapSample
		// The live heap the last GC found: a heap profile is of the
		// last GC too, so one taken when this grew is that moment's.
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.done:
				h.out <- best
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > best.bytes {
				var buf bytes.Buffer
				if err := pprof.Lookup("heap").WriteTo(&buf, 0); err == nil {
					best = heapSample{bytes: v, profile: buf.Bytes()}
				}
			}
		}
	}()
	return h
}

// stop ends the sampling and writes the peak's profile to path.
func (h *heapPeak) stop(path string) (uint64, error) {
	close(h.done)
	best := <-h.out
	if best.profile == nil {
		return 0, fmt.Errorf("-memprofile: no heap sample was taken")
	}
	return best.bytes, os.WriteFile(path, best.profile, 0o644)
}
