package benchharness

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestCountFailedSteps(t *testing.T) {
	tests := []struct {
		name, events string
		want         int
	}{
		{"none failed", `{"op":"op_1","kind":"operation","status":"running"}
{"op":"op_1","resource":"a","action":"create","status":"ok"}
{"op":"op_1","kind":"operation","status":"succeeded","summary":{"failed":0}}
`, 0},
		{"two failed among other output", `bulwark: a line that is not an event
{"op":"op_1","resource":"a","action":"create","status":"failed","error":"throttled"}
{"op":"op_1","resource":"b","action":"create","status":"ok"}
{"op":"op_1","resource":"c","action":"delete","status":"failed","undo":true}
{"op":"op_1","kind":"operation","status":"compensated","summary":{"failed":1}}
{not json
`, 2},
		{"no event at all", "bulwark: 1 problem(s) in the spec; nothing was changed\n", -1},
		{"empty", "", -1},
	}
	for _, tt := range tests {
		if got := countFailedSteps(strings.NewReader(tt.events)); got != tt.want {
			t.Errorf("%s: %d failed steps, want %d", tt.name, got, tt.want)
		}
	}
}

// sampleLatencyReport has a row of each kind: within its limit, failed,
// skipped, beside a tool, rate-limited.
func sampleLatencyReport(tools []Tool) *LatencyReport {
	ok := func(tool string, wall time.Duration) Result {
		return Result{Tool: tool, Measurement: Measurement{Wall: wall}}
	}
	row := func(shape Shape, l, p int, batch bool, command string, limit time.Duration, ours Result, theirs ...Result) LatencyRow {
		return LatencyRow{Shape: shape, N: 200, LatencyMS: l, Parallelism: p, Batch: batch, Command: command, Limit: limit,
			Bulwark: ours, Tools: theirs}
	}
	failed := Result{Tool: ToolBulwark, Measurement: Measurement{Wall: 3 * time.Second, ExitCode: 1}, Tail: "boom", FailedSteps: 2}
	var tf []Result
	if len(tools) > 0 {
		tf = []Result{ok("terraform", 4450*time.Millisecond)}
	}
	apply := ok(ToolBulwark, 10300*time.Millisecond)
	r := &LatencyReport{
		Date: time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC), CPUs: 2, GoVersion: "go1.26.8", Platform: "linux/amd64",
		Commit: "abc1234", Count: 3, Budget: "5m0s", Tools: tools,
		Rows: []LatencyRow{
			row(Flat, 200, 10, true, CmdApply, 4400*time.Millisecond, apply, tf...),
			row(Flat, 200, 10, false, CmdTeardown, 4400*time.Millisecond, failed, tf...),
			row(Layers, 50, 50, false, CmdApply, 1050*time.Millisecond, Result{Tool: ToolBulwark, Skipped: "apply exited 1", FailedSteps: -1}, tf...),
			{Shape: Flat, N: 1000, Parallelism: 10, RateLimit: 50, Command: CmdApply, Limit: 20 * time.Second,
				Bulwark: Result{Tool: ToolBulwark, Measurement: Measurement{Wall: 22 * time.Second}}},
			{Shape: Flat, N: 1000, Parallelism: 10, RateLimit: 50, Command: CmdTeardown, Limit: 20 * time.Second,
				Bulwark: Result{Tool: ToolBulwark, Measurement: Measurement{Wall: 30 * time.Second}}},
		},
	}
	for i := range r.Rows {
		r.Rows[i].Bulwark.FailedSteps = max(r.Rows[i].Bulwark.FailedSteps, 0)
	}
	return r
}

func TestLatencyMarkdown(t *testing.T) {
	tf := Tool{Name: "terraform", Path: "/usr/local/bin/terraform", Version: "Terraform v1.11.4"}
	tests := []struct {
		name    string
		report  *LatencyReport
		want    []string
		notWant []string
	}{{
		name:   "bulwark alone",
		report: sampleLatencyReport(nil),
		want: []string{
			"# bulwark latency benchmark, 2026-12-02 13:00 UTC",
			"bulwark at commit abc1234",
			"`teardown --yes` (this bulwark's teardown takes no `--parallelism`",
			"each stack run 3 times, interleaved",
			"0.2 + 20 × 0.2 + 0.2 = 4.4 s",
			"| shape | N | L | P | mock | command | start-up | limit | bulwark | × limit | failed steps |\n",
			"| flat | 200 | 200 ms | 10 | batching | apply | - | 4.40 s | 10.3 s | 2.34× | 0 |\n",
			"| flat | 200 | 200 ms | 10 | no batch calls | teardown | - | 4.40 s | 3.00 s, exit 1 | - | 2 |\n",
			"| layers (10 × 20) | 200 | 50 ms | 50 | no batch calls | apply | - | 1.05 s | skipped: apply exited 1 | - | - |\n",
			"| flat | 1,000 | 50/s | 10 | no batch calls | apply | 20.0 s | 22.0 s | 1.10× | 0 | 0 | yes |",
			"| flat | 1,000 | 50/s | 10 | no batch calls | teardown | 20.0 s | 30.0 s | 1.50× | 0 | 0 | no |",
			"## Failures",
			"- bulwark teardown on flat 200, latency 200 ms, parallelism 10, no batch calls mock: 3.00 s, exit 1: boom",
			"No comparison: neither `tofu` nor `terraform` is on PATH.",
		},
		notWant: []string{"× limit | bulwark ÷"},
	}, {
		name:   "beside terraform",
		report: sampleLatencyReport([]Tool{tf}),
		want: []string{
			"compared with: Terraform v1.11.4",
			"process spawn",
			"| failed steps | terraform | × limit | bulwark ÷ terraform |",
			"| flat | 200 | 200 ms | 10 | batching | apply | - | 4.40 s | 10.3 s | 2.34× | 0 | 4.45 s | 1.01× | 2.31× |",
			"| 3.00 s, exit 1 | - | 2 | 4.45 s | 1.01× | - |",
		},
		notWant: []string{"No comparison"},
	}, {
		name: "teardown with --parallelism, no rate-limited rows",
		report: func() *LatencyReport {
			r := sampleLatencyReport(nil)
			r.TeardownParallelism = true
			r.Rows = r.Rows[:1]
			return r
		}(),
		want:    []string{"`teardown --yes --parallelism P`"},
		notWant: []string{"## Rate-limited", "## Failures", "takes no `--parallelism`"},
	}}
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

// A rollback row: its apply exits 11 on purpose, which is its success
// (a figure and a multiple, no failure listed); the tools' cells are empty.
func TestLatencyMarkdownRollbackRow(t *testing.T) {
	rolled := Result{Tool: ToolBulwark, Measurement: Measurement{Wall: 2300 * time.Millisecond, ExitCode: ExitRolledBack},
		WantExit: ExitRolledBack, FailedSteps: 1}
	wrong := Result{Tool: ToolBulwark, Measurement: Measurement{Wall: 2 * time.Second}, WantExit: ExitRolledBack, Tail: "it succeeded"}
	r := &LatencyReport{
		Date: time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC), CPUs: 2, Tools: []Tool{{Name: "terraform", Version: "Terraform v1.11.4"}},
		Rows: []LatencyRow{
			{Shape: Flat, N: 200, LatencyMS: 50, Parallelism: 10, Batch: false, Command: CmdRollback, Limit: 2050 * time.Millisecond, Bulwark: rolled},
			{Shape: Flat, N: 200, LatencyMS: 50, Parallelism: 10, Batch: true, Command: CmdRollback, Limit: 2050 * time.Millisecond, Bulwark: wrong},
		},
	}
	if !rolled.OK() || wrong.OK() {
		t.Fatalf("OK: exit 11 wanted 11 = %v, exit 0 wanted 11 = %v", rolled.OK(), wrong.OK())
	}
	md := r.Markdown()
	for _, want := range []string{
		"| flat | 200 | 50 ms | 10 | no batch calls | apply, rolled back | - | 2.05 s | 2.30 s | 1.12× | 1 | - | - | - |",
		"| flat | 200 | 50 ms | 10 | batching | apply, rolled back | - | 2.05 s | 2.00 s, exit 0 | - |",
		RollbackDefinition,
		"bulwark apply, rolled back on flat 200, latency 50 ms, parallelism 10, batching mock: 2.00 s, exit 0: it succeeded",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "2.30 s, exit 11") || strings.Contains(md, "no batch calls mock: 2.30 s") {
		t.Errorf("the expected exit 11 is reported as a failure:\n%s", md)
	}
}

func TestProviderCallsInTheReport(t *testing.T) {
	log := "2026-12-03T15:16:30.1Z\tGetSchema\t1\t\n" +
		"2026-12-03T15:16:30.2Z\tRead\t1\tr000000\n" +
		"2026-12-03T15:16:30.2Z\tRead\t1\tr000001\n" +
		"2026-12-03T15:16:30.3Z\tCreate\t1\tr000000\n" +
		"2026-12-03T15:16:30.3Z\tZap\t1\tr000000\n" +
		"2026-12-03T15:16:30.3Z\tCreateMany\t2\t\n"
	calls := parseCalls(strings.NewReader(log))
	if want := map[string]int{"GetSchema": 1, "Read": 2, "Create": 1, "CreateMany": 1, "Zap": 1}; !maps.Equal(calls, want) {
		t.Fatalf("parseCalls = %v, want %v", calls, want)
	}
	got := fmtCalls(calls, 2)
	if want := "GetSchema 1 (0.5), Read 2 (1), Create 1 (0.5), CreateMany 1 (0.5), Zap 1 (0.5)"; got != want {
		t.Fatalf("fmtCalls = %q, want %q", got, want)
	}
	r := &LatencyReport{Rows: []LatencyRow{{Shape: Flat, N: 2, LatencyMS: 50, Parallelism: 10, Command: CmdApply, Limit: time.Second,
		Bulwark: Result{Tool: ToolBulwark, Measurement: Measurement{Wall: time.Second}, Calls: calls}}}}
	if md := r.Markdown(); !strings.Contains(md, "| flat | 2 | 50 ms | 10 | no batch calls | apply | "+got+" |") {
		t.Fatalf("the report lacks the row's calls:\n%s", md)
	}
	if countCalls("/nonexistent/calls") != nil {
		t.Fatal("no log: want nil")
	}
}

// The calls alone get two columns, and their definition, once any row
// has them; a row without them shows "-".
func TestLatencyMarkdownCallsAlone(t *testing.T) {
	r := sampleLatencyReport(nil)
	r.Rows[0].CallsAlone = 4620 * time.Millisecond // limit 4.40 s
	md := r.Markdown()
	for _, w := range []string{
		"| × limit | failed steps | calls alone | × limit |\n",
		"| flat | 200 | 200 ms | 10 | batching | apply | - | 4.40 s | 10.3 s | 2.34× | 0 | 4.62 s | 1.05× |\n",
		"| flat | 200 | 200 ms | 10 | no batch calls | teardown | - | 4.40 s | 3.00 s, exit 1 | - | 2 | - | - |\n",
		"**calls alone**: the row's provider calls with no engine around them",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("missing %q in:\n%s", w, md)
		}
	}
	checkTables(t, md)
	if md := sampleLatencyReport(nil).Markdown(); strings.Contains(md, "calls alone") {
		t.Errorf("a report without the calls alone names them:\n%s", md)
	}
}
