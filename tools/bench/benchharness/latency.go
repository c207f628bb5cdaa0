package benchharness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// LatencyCommands are the commands a latency row measures, in the order
// they run on a stack.
var LatencyCommands = []string{CmdApply, CmdTeardown}

// CmdRollback is a rollback row's command: an apply whose last resource's
// Create fails (the mock's fail_create), rolled back; bulwark exits 11.
const CmdRollback = "apply, rolled back"

// ExitRolledBack is bulwark's exit code for an apply that failed and was
// rolled back (docs/architecture.md, exit codes).
const ExitRolledBack = 11

// RollbackFailing is the resource of a stack of n whose Create a rollback
// row makes fail: the last in topological order, so the most is created
// (and undone) before the failure.
func RollbackFailing(n int) int { return n - 1 }

// EnvMockBatch is the mock provider's switch for its batch calls
// (mockprovider.EnvBatch): "off" serves it without ReadMany, ValidateMany
// and CreateMany, the way real providers are. bulwark passes its
// environment to its plugins.
const EnvMockBatch = "BULWARK_MOCK_BATCH"

// LatencyConfig says what RunLatency measures: every shape × latency ×
// parallelism, each on the mock with and without its batch calls as Batch
// says, and the tools beside; then, when RateLimit is set, the
// rate-limited rows.
type LatencyConfig struct {
	Bulwark   string // the bulwark executable
	PluginDir string // the folder holding bulwark-provider-mock
	Scratch   string // where each stack's fresh folder is made
	Shapes    []Shape
	N         int // resources per stack
	// LatenciesMS are the mock's latency_ms values (the tools' sleep).
	LatenciesMS  []int
	Parallelisms []int
	// Batch is the mock's modes: true the batching mock, false the mock
	// with its batch calls hidden (EnvMockBatch=off).
	Batch []bool
	Tools []Tool // run beside bulwark on the latency rows
	// Count is how many times each stack is run; each figure is the
	// median run's. The runs are interleaved: bulwark on each mock, then
	// each tool, then again, so a shared machine's load moves all alike.
	Count  int
	Budget time.Duration // the longest one command (or the calls alone's apply or teardown) may run; 0: no limit
	// TeardownParallelism passes --parallelism to bulwark's teardown
	// (DetectTeardownParallelism says whether it takes it).
	TeardownParallelism bool
	// RateLimit, when above 0, adds the rate-limited rows: flat RateN on
	// the mock with rate_limit: RateLimit and no latency, at parallelism
	// RateParallelism, on each mock of Batch, bulwark alone.
	RateLimit, RateN, RateParallelism int
	// RollbackLatencyMS, when above 0, adds the rollback rows: an apply of
	// each RollbackShapes at N, on each mock of Batch, with latency_ms
	// RollbackLatencyMS, --parallelism RollbackParallelism, in which the
	// Create of the last resource (RollbackFailing) fails and what was
	// created is rolled back; bulwark alone (the tools have no rollback).
	RollbackLatencyMS, RollbackParallelism int
	RollbackShapes                         []Shape
	// MockWorld, when set, is where each stack's mock keeps its world (a
	// fresh folder in it, the mock's world key): on a tmpfs such as
	// /dev/shm, the simulated cloud's own fsync per change is out of the
	// figures, as the limit assumes (every call takes L). Empty: the
	// mock's data folder, beside bulwark's state.
	MockWorld string
	// CallsAlone adds each latency row's calls alone (see callsalone.go):
	// the row's provider calls made by a driver with no engine, once a run
	// after bulwark's, each call alone (no batch calls).
	CallsAlone bool
	Progress   io.Writer
	Keep       bool
}

// LatencyRow is one command on one stack, mock and setting, with its limit.
type LatencyRow struct {
	Shape       Shape
	N           int
	LatencyMS   int
	Parallelism int
	Batch       bool // the batching mock (true) or the one without batch calls
	RateLimit   int  // the mock's rate_limit; 0 on the latency rows
	Command     string
	// Limit is the ideal engine's time (Limit) plus Startup; on a
	// rate-limited row, N ÷ RateLimit seconds.
	Limit time.Duration
	// Startup is what bulwark's command costs apart from the provider's
	// latency and the graph: the same command on a stack of one resource
	// on the same mock without latency (the process, the plugin's start
	// and handshake, the lock, the state and journal files, the plugin's
	// end), measured interleaved with the row's runs. An ideal scheduler
	// removes none of it; 0 on a rate-limited row.
	Startup time.Duration
	Bulwark Result
	// CallsAlone is what the row's provider calls alone took, with no
	// engine around them (see callsalone.go; the median run's), plus
	// Startup: bulwark's figure were its plan, journal, state and engine
	// free. 0 where not measured (LatencyConfig.CallsAlone off, a rollback
	// or rate-limited row, or no start-up measured).
	CallsAlone time.Duration
	// Tools are the tools' figures, in LatencyConfig.Tools' order (the
	// same in a row's batching and non-batching rows: the tools have no
	// mock); none on a rate-limited row.
	Tools []Result
}

// Setting names the row's stack and setting: "flat 200, latency 50 ms,
// parallelism 10".
func (r LatencyRow) Setting() string {
	setting := fmt.Sprintf("latency %d ms", r.LatencyMS)
	if r.RateLimit > 0 {
		setting = fmt.Sprintf("rate_limit %d/s", r.RateLimit)
	}
	return fmt.Sprintf("%s %s, %s, parallelism %d", r.Shape, fmtCount(r.N), setting, r.Parallelism)
}

// Mock names the row's mock: "batching" or "no batch calls".
func (r LatencyRow) Mock() string { return mockName(r.Batch) }

// Multiple is bulwark's figure ÷ the limit; 0 when either is missing.
func (r LatencyRow) Multiple() float64 { return multipleOf(r.Bulwark, r.Limit) }

// CallsAloneMultiple is the calls alone's figure ÷ the limit; 0 when
// either is missing.
func (r LatencyRow) CallsAloneMultiple() float64 {
	if r.CallsAlone <= 0 || r.Limit <= 0 {
		return 0
	}
	return float64(r.CallsAlone) / float64(r.Limit)
}

// multipleOf is res's wall time ÷ limit: 0 when either is missing or res
// failed (a stopped command's is a lower bound, and shown as one).
func multipleOf(res Result, limit time.Duration) float64 {
	if limit <= 0 || res.Skipped != "" || res.Wall <= 0 || res.exitedWrong() {
		return 0
	}
	return float64(res.Wall) / float64(limit)
}

// RateLimitBound is the least time n mutating calls take at rate calls per
// second.
func RateLimitBound(n, rate int) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(rate)
}

// DetectTeardownParallelism reports whether bulwark's teardown takes
// --parallelism (its help names the flag).
func DetectTeardownParallelism(ctx context.Context, bulwark string) bool {
	out, _ := exec.CommandContext(ctx, bulwark, "teardown", "--help").CombinedOutput()
	return strings.Contains(string(out), "--parallelism")
}

// latencyKey names one stack setting.
type latencyKey struct {
	shape       Shape
	n           int
	latencyMS   int
	parallelism int
	rateLimit   int
	rollback    bool // the last resource's Create fails: the apply rolls back
}

// RunLatency runs the latency rows (see LatencyConfig) and returns them in
// table order: shape, latency, parallelism, mock, command; the
// rate-limited rows last. A command that fails or is stopped skips the rest
// of its stack; the error is for what kept the harness itself from working.
func RunLatency(ctx context.Context, cfg LatencyConfig) ([]LatencyRow, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.RateParallelism <= 0 {
		cfg.RateParallelism = 10
	}
	exec.CommandContext(ctx, cfg.Bulwark, "version").Run() // load it once, untimed
	var rows []LatencyRow
	for _, shape := range cfg.Shapes {
		g := ShapeGraph(shape, cfg.N)
		for _, l := range cfg.LatenciesMS {
			for _, p := range cfg.Parallelisms {
				key := latencyKey{shape: shape, n: cfg.N, latencyMS: l, parallelism: p}
				bw := make([][][]Result, len(cfg.Batch)) // [mock][run][command]
				sw := make([][][]Result, len(cfg.Batch)) // the start-up stack's, alike
				tw := make([][][]Result, len(cfg.Tools)) // [tool][run][command]
				var alone [][]time.Duration              // [command][run]
				for i := 0; i < max(cfg.Count, 1); i++ {
					for b, batch := range cfg.Batch {
						rs, err := cfg.runBulwark(ctx, key, batch)
						bw[b] = append(bw[b], rs)
						if err != nil {
							return rows, err
						}
						rs, err = cfg.runBulwark(ctx, startupKey(p), batch)
						sw[b] = append(sw[b], rs)
						if err != nil {
							return rows, err
						}
					}
					if cfg.CallsAlone {
						fmt.Fprintf(cfg.Progress, "-- the calls alone: %s\n", key)
						a, t, err := runCallsAlone(ctx, cfg.PluginDir, cfg.Scratch, cfg.MockWorld, g, l, p, cfg.Budget)
						if err != nil {
							return rows, err
						}
						alone = appendRun(alone, a, t)
					}
					for t, tool := range cfg.Tools {
						rs, err := cfg.runTool(ctx, key, tool)
						tw[t] = append(tw[t], rs)
						if err != nil {
							return rows, err
						}
					}
				}
				tools := make([][]Result, len(cfg.Tools))
				for t := range cfg.Tools {
					tools[t] = Median(tw[t])
				}
				for b, batch := range cfg.Batch {
					ours, startup := Median(bw[b]), Median(sw[b])
					for c, command := range LatencyCommands {
						row := LatencyRow{Shape: shape, N: cfg.N, LatencyMS: l, Parallelism: p, Batch: batch, Command: command,
							Limit: Limit(g, command, time.Duration(l)*time.Millisecond, p), Bulwark: ours[c]}
						if c < len(startup) && startup[c].OK() {
							row.Startup = startup[c].Wall
							row.Limit += row.Startup
							if c < len(alone) {
								row.CallsAlone = medianDuration(alone[c]) + row.Startup
							}
						}
						for t := range cfg.Tools {
							row.Tools = append(row.Tools, tools[t][c])
						}
						rows = append(rows, row)
					}
				}
			}
		}
	}
	if cfg.RollbackLatencyMS > 0 {
		rb, err := cfg.runRollbackRows(ctx)
		rows = append(rows, rb...)
		if err != nil {
			return rows, err
		}
	}
	if cfg.RateLimit > 0 {
		key := latencyKey{shape: Flat, n: cfg.RateN, parallelism: cfg.RateParallelism, rateLimit: cfg.RateLimit}
		for _, batch := range cfg.Batch {
			var runs [][]Result
			for i := 0; i < max(cfg.Count, 1); i++ {
				rs, err := cfg.runBulwark(ctx, key, batch)
				runs = append(runs, rs)
				if err != nil {
					return rows, err
				}
			}
			for c, res := range Median(runs) {
				rows = append(rows, LatencyRow{Shape: Flat, N: cfg.RateN, Parallelism: cfg.RateParallelism, Batch: batch,
					RateLimit: cfg.RateLimit, Command: LatencyCommands[c], Limit: RateLimitBound(cfg.RateN, cfg.RateLimit), Bulwark: res})
			}
		}
	}
	return rows, nil
}

// appendRun adds one run's figure for each command (LatencyCommands'
// order) to runs, indexed [command][run].
func appendRun(runs [][]time.Duration, byCommand ...time.Duration) [][]time.Duration {
	if runs == nil {
		runs = make([][]time.Duration, len(byCommand))
	}
	for c, d := range byCommand {
		runs[c] = append(runs[c], d)
	}
	return runs
}

// medianDuration is the median of ds, without changing ds.
func medianDuration(ds []time.Duration) time.Duration {
	return median(slices.Clone(ds))
}

// startupKey is the stack whose commands measure a row's start-up: one
// resource, no latency, at the row's parallelism.
func startupKey(parallelism int) latencyKey {
	return latencyKey{shape: Flat, n: 1, parallelism: parallelism}
}

// runRollbackRows runs the rollback rows (see LatencyConfig), interleaved
// as the latency rows are: each mock's failed apply, then its start-up
// stack (one resource whose Create fails, no latency), again Count times.
func (cfg LatencyConfig) runRollbackRows(ctx context.Context) ([]LatencyRow, error) {
	shapes := cfg.RollbackShapes
	if len(shapes) == 0 {
		shapes = []Shape{Flat}
	}
	p := max(cfg.RollbackParallelism, 1)
	var rows []LatencyRow
	for _, shape := range shapes {
		key := latencyKey{shape: shape, n: cfg.N, latencyMS: cfg.RollbackLatencyMS, parallelism: p, rollback: true}
		startup := latencyKey{shape: Flat, n: 1, parallelism: p, rollback: true}
		bw := make([][][]Result, len(cfg.Batch))
		sw := make([][][]Result, len(cfg.Batch))
		for i := 0; i < max(cfg.Count, 1); i++ {
			for b, batch := range cfg.Batch {
				rs, err := cfg.runBulwark(ctx, key, batch)
				bw[b] = append(bw[b], rs)
				if err != nil {
					return rows, err
				}
				rs, err = cfg.runBulwark(ctx, startup, batch)
				sw[b] = append(sw[b], rs)
				if err != nil {
					return rows, err
				}
			}
		}
		limit := RollbackLimit(ShapeGraph(shape, cfg.N), RollbackFailing(cfg.N), time.Duration(cfg.RollbackLatencyMS)*time.Millisecond, p)
		for b, batch := range cfg.Batch {
			ours, start := Median(bw[b]), Median(sw[b])
			row := LatencyRow{Shape: shape, N: cfg.N, LatencyMS: cfg.RollbackLatencyMS, Parallelism: p, Batch: batch,
				Command: CmdRollback, Limit: limit, Bulwark: ours[0]}
			if len(start) > 0 && start[0].OK() {
				row.Startup = start[0].Wall
				row.Limit += row.Startup
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// mockName is how the progress output and the table name a mock mode.
func mockName(batch bool) string {
	if batch {
		return "batching"
	}
	return "no batch calls"
}

// stackConfig is the Config a latency stack's stackRun needs.
func (cfg LatencyConfig) stackConfig() Config {
	return Config{Scratch: cfg.Scratch, Budget: cfg.Budget, Progress: cfg.Progress, Keep: cfg.Keep}
}

func (k latencyKey) String() string {
	if k.rollback {
		return fmt.Sprintf("%s %d, latency %d ms, parallelism %d, %s failing, rolled back", k.shape, k.n, k.latencyMS, k.parallelism, ResourceName(RollbackFailing(k.n)))
	}
	if k.rateLimit > 0 {
		return fmt.Sprintf("%s %d, rate_limit %d, parallelism %d", k.shape, k.n, k.rateLimit, k.parallelism)
	}
	return fmt.Sprintf("%s %d, latency %d ms, parallelism %d", k.shape, k.n, k.latencyMS, k.parallelism)
}

// runBulwark applies and tears down one stack on the mock in the given
// mode, in a fresh folder.
func (cfg LatencyConfig) runBulwark(ctx context.Context, k latencyKey, batch bool) ([]Result, error) {
	fmt.Fprintf(cfg.Progress, "-- bulwark on the %s mock: %s\n", mockName(batch), k)
	s, err := newStackRun(cfg.stackConfig(), ToolBulwark, k.shape, k.n)
	if err != nil {
		return nil, err
	}
	defer s.close()
	specPath := filepath.Join(s.dir, "spec.yaml")
	mock := MockConfig{LatencyMS: k.latencyMS, RateLimit: k.rateLimit}
	if k.rollback {
		mock.FailCreate = []string{ResourceName(RollbackFailing(k.n))}
	}
	if cfg.MockWorld != "" {
		world, err := os.MkdirTemp(cfg.MockWorld, "bulwark-bench-world-")
		if err != nil {
			return nil, err
		}
		if !cfg.Keep {
			defer os.RemoveAll(world)
		}
		mock.World = world
	}
	spec := BulwarkSpecWith(k.shape, k.n, mock)
	if err := os.WriteFile(specPath, spec, 0o600); err != nil {
		return nil, err
	}
	key, err := secrets.NewKey("bench")
	if err != nil {
		return nil, err
	}
	mode := "on"
	if !batch {
		mode = "off"
	}
	// The last of a repeated variable wins (os/exec keeps the last).
	env := append(os.Environ(), secrets.EnvKey+"="+key.Encode(), EnvMockBatch+"="+mode)
	global := stateFlags(cfg.PluginDir, filepath.Join(s.dir, "state"), "")
	par := fmt.Sprint(k.parallelism)
	teardown := []string{"teardown", specPath, "--yes"}
	if cfg.TeardownParallelism {
		teardown = append(teardown, "--parallelism", par)
	}
	steps := []struct {
		command string
		args    []string
	}{
		{CmdApply, []string{"apply", "--yes", specPath, "--parallelism", par}},
		{CmdTeardown, teardown},
	}
	if k.rollback {
		// One command: the apply, which fails and rolls back.
		steps = steps[:1]
		steps[0].command = CmdRollback
		s.wantExit = ExitRolledBack
	}
	for _, st := range steps {
		base := strings.ReplaceAll(st.command, " ", "-")
		calls := filepath.Join(s.dir, base+".calls")
		after := func(r *Result) {
			r.FailedSteps = failedSteps(filepath.Join(s.dir, base+".stderr"))
			r.Calls = countCalls(calls)
		}
		cenv := append(append([]string{}, env...), EnvMockCalls+"="+calls)
		if err := s.measure(ctx, st.command, cfg.Bulwark, cenv, append(append([]string{}, global...), st.args...), after); err != nil {
			return s.out, err
		}
	}
	return s.out, nil
}

// runTool applies and destroys one stack with a Terraform-compatible tool,
// each resource's create and destroy sleeping the latency, in a fresh
// folder. Like RunStacks' runs: terraform_data only, so init downloads
// nothing; init once, not measured.
func (cfg LatencyConfig) runTool(ctx context.Context, k latencyKey, t Tool) ([]Result, error) {
	fmt.Fprintf(cfg.Progress, "-- %s: %s\n", t.Name, k)
	s, err := newStackRun(cfg.stackConfig(), t.Name, k.shape, k.n)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := os.WriteFile(filepath.Join(s.dir, "main.tf"), TerraformLatencyConfig(k.shape, k.n, k.latencyMS), 0o600); err != nil {
		return nil, err
	}
	env := toolEnv()
	s.toolInit(ctx, t, env)
	par := fmt.Sprintf("-parallelism=%d", k.parallelism)
	steps := []struct {
		command string
		args    []string
	}{
		{CmdApply, []string{"apply", "-auto-approve", "-input=false", "-no-color", par}},
		{CmdTeardown, []string{"destroy", "-auto-approve", "-input=false", "-no-color", par}},
	}
	for _, st := range steps {
		if err := s.measure(ctx, st.command, t.Path, env, st.args, nil); err != nil {
			return s.out, err
		}
	}
	return s.out, nil
}

// EnvMockCalls is the mock provider's call log (mockprovider.EnvCalls):
// the file it appends a line to for every call it answers but Configure,
// "TIME<TAB>CALL<TAB>N<TAB>NAME".
const EnvMockCalls = "BULWARK_MOCK_CALLS"

// CallOrder is the order a row lists its provider calls in; others follow
// by name.
var CallOrder = []string{"GetSchema", "ValidateResource", "ValidateMany", "Read", "ReadMany", "Create", "CreateMany", "Update", "Delete", "Import", "Release", "ReadData"}

// countCalls counts the calls of a mock call log by kind; nil when there
// is no log (a mock without one).
func countCalls(path string) map[string]int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseCalls(f)
}

func parseCalls(r io.Reader) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) >= 2 && fields[1] != "" {
			out[fields[1]]++
		}
	}
	return out
}

// failedSteps counts the resource steps bulwark's lifecycle events (JSON
// lines, on stderr when it is not a terminal; docs/json.md) report
// failed; -1 when the file holds no event at all (nothing to count from).
func failedSteps(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	return countFailedSteps(f)
}

func countFailedSteps(r io.Reader) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	events, failed := 0, 0
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev struct {
			Op       string `json:"op"`
			Resource string `json:"resource"`
			Status   string `json:"status"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Op == "" {
			continue
		}
		events++
		if ev.Resource != "" && ev.Status == "failed" {
			failed++
		}
	}
	if events == 0 {
		return -1
	}
	return failed
}
