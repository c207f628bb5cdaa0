package benchharness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// builtOrPrebuilt is bulwark and the mock's folder as make build-demo
// left them in $BULWARK_TEST_BIN_DIR (make test sets it: no link of either
// again), else as Build makes them in a folder of the test's.
func builtOrPrebuilt(ctx context.Context, t *testing.T, root string) (bulwark, pluginDir string) {
	t.Helper()
	if dir := os.Getenv("BULWARK_TEST_BIN_DIR"); dir != "" {
		bulwark, pluginDir = filepath.Join(dir, "bulwark"), filepath.Join(dir, "plugins")
		for _, f := range []string{bulwark, filepath.Join(pluginDir, "bulwark-provider-mock")} {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("BULWARK_TEST_BIN_DIR=%s: %v (run make build-demo, or unset it to build here)", dir, err)
			}
		}
		return bulwark, pluginDir
	}
	bulwark, pluginDir, err := Build(ctx, root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bulwark, pluginDir
}

// TestEndToEnd builds the real bulwark and mock provider and runs the whole
// harness at N = 100 on both shapes. It asserts what every run must show,
// never how fast: timing assertions belong to the guard (make bench-guard).
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bulwark, pluginDir := builtOrPrebuilt(ctx, t, root)
	scratch := t.TempDir()

	floor, err := MeasureFloor(ctx, []string{pluginDir}, scratch, 50, 20)
	if err != nil {
		t.Fatal(err)
	}
	if floor.RoundTrip <= 0 || floor.Append <= 0 || floor.RawSync <= 0 {
		t.Errorf("floor %+v: every part must be measured", floor)
	}

	const n = 100
	var progress strings.Builder
	results, err := RunStacks(ctx, Config{Bulwark: bulwark, PluginDir: pluginDir, Shapes: Shapes, Sizes: []int{n},
		Budget: 2 * time.Minute, Scratch: scratch, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if got, want := len(results), len(Shapes)*len(Commands); got != want {
		t.Fatalf("%d results, want %d:\n%s", got, want, progress.String())
	}
	// How many resources the state records after each command.
	wantAfter := map[string]int{CmdValidate: 0, CmdPlan: 0, CmdApply: n, CmdNoopPlan: n, CmdNoop: n, CmdTeardown: 0}
	for _, r := range results {
		what := string(r.Shape) + " " + r.Command
		if !r.OK() {
			t.Errorf("%s: %s", what, describe(r))
			continue
		}
		if r.Resources != wantAfter[r.Command] {
			t.Errorf("%s: %d resources recorded after it, want %d", what, r.Resources, wantAfter[r.Command])
		}
		if r.Wall <= 0 || r.PeakRSSTree <= 0 {
			t.Errorf("%s: wall %s, peak RSS %d: not measured", what, r.Wall, r.PeakRSSTree)
		}
		switch r.Command {
		case CmdValidate, CmdPlan:
			if r.FolderBytes != 0 {
				t.Errorf("%s wrote %d bytes under the state folder, want none", what, r.FolderBytes)
			}
		default:
			if r.StateBytes <= 0 || r.JournalBytes <= 0 || r.FolderBytes < r.StateBytes+r.JournalBytes {
				t.Errorf("%s: state %d, journal %d, folder %d bytes", what, r.StateBytes, r.JournalBytes, r.FolderBytes)
			}
		}
	}
	for _, shape := range Shapes {
		applied, _ := findResult(results, ToolBulwark, shape, n, CmdApply)
		planned, _ := findResult(results, ToolBulwark, shape, n, CmdNoopPlan)
		if planned.FolderBytes != applied.FolderBytes {
			t.Errorf("%s: the no-op plan changed the stack folder from %d to %d bytes: a plan writes nothing", shape, applied.FolderBytes, planned.FolderBytes)
		}
	}
	entries, err := os.ReadDir(scratch)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("scratch folders left behind: %v", entries)
	}

	md := (&Report{Date: time.Now(), CPUs: 2, Floor: floor, Parallelism: 10, Results: results}).Markdown()
	checkTables(t, md)
	if !strings.Contains(md, "| chain | 100 | no-op apply | 0 |") {
		t.Errorf("the table has no chain no-op row:\n%s", md)
	}

	t.Run("latency", func(t *testing.T) { testLatencyRows(ctx, t, bulwark, pluginDir) })
}

// testLatencyRows runs a small set of latency rows on the binaries
// TestEndToEnd built: both shapes, both mocks, bulwark alone.
func testLatencyRows(ctx context.Context, t *testing.T, bulwark, pluginDir string) {
	var progress strings.Builder
	cfg := LatencyConfig{Bulwark: bulwark, PluginDir: pluginDir, Scratch: t.TempDir(), Shapes: []Shape{Flat, Layers}, N: 20,
		LatenciesMS: []int{5}, Parallelisms: []int{10}, Batch: []bool{true, false}, Budget: time.Minute,
		TeardownParallelism: DetectTeardownParallelism(ctx, bulwark), CallsAlone: true, Progress: &progress}
	rows, err := RunLatency(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if got, want := len(rows), 2*2*len(LatencyCommands); got != want {
		t.Fatalf("%d rows, want %d:\n%s", got, want, progress.String())
	}
	for _, r := range rows {
		what := fmt.Sprintf("%s %s on the %s mock", r.Shape, r.Command, mockName(r.Batch))
		if !r.Bulwark.OK() || r.Bulwark.FailedSteps != 0 {
			t.Errorf("%s: %s, %d failed steps", what, describe(r.Bulwark), r.Bulwark.FailedSteps)
		}
		if r.Startup <= 0 {
			t.Errorf("%s: no start-up measured", what)
		}
		if want := Limit(ShapeGraph(r.Shape, r.N), r.Command, 5*time.Millisecond, 10) + r.Startup; r.Limit != want || want <= 0 {
			t.Errorf("%s: limit %s, want %s (the ideal engine's plus the start-up)", what, r.Limit, want)
		}
		// Every call sleeps L, so calls made in the limit's order can
		// only be slower than the ideal schedule: under it, the driver
		// skipped a call or started a write before what it waits for.
		if r.CallsAlone < r.Limit {
			t.Errorf("%s: the calls alone took %s, under the limit %s", what, r.CallsAlone, r.Limit)
		}
	}
	checkTables(t, (&LatencyReport{Date: time.Now(), Rows: rows}).Markdown())
}

// TestEndToEndModules runs the module rows through the real binaries at a
// small N that leaves a remainder (2 calls of 100 and 50 top-level
// resources), interleaved, twice: both shapes record N resources after
// apply and none after teardown, and every command has a modules ÷ flat
// ratio.
func TestEndToEndModules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bulwark, pluginDir := builtOrPrebuilt(ctx, t, root)
	const n = 250
	var progress strings.Builder
	results, err := RunStacks(ctx, Config{Bulwark: bulwark, PluginDir: pluginDir, Shapes: []Shape{Flat, Modules}, Sizes: []int{n},
		Budget: 2 * time.Minute, Scratch: t.TempDir(), Progress: &progress, Count: 2, Interleave: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if got, want := len(results), 2*len(Commands); got != want {
		t.Fatalf("%d results, want %d:\n%s", got, want, progress.String())
	}
	// Interleaved: the progress shows flat, modules, flat, modules.
	var order []string
	for _, line := range strings.Split(progress.String(), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[3] == CmdValidate {
			order = append(order, f[1])
		}
	}
	if got := strings.Join(order, " "); got != "flat modules flat modules" {
		t.Errorf("validate ran on %s, want flat modules flat modules", got)
	}
	wantAfter := map[string]int{CmdValidate: 0, CmdPlan: 0, CmdApply: n, CmdNoopPlan: n, CmdNoop: n, CmdTeardown: 0}
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%s %s: %s", r.Shape, r.Command, describe(r))
			continue
		}
		if r.Resources != wantAfter[r.Command] {
			t.Errorf("%s %s: %d resources recorded after it, want %d", r.Shape, r.Command, r.Resources, wantAfter[r.Command])
		}
	}
	for _, c := range Commands {
		if ratio, ok := ModulesRatio(results, ToolBulwark, n, c); !ok || ratio <= 0 {
			t.Errorf("%s: no modules ÷ flat ratio (%v, %v)", c, ratio, ok)
		}
	}
}
