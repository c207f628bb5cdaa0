package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/tools/bench/benchharness"
)

// latencyOptions are the flags of -latency.
type latencyOptions struct {
	on                           bool
	shapes                       string
	n                            int
	latencies, parallelisms      string
	batch                        string
	rateLimit, rateN, ratePar    int
	rollbackLatency, rollbackPar int
	rollbackShapes               string
	mockWorld                    string
	callsAlone                   bool
}

// runLatency runs the latency rows instead of the standard table and
// writes OUT/latency-DATE.md.
func (o options) runLatency(ctx context.Context, root, bulwark, pluginDir, scratch string) error {
	lo := o.lat
	shapes, err := parseShapes(lo.shapes)
	if err != nil {
		return err
	}
	latencies, err := parseInts("-latencies", lo.latencies, 1)
	if err != nil {
		return err
	}
	parallelisms, err := parseInts("-parallelisms", lo.parallelisms, 1)
	if err != nil {
		return err
	}
	batch, err := parseBatch(lo.batch)
	if err != nil {
		return err
	}
	if lo.n < 1 || lo.rateN < 1 || lo.rateLimit < 0 || lo.rollbackLatency < 0 || lo.rollbackPar < 1 {
		return fmt.Errorf("-latency-n, -rate-n and -rollback-parallelism must be positive, -rate-limit and -rollback-latency 0 or more")
	}
	rollbackShapes, err := parseShapes(lo.rollbackShapes)
	if err != nil {
		return err
	}
	var tools []benchharness.Tool
	noComparison := ""
	switch o.compare {
	case "auto":
		tools = benchharness.FindTools(ctx)
		if len(tools) == 0 {
			fmt.Fprintln(os.Stderr, "neither tofu nor terraform is on PATH: measuring bulwark alone")
		}
	case "none":
		noComparison = "not asked for: -compare none"
	default:
		return fmt.Errorf("-compare %q: want auto or none", o.compare)
	}
	cfg := benchharness.LatencyConfig{
		Bulwark: bulwark, PluginDir: pluginDir, Scratch: scratch, Shapes: shapes, N: lo.n,
		LatenciesMS: latencies, Parallelisms: parallelisms, Batch: batch, Tools: tools,
		Count: o.count, Budget: o.budget, TeardownParallelism: benchharness.DetectTeardownParallelism(ctx, bulwark),
		RateLimit: lo.rateLimit, RateN: lo.rateN, RateParallelism: lo.ratePar,
		RollbackLatencyMS: lo.rollbackLatency, RollbackParallelism: lo.rollbackPar, RollbackShapes: rollbackShapes,
		MockWorld: lo.mockWorld, CallsAlone: lo.callsAlone,
		Progress: os.Stderr, Keep: o.keep,
	}
	rep := &benchharness.LatencyReport{
		Date: time.Now().UTC(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Commit: benchharness.Commit(ctx, root),
		Load: loadAverage(), Args: commandLine(os.Args), Count: max(o.count, 1), Tools: tools,
		NoComparison: noComparison, TeardownParallelism: cfg.TeardownParallelism, MockWorld: lo.mockWorld,
	}
	if o.budget > 0 {
		rep.Budget = o.budget.String()
	}
	rows, err := benchharness.RunLatency(ctx, cfg)
	rep.Rows, rep.LoadAfter = rows, loadAverage()
	if err != nil {
		return err
	}
	var failure error
	for _, r := range rows {
		if res := r.Bulwark; res.Skipped == "" && !res.OK() {
			failure = fmt.Errorf("bulwark %s on %s, %s mock, did not finish with exit %d: %s", r.Command, r.Setting(), r.Mock(), res.WantExit, res.Tail)
			break
		}
	}
	md := rep.Markdown()
	fmt.Print(md)
	if o.out != "" {
		dir := o.out
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		name := filepath.Join(dir, "latency-"+rep.Date.Format("2006-01-02-1504")+".md")
		if err := os.WriteFile(name, []byte(md), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", name)
	}
	return failure
}

// parseInts reads a comma-separated list of numbers of at least least.
func parseInts(flag, s string, least int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			return nil, fmt.Errorf("%s: %q is not a number of at least %d", flag, f, least)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseBatch reads -batch: on (the batching mock) and/or off (without its
// batch calls).
func parseBatch(s string) ([]bool, error) {
	var out []bool
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "on":
			out = append(out, true)
		case "off":
			out = append(out, false)
		default:
			return nil, fmt.Errorf("-batch: %q: want on and/or off", f)
		}
	}
	return out, nil
}
