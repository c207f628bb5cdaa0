// Command bulwark-bench runs bulwark's benchmark harness: generated stacks
// on the mock provider through the real binaries, the floor measured in the
// same run, OpenTofu or Terraform beside it when on PATH, and a markdown
// table under bench/. With -guard it is the regression guard CI runs: it
// fails when a figure is further from the floor than bench/guard.json allows.
//
//	bulwark-bench                       # N = 100, 1,000, 10,000, flat and chain
//	bulwark-bench -quick                # N = 1,000 only
//	bulwark-bench -sizes 100 -shapes chain -out ''
//	bulwark-bench -guard bench/guard.json   # paths from the repository's root, as make runs it
//	bulwark-bench -guard bench/guard.json -calibrate 2.5   # rewrite the margins from this run
//	bulwark-bench -profile apply -shapes flat -sizes 1000 -cpuprofile cpu.pprof
//	bulwark-bench -latency -count 3     # the latency rows against their limit (make bench-latency)
//	bulwark-bench -latency -latencies 200 -parallelisms 10 -batch off -rate-limit 0
//	bulwark-bench -modules -count 3 -compare none   # 10,000 as 100 calls of a 100-resource module beside 10,000 flat (make bench-modules)
//	bulwark-bench -terraform-protocol -count 3   # 1,000 items of the Terraform test providers beside Terraform (make bench-terraform)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bulwark-iac/bulwark/tools/bench/benchharness"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

type options struct {
	root, bulwark, pluginDir, scratch, out string
	shapes, sizes, compare                 string
	quick, keep, modules                   bool
	parallelism                            int
	budget                                 time.Duration
	floorCalls, floorAppends               int
	guard                                  string
	guardFull                              bool
	count                                  int
	latencyMS                              int
	calibrate                              float64
	profile, cpuProfile, pluginProfile     string
	memProfile, allocProfile, traceFile    string
	state                                  string
	lat                                    latencyOptions
	tf                                     tfOptions
}

func run(args []string) int {
	var o options
	fs := flag.NewFlagSet("bulwark-bench", flag.ContinueOnError)
	fs.StringVar(&o.root, "root", "", "the repository's root (default: the folder holding go.work, from here upward)")
	fs.StringVar(&o.bulwark, "bulwark", "", "the bulwark executable to measure (default: build it from -root)")
	fs.StringVar(&o.pluginDir, "plugin-dir", "", "the folder holding bulwark-provider-mock (default: plugins/ beside -bulwark)")
	fs.StringVar(&o.scratch, "scratch", "", "where the stacks' fresh state folders are made; the journal floor is measured there too (default: the system's temp folder)")
	fs.StringVar(&o.out, "out", "bench", "write the table as OUT/results-DATE.md and OUT/latest.md (relative to -root); '' writes nothing")
	fs.StringVar(&o.shapes, "shapes", "flat,chain", "stack shapes: flat (independent) and/or chain (each depends on the one before)")
	fs.StringVar(&o.sizes, "sizes", "100,1000,10000", "stack sizes N")
	fs.BoolVar(&o.quick, "quick", false, "N = 1,000 only")
	fs.BoolVar(&o.modules, "modules", false, "the module rows (issue 22): shapes flat and modules (N resources as calls of a 100-resource module) at -sizes (default 10,000 here), their modules ÷ flat ratio against the 1.5× bound, written to OUT/modules-DATE.md (latest.md is left alone)")
	fs.StringVar(&o.compare, "compare", "auto", "auto: run tofu and terraform too when on PATH; none: bulwark alone")
	fs.IntVar(&o.count, "count", 1, "run each stack this many times and report the median run of each command (with -profile: run the profiled command this many times, each on a fresh stack, into one profile)")
	fs.IntVar(&o.latencyMS, "latency-ms", 0, "every call to the mock takes this long (its latency_ms); with it, no tool runs beside (they have no such latency)")
	fs.IntVar(&o.parallelism, "parallelism", 10, "bulwark's --parallelism and the tools' -parallelism")
	fs.DurationVar(&o.budget, "budget", 5*time.Minute, "stop a command still running after this long (0: never); the rest of its stack is skipped")
	fs.IntVar(&o.floorCalls, "floor-calls", 2000, "gRPC round trips timed for the floor")
	fs.IntVar(&o.floorAppends, "floor-appends", 500, "journal appends timed for the floor")
	fs.StringVar(&o.guard, "guard", "", "check bulwark's figures against this guard file (exit 1 past a margin); runs only the guarded shapes at its N, without the tools")
	fs.Float64Var(&o.calibrate, "calibrate", 0, "with -guard: rewrite the guard file's margins from this run: each = measured × floor × this factor")
	fs.BoolVar(&o.guardFull, "guard-full", false, "with -guard: run every -shapes and -sizes and the tools as without -guard (and write the table), and check or calibrate the guard from the figures at its N")
	fs.StringVar(&o.profile, "profile", "", "instead of the table: run this one command (validate, plan, apply, no-op plan, no-op apply, teardown) in process on the first of -shapes and -sizes, with the CPU profile on")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "cpu.pprof", "with -profile: where the CPU profile goes")
	fs.StringVar(&o.memProfile, "memprofile", "", "with -profile: also write the heap profile of the moment the live heap was largest (what holds the memory at the peak) here")
	fs.StringVar(&o.traceFile, "trace", "", "with -profile: also write the runtime's execution trace of the profiled runs here (go tool trace FILE; go tool trace -pprof=syscall|sync|sched FILE for where they waited)")
	fs.StringVar(&o.allocProfile, "allocprofile", "", "with -profile: also write the heap profile taken after the profiled runs here: its alloc_objects and alloc_space are what they allocated (GODEBUG=memprofilerate=1 makes them exact counts)")
	fs.StringVar(&o.pluginProfile, "plugin-cpuprofile", "", "with -profile: also profile the plugin processes the profiled command starts, each into `PREFIX`.PID (sdk.CPUProfileEnv); merge them with go tool pprof -proto PREFIX.* > merged.pprof")
	fs.StringVar(&o.state, "state", "", "also run bulwark's stacks with --state `URL` (postgres://USER@HOST:PORT/DB?sslmode=…, each stack run in a schema of its own; or s3://…), each run interleaved with the file backend's, and print URL's backend ÷ file")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch folders (specs, state folders, each command's output)")
	fs.BoolVar(&o.lat.on, "latency", false, "instead of the table: the latency rows (apply and teardown on the mock with latency_ms, with and without its batch calls, each against the ideal engine's limit, the tools beside), written to OUT/latency-DATE.md")
	fs.StringVar(&o.lat.shapes, "latency-shapes", "flat,layers", "with -latency: stack shapes (flat, chain, layers: 10 layers, each resource depending on two of the layer before)")
	fs.IntVar(&o.lat.n, "latency-n", 200, "with -latency: resources per stack")
	fs.StringVar(&o.lat.latencies, "latencies", "50,200", "with -latency: the mock's latency_ms values (the tools' sleep)")
	fs.StringVar(&o.lat.parallelisms, "parallelisms", "10,50", "with -latency: bulwark's --parallelism and the tools' -parallelism")
	fs.StringVar(&o.lat.batch, "batch", "on,off", "with -latency: on = the batching mock, off = the mock without its batch calls (BULWARK_MOCK_BATCH=off, as real providers are)")
	fs.IntVar(&o.lat.rateLimit, "rate-limit", 50, "with -latency: also apply and tear down flat -rate-n on the mock with this rate_limit (calls per second; 0: skip those rows)")
	fs.IntVar(&o.lat.rateN, "rate-n", 1000, "with -latency: resources of the rate-limited stack")
	fs.IntVar(&o.lat.ratePar, "rate-parallelism", 10, "with -latency: --parallelism of the rate-limited stack")
	fs.IntVar(&o.lat.rollbackLatency, "rollback-latency", 50, "with -latency: also the rollback rows: an apply of -latency-n whose last resource's Create fails (the mock's fail_create), rolled back, at this latency_ms (0: skip those rows)")
	fs.IntVar(&o.lat.rollbackPar, "rollback-parallelism", 10, "with -latency: --parallelism of the rollback rows")
	fs.StringVar(&o.lat.rollbackShapes, "rollback-shapes", "flat", "with -latency: the rollback rows' stack shapes")
	fs.StringVar(&o.lat.mockWorld, "mock-world", "", "with -latency: keep each stack's mock world (the simulated cloud's records) in a fresh folder under DIR, e.g. /dev/shm, so the mock's own fsync per change is not in the figures (default: the mock's data folder)")
	fs.BoolVar(&o.lat.callsAlone, "calls-alone", true, "with -latency: also each latency row's calls alone: the provider calls the limit counts, made by a driver in this process with no engine (no plan, journal or state), each call alone (no batch calls); what the calls themselves cost on this machine")
	fs.BoolVar(&o.tf.on, "terraform-protocol", false, "instead of the table: the Terraform-protocol rows (a flat stack of -tf-n items of a test provider built for Terraform, bulwark beside Terraform on the same binary, and the same N on the mock), written to OUT/terraform-DATE.md")
	fs.StringVar(&o.tf.mirror, "tf-mirror", "", "with -terraform-protocol: the filesystem mirror holding the test providers (default: bin/testproviders under -root, as make build-testproviders writes it)")
	fs.StringVar(&o.tf.providers, "tf-providers", "fwtest,sdktest", "with -terraform-protocol: the test providers whose items make the stack (fwtest and/or sdktest)")
	fs.StringVar(&o.tf.profileProvider, "profile-tf", "", "with -profile: profile the stack of -sizes items of this Terraform test provider (fwtest or sdktest, from -tf-mirror) instead of the mock's")
	fs.IntVar(&o.tf.n, "tf-n", 1000, "with -terraform-protocol: resources per stack")
	fs.IntVar(&o.tf.calls, "tf-calls", 20, "with -terraform-protocol: also count the provider calls per resource each tool makes on a stack of this many items, from the provider's trace log (0: skip)")
	fs.StringVar(&o.tf.world, "tf-world", "", "with -terraform-protocol: keep every stack's world (the simulated cloud's records: the test providers' and the mock's alike) in a fresh folder under DIR, e.g. /dev/shm, so that neither side's figures hold its storage's disk work (default: the stack's folder for the test providers, the mock's data folder for the mock)")
	fs.StringVar(&o.tf.env, "tf-env", "", "with -terraform-protocol: NAME=VALUE pairs (space-separated) added to the environment of every command of both tools, e.g. TF_LOG_SDK=off")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.modules {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["shapes"] || set["quick"] || set["guard"] || set["state"] {
			fmt.Fprintln(os.Stderr, "bulwark-bench: -modules runs the flat and modules shapes: not with -shapes, -quick, -guard or -state")
			return 2
		}
		o.shapes = "flat,modules"
		if !set["sizes"] {
			o.sizes = "10000"
		}
	}
	if err := o.run(); err != nil {
		fmt.Fprintf(os.Stderr, "bulwark-bench: %v\n", err)
		return 1
	}
	return 0
}

type errGuard struct{ failed int }

func (e errGuard) Error() string {
	return fmt.Sprintf("regression guard: %d figure(s) fell behind their floor multiple (see the table above)", e.failed)
}

func (o options) run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := o.root
	if root == "" {
		r, err := benchharness.FindRoot(".")
		if err != nil {
			return err
		}
		root = r
	}
	shapes, err := parseShapes(o.shapes)
	if err != nil {
		return err
	}
	sizes, err := parseSizes(o.sizes)
	if err != nil {
		return err
	}
	if o.state != "" {
		if o.state, err = benchharness.ParseStateURL(o.state); err != nil {
			return err
		}
	}
	if o.quick {
		sizes = []int{1000}
	}
	var guard *benchharness.GuardFile
	if o.guard != "" {
		if guard, err = benchharness.LoadGuard(o.guard); err != nil {
			if o.calibrate <= 0 || !errors.Is(err, os.ErrNotExist) {
				return err
			}
			// Calibrating a guard file that does not exist yet: the default guard.
			guard = &benchharness.GuardFile{N: 1000, Max: map[benchharness.Shape]map[string]float64{}}
			for _, s := range shapes {
				guard.Max[s] = map[string]float64{}
				for _, c := range benchharness.Commands {
					guard.Max[s][c] = 1e9
				}
			}
		}
		if o.guardFull {
			if !slices.Contains(sizes, guard.N) {
				sizes = append(sizes, guard.N)
				slices.Sort(sizes)
			}
			for _, s := range guard.Shapes() {
				if !slices.Contains(shapes, s) {
					shapes = append(shapes, s)
				}
			}
		} else {
			sizes, shapes = []int{guard.N}, guard.Shapes()
			o.compare = "none"
		}
	} else if o.calibrate > 0 || o.guardFull {
		return errors.New("-calibrate and -guard-full need -guard FILE")
	}
	if o.lat.on && (o.guard != "" || o.profile != "") {
		return errors.New("-latency runs its own rows: not with -guard or -profile")
	}
	if o.tf.on && (o.lat.on || o.guard != "" || o.profile != "") {
		return errors.New("-terraform-protocol runs its own rows: not with -latency, -guard or -profile")
	}

	scratch := o.scratch
	if scratch == "" {
		scratch = os.TempDir()
	}
	if scratch, err = os.MkdirTemp(scratch, "bulwark-bench-"); err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "scratch folders kept in %s\n", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}

	bulwark, pluginDir := o.bulwark, o.pluginDir
	if bulwark == "" {
		fmt.Fprintf(os.Stderr, "building bulwark and the mock provider from %s\n", root)
		if bulwark, pluginDir, err = benchharness.Build(ctx, root, filepath.Join(scratch, "bin")); err != nil {
			return err
		}
	} else {
		if bulwark, err = filepath.Abs(bulwark); err != nil {
			return err
		}
		if pluginDir == "" {
			pluginDir = filepath.Join(filepath.Dir(bulwark), "plugins")
		}
	}
	if pluginDir, err = filepath.Abs(pluginDir); err != nil {
		return err
	}

	if o.lat.on {
		return o.runLatency(ctx, root, bulwark, pluginDir, scratch)
	}
	if o.tf.on {
		return o.runTFProtocol(ctx, root, bulwark, pluginDir, scratch)
	}
	if o.profile != "" {
		if o.tf.profileProvider != "" && o.tf.mirror == "" {
			o.tf.mirror = filepath.Join(root, "bin", "testproviders")
		}
		return profile(ctx, profileRun{
			command: o.profile, shape: shapes[0], n: sizes[0], latencyMS: o.latencyMS, count: o.count,
			pluginDir: pluginDir, scratch: scratch, parallelism: o.parallelism,
			cpuFile: o.cpuProfile, pluginPrefix: o.pluginProfile, memFile: o.memProfile,
			allocFile: o.allocProfile, traceFile: o.traceFile, tfProvider: o.tf.profileProvider, tfMirror: o.tf.mirror,
		})
	}

	noComparison := ""
	switch {
	case guard != nil && !o.guardFull:
		noComparison = "the guard runs bulwark alone"
	case o.latencyMS > 0:
		o.compare = "none"
		noComparison = "the mock has a latency the tools' terraform_data does not"
	case o.compare == "none":
		noComparison = "not asked for: -compare none"
	}
	var tools []benchharness.Tool
	switch o.compare {
	case "auto":
		tools = benchharness.FindTools(ctx)
		if len(tools) == 0 {
			fmt.Fprintln(os.Stderr, "neither tofu nor terraform is on PATH: measuring bulwark alone")
		}
	case "none":
	default:
		return fmt.Errorf("-compare %q: want auto or none", o.compare)
	}

	rep := &benchharness.Report{
		Date:         time.Now().UTC(),
		CPUs:         runtime.NumCPU(),
		GoVersion:    runtime.Version(),
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
		Commit:       benchharness.Commit(ctx, root),
		Load:         loadAverage(),
		Args:         commandLine(os.Args),
		Parallelism:  o.parallelism,
		Count:        max(o.count, 1),
		Interleave:   o.modules,
		LatencyMS:    o.latencyMS,
		Tools:        tools,
		NoComparison: noComparison,
		StateURL:     benchharness.Redact(o.state),
	}
	if o.budget > 0 {
		rep.Budget = o.budget.String()
	}

	fmt.Fprintf(os.Stderr, "measuring the floor (%d gRPC round trips, %d journal appends in %s)\n", o.floorCalls, o.floorAppends, scratch)
	floor, err := benchharness.MeasureFloor(ctx, []string{pluginDir}, scratch, o.floorCalls, o.floorAppends)
	if err != nil {
		return err
	}
	rep.Floor = floor
	fmt.Fprintf(os.Stderr, "floor: round trip %s + journal append %s = %s per resource (bare write+fsync %s)\n",
		floor.RoundTrip, floor.Append, floor.PerResource(), floor.RawSync)

	cfg := benchharness.Config{
		Bulwark: bulwark, PluginDir: pluginDir, Shapes: shapes, Sizes: sizes,
		Parallelism: o.parallelism, Budget: o.budget, Scratch: scratch, Tools: tools,
		Progress: os.Stderr, Keep: o.keep, Count: o.count, LatencyMS: o.latencyMS,
		StateURL: o.state, Interleave: o.modules,
	}
	if guard != nil && !o.guardFull {
		// Only what the guard checks, and what that needs.
		cfg.Want = func(_ string, shape benchharness.Shape, _ int, command string) bool {
			_, ok := guard.Max[shape][command]
			return ok
		}
	}
	if guard != nil && !o.guardFull && o.calibrate <= 0 {
		// A guarded command past its margin has failed: stop it a little
		// after, so a regression costs CI no more than its margin.
		cfg.BudgetFor = func(tool string, shape benchharness.Shape, n int, command string) time.Duration {
			if a := guard.Allowed(floor, shape, command); a > 0 {
				// The figure is scaled by the mean of this floor and
				// the one measured after: leave room for the second.
				return a + a/2 + 10*time.Second
			}
			return o.budget
		}
	}
	results, err := benchharness.RunStacks(ctx, cfg)
	rep.Results, rep.LoadAfter = results, loadAverage()
	if err != nil {
		return err
	}
	after, err := benchharness.MeasureFloor(ctx, []string{pluginDir}, scratch, o.floorCalls, o.floorAppends)
	if err != nil {
		return err
	}
	rep.FloorBefore, rep.FloorAfter = floor, after
	floor = benchharness.MeanFloor(floor, after)
	rep.Floor = floor
	fmt.Fprintf(os.Stderr, "floor after: round trip %s + journal append %s = %s per resource; the figures are scaled by the mean, %s\n",
		after.RoundTrip, after.Append, after.PerResource(), floor.PerResource())

	var failure error
	for _, r := range results {
		if (r.Tool == benchharness.ToolBulwark || (o.state != "" && r.Tool == benchharness.ToolRemote(o.state))) && r.Skipped == "" && !r.Stopped && r.ExitCode != 0 {
			failure = fmt.Errorf("%s %s on %s %d exited %d: %s", r.Tool, r.Command, r.Shape, r.N, r.ExitCode, r.Tail)
			break
		}
	}
	if guard != nil {
		if o.calibrate > 0 {
			g, err := benchharness.Calibrate(guard, results, floor, o.calibrate,
				fmt.Sprintf("%s on %d cores, commit %s, load average %s; floor %s (round trip %s + append %s)",
					rep.Date.Format("2006-01-02 15:04 UTC"), rep.CPUs, rep.Commit, rep.Load, floor.PerResource(), floor.RoundTrip, floor.Append))
			if err != nil {
				return err
			}
			if err := g.Write(o.guard); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s: margins = measured × %g\n", o.guard, o.calibrate)
			guard = g
		}
		rep.Guard = guard.Check(filepath.Base(o.guard), floor, results)
		if n := len(rep.Guard.Failed()); n > 0 && failure == nil {
			failure = errGuard{failed: n}
		}
	}

	md := rep.Markdown()
	fmt.Print(md)
	if o.out != "" && (guard == nil || o.guardFull) {
		dir := o.out
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if o.modules {
			name := filepath.Join(dir, "modules-"+rep.Date.Format("2006-01-02-1504")+".md")
			if err := os.WriteFile(name, []byte(md), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s\n", name)
			return failure
		}
		name := filepath.Join(dir, "results-"+rep.Date.Format("2006-01-02-1504")+".md")
		for _, p := range []string{name, filepath.Join(dir, "latest.md")} {
			if err := os.WriteFile(p, []byte(md), 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "wrote %s and %s\n", name, filepath.Join(dir, "latest.md"))
	}
	return failure
}

func parseShapes(s string) ([]benchharness.Shape, error) {
	var out []benchharness.Shape
	for _, f := range strings.Split(s, ",") {
		sh, err := benchharness.ParseShape(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-shapes: %w", err)
		}
		out = append(out, sh)
	}
	return out, nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(f, "_", "")))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sizes: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadAverage is /proc/loadavg's three averages, "" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// commandLine is args as a person would type them again.
func commandLine(args []string) string {
	out := []string{"bulwark-bench"}
	for _, a := range args[1:] {
		if a == "" || strings.ContainsAny(a, " \t'\"$") {
			a = strconv.Quote(a)
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}
