package benchharness

import (
	"strings"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"duration zero", fmtDuration(0), "0"},
		{"duration µs", fmtDuration(123456 * time.Nanosecond), "0.123 ms"},
		{"duration ms", fmtDuration(1234567 * time.Nanosecond), "1.23 ms"},
		{"duration 10ms", fmtDuration(12345678 * time.Nanosecond), "12.3 ms"},
		{"duration 100ms", fmtDuration(123456789 * time.Nanosecond), "123 ms"},
		{"duration s", fmtDuration(1234 * time.Millisecond), "1.23 s"},
		{"duration 10s", fmtDuration(26100 * time.Millisecond), "26.1 s"},
		{"duration 100s", fmtDuration(2612 * time.Second), "2612 s"},
		{"bytes none", fmtBytes(0), "-"},
		{"bytes B", fmtBytes(183), "183 B"},
		{"bytes KiB", fmtBytes(45 * 1024), "45 KiB"},
		{"bytes MiB", fmtBytes(23*1024*1024 + 300*1024), "23.3 MiB"},
		{"bytes GiB", fmtBytes(3 << 30), "3.00 GiB"},
		{"count", fmtCount(10000), "10,000"},
		{"count small", fmtCount(100), "100"},
		{"count million", fmtCount(1000000), "1,000,000"},
		{"factor", fmtFactor(0.5), "0.50×"},
		{"factor 10", fmtFactor(44.53), "44.5×"},
		{"factor 100", fmtFactor(263.4), "263×"},
		{"resources unknown", fmtResources(-1), "-"},
		{"resources", fmtResources(0), "0"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestFloorMultiple(t *testing.T) {
	f := Floor{RoundTrip: 100 * time.Microsecond, Append: 200 * time.Microsecond}
	tests := []struct {
		wall time.Duration
		n    int
		want float64
	}{
		{300 * time.Millisecond, 1000, 1},
		{26 * time.Second, 1000, 86.666},
		{150 * time.Millisecond, 1000, 0.5},
		{time.Second, 0, 0},
	}
	for _, tt := range tests {
		if got := f.Multiple(tt.wall, tt.n); got < tt.want-0.01 || got > tt.want+0.01 {
			t.Errorf("Multiple(%s, %d) = %v, want %v", tt.wall, tt.n, got, tt.want)
		}
	}
	if got := (Floor{}).Multiple(time.Second, 10); got != 0 {
		t.Errorf("no floor: Multiple = %v, want 0", got)
	}
}

// sampleReport has one of each kind of row: run to the end, stopped,
// skipped, failed.
func sampleReport(tools []Tool) *Report {
	r := &Report{
		Date: time.Date(2026, 12, 1, 10, 55, 0, 0, time.UTC), CPUs: 2, GoVersion: "go1.26.8", Platform: "linux/amd64",
		Commit: "abc1234", Parallelism: 10, Budget: "5m0s",
		Floor: Floor{RoundTrip: 100 * time.Microsecond, Calls: 2000, Append: 200 * time.Microsecond, Appends: 500, RawSync: 180 * time.Microsecond},
		Tools: tools,
		Results: []Result{
			{Tool: ToolBulwark, Shape: Flat, N: 1000, Command: CmdApply, Resources: 1000,
				Measurement: Measurement{Wall: 26 * time.Second, PeakRSS: 40 << 20, PeakRSSTree: 41 << 20, CPU: 20 * time.Second, CPUSelf: 15 * time.Second},
				StateBytes:  500 << 10, JournalBytes: 200 << 10, FolderBytes: 900 << 10},
			{Tool: ToolBulwark, Shape: Flat, N: 10000, Command: CmdApply, Resources: -1,
				Measurement: Measurement{Wall: 5 * time.Minute, Stopped: true}},
			{Tool: ToolBulwark, Shape: Flat, N: 10000, Command: CmdNoop, Resources: -1, Skipped: "apply was stopped after 5m0s"},
			{Tool: ToolBulwark, Shape: Chain, N: 1000, Command: CmdTeardown, Resources: 3,
				Measurement: Measurement{Wall: 3 * time.Second, ExitCode: 1}, Tail: "boom"},
		},
	}
	for _, t := range tools {
		r.Results = append(r.Results,
			Result{Tool: t.Name, Shape: Flat, N: 1000, Command: CmdApply, Resources: -1, Measurement: Measurement{Wall: 2 * time.Second}},
			Result{Tool: t.Name, Shape: Flat, N: 10000, Command: CmdApply, Resources: -1, Measurement: Measurement{Wall: 20 * time.Second}},
			Result{Tool: t.Name, Shape: Flat, N: 10000, Command: CmdNoop, Resources: -1, Measurement: Measurement{Wall: 3 * time.Second}},
		)
	}
	return r
}

func TestMarkdown(t *testing.T) {
	tf := Tool{Name: "terraform", Path: "/usr/bin/terraform", Version: "Terraform v1.11.4"}
	tests := []struct {
		name    string
		report  *Report
		want    []string // lines (or parts of lines) the document must hold
		notWant []string
	}{{
		name:   "bulwark alone",
		report: sampleReport(nil),
		want: []string{
			"# bulwark benchmark, 2026-12-01 10:55 UTC",
			"2 cores (runtime.NumCPU), linux/amd64, go1.26.8",
			"bulwark at commit abc1234",
			"| **floor per resource** = round trip + append | **0.300 ms** | |",
			"| flat | 1,000 | apply | 0 | 26.0 s | 26.0 ms | 86.7× | 15.0 s | 5.00 s | 40.0 MiB | 41.0 MiB | 500 KiB | 200 KiB | 900 KiB | 1000 |",
			"| flat | 10,000 | apply | stopped | > 300 s | > 30.0 ms | > 100× |",
			"| flat | 10,000 | no-op apply | | skipped: apply was stopped after 5m0s |",
			"| chain | 1,000 | teardown | 1 | 3.00 s | 3.00 ms | 10.0× | - | - |",
			"No comparison: neither `tofu` nor `terraform` is on PATH.",
		},
		notWant: []string{"## Beside", "Regression guard"},
	}, {
		name:   "beside terraform",
		report: sampleReport([]Tool{tf}),
		want: []string{
			"compared with: Terraform v1.11.4",
			"## Beside Terraform v1.11.4",
			"| flat | 1,000 | apply | 26.0 s | 2.00 s | 13.0× |",
			"| flat | 10,000 | apply | > 300 s | 20.0 s | > 15.0× |",
			"| flat | 10,000 | no-op apply | - | 3.00 s | - |",
		},
		notWant: []string{"No comparison"},
	}}
	twoFloors := sampleReport(nil)
	twoFloors.FloorBefore = Floor{RoundTrip: 100 * time.Microsecond, Append: 200 * time.Microsecond, Calls: 2000, Appends: 500}
	twoFloors.FloorAfter = Floor{RoundTrip: 100 * time.Microsecond, Append: 400 * time.Microsecond, Calls: 2000, Appends: 500}
	twoFloors.Floor = MeanFloor(twoFloors.FloorBefore, twoFloors.FloorAfter)
	twoFloors.NoComparison = "not asked for: -compare none"
	tests = append(tests, struct {
		name    string
		report  *Report
		want    []string
		notWant []string
	}{
		name:   "floor before and after",
		report: twoFloors,
		want: []string{
			"| what | median before | median after | mean, used | samples |",
			"| **floor per resource** = round trip + append | 0.300 ms | 0.500 ms | **0.400 ms** | |",
			"core/pluginhost | 0.100 ms | 0.100 ms | 0.100 ms | 4,000 |",
			"| flat | 1,000 | apply | 0 | 26.0 s | 26.0 ms | 65.0× |",
			"No comparison: not asked for: -compare none.",
		},
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := tt.report.Markdown()
			for _, w := range tt.want {
				if !strings.Contains(md, w) {
					t.Errorf("missing %q in:\n%s", w, md)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(md, w) {
					t.Errorf("unexpected %q in:\n%s", w, md)
				}
			}
			checkTables(t, md)
		})
	}
}

// checkTables fails when a markdown table row has another number of cells
// than its table's header.
func checkTables(t *testing.T, md string) {
	t.Helper()
	cols := 0
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := strings.Count(line, "|") - 1
		if cols == 0 {
			cols = n
			continue
		}
		if n != cols {
			t.Errorf("row has %d cells, its header %d: %s", n, cols, line)
		}
	}
}

// TestModulesTable: the modules ÷ flat section pairs each command of the
// two shapes at one N, checks validate, plan and apply against the 1.5×
// bound, and says so when one of a pair did not run to the end.
func TestModulesTable(t *testing.T) {
	res := func(shape Shape, command string, wall time.Duration, exit int) Result {
		return Result{Tool: ToolBulwark, Shape: shape, N: 10000, Command: command, Measurement: Measurement{Wall: wall, ExitCode: exit}, Resources: -1}
	}
	r := &Report{Parallelism: 10, Count: 3, Interleave: true, Results: []Result{
		res(Flat, CmdValidate, time.Second, 0), res(Flat, CmdPlan, time.Second, 0), res(Flat, CmdApply, 2*time.Second, 0), res(Flat, CmdTeardown, time.Second, 0),
		res(Modules, CmdValidate, 1200*time.Millisecond, 0), res(Modules, CmdPlan, 1600*time.Millisecond, 0), res(Modules, CmdApply, 2*time.Second, 1), res(Modules, CmdTeardown, 3*time.Second, 0),
	}}
	md := r.Markdown()
	for _, want := range []string{
		"## Modules ÷ flat",
		"| bulwark | 10,000 | validate | 1.00 s | 1.20 s | 1.20× | within 1.50× |",
		"| bulwark | 10,000 | plan | 1.00 s | 1.60 s | 1.60× | **over 1.50×** |",
		"| bulwark | 10,000 | apply | 2.00 s | 2.00 s | - | not measured |",
		"| bulwark | 10,000 | teardown | 1.00 s | 3.00 s | 3.00× |  |",
		"run in turn in each of those rounds",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if got, ok := ModulesRatio(r.Results, ToolBulwark, 10000, CmdPlan); !ok || got != 1.6 {
		t.Errorf("ModulesRatio(plan) = %v, %v; want 1.6, true", got, ok)
	}
	if strings.Contains((&Report{Results: r.Results[:4]}).Markdown(), "Modules ÷ flat") {
		t.Error("a report without the modules shape has a modules ÷ flat section")
	}
}
