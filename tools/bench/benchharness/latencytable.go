package benchharness

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LatencyReport is one run of the latency rows.
type LatencyReport struct {
	Date      time.Time
	CPUs      int
	GoVersion string
	Platform  string
	Commit    string
	Load      string
	LoadAfter string
	Args      string
	Count     int
	Budget    string
	Tools     []Tool
	// NoComparison says why no tool ran beside bulwark, when none did.
	NoComparison string
	// TeardownParallelism says bulwark's teardown was given --parallelism;
	// without it, it ran at its own default.
	TeardownParallelism bool
	// MockWorld is LatencyConfig.MockWorld.
	MockWorld string
	Rows      []LatencyRow
}

// LimitDefinition is the limit as the table and the package say it.
const LimitDefinition = "**limit** = what an ideal, overhead-free engine would take for that graph at that latency L and write parallelism P: " +
	"one L first for the reads before the first write (bulwark refuses a plan whole, for the protection ladder and ownership conflicts, " +
	"before its first step, so an apply reads every resource before it writes any, and a teardown reads what it deletes for the ownership check " +
	"before its first delete; reads are unbounded, so all at once); then one write per resource (Create; in a teardown, Delete) taking L in one of P " +
	"write slots, and Verify's read taking L after it, off the write slots; in an apply a resource is ready once what it depends on " +
	"is written, not verified (every resource here is an ephemeral create with policy compensate, which bulwark starts early: a failed " +
	"Verify of what it depends on rolls it back); in a teardown likewise once what depends on it is deleted (its Delete returned), not verified gone " +
	"(every resource here is ephemeral, whose Delete bulwark starts early: a failed Verify of what depends on it halts the teardown); ready resources " +
	"take free slots in topological order (list scheduling, exact for these graphs). Flat 200 at P 10, L 200 ms: 0.2 + 20 × 0.2 + 0.2 = 4.4 s; " +
	"layers 10 × 20 at P 50, L 200 ms: 0.2 + 10 × 0.2 + 0.2 = 2.4 s. " +
	"Plus **start-up**: what the same command costs bulwark on a stack of one resource on the same mock without latency " +
	"(process, plugin start and handshake, lock, state and journal, plugin end; measured interleaved with the row's runs), " +
	"which no scheduler removes."

// RollbackDefinition says what a rollback row measures and its limit.
const RollbackDefinition = "**" + CmdRollback + "**: one `apply --yes --parallelism P` of the stack on the mock with `fail_create` naming its last resource " +
	"(the last in topological order, so the most is created first): every other Create succeeds, the last fails, and bulwark rolls back " +
	"(exit 11, one failed step) by deleting what this run created. Its **limit**: one L of reads, then the apply's list schedule as above until the " +
	"failing Create returns (no write starts after; the writes in flight end with it), then one Delete per created resource (a compensation " +
	"has no read-back and no Verify) in P write slots, a resource's once every created resource depending on it is deleted. Flat 200 at P 10, " +
	"L 50 ms: 0.05 + 20 × 0.05 + 20 × 0.05 = 2.05 s. Its start-up is the same on a stack of one resource whose Create fails, without latency. " +
	"The tools have no rollback of a failed apply: no figure beside it."

// CallsAloneDefinition says what the calls-alone column measures.
const CallsAloneDefinition = "**calls alone**: the row's provider calls with no engine around them, plus the row's start-up: a driver in the harness's process " +
	"starts the mock through bulwark's plugin host (go-plugin, mutual TLS) and makes exactly the calls the limit counts, in its order: every Read at once, " +
	"then each resource's write (Create; in a teardown, Delete) in one of P slots as soon as it is ready, and its Verify Read off the slots; each call alone " +
	"(no batch calls), the mock's world where bulwark's is. No spec, plan, journal, state or engine: its distance from the limit is what the calls " +
	"themselves cost on this machine (gRPC in both processes, the mock's own work, two processes waking on shared cores), which no engine removes; " +
	"bulwark's distance from it is bulwark's own. Median of the runs, one after bulwark's in each round; `-` where not measured (rollback rows)."

// hasCallsAlone reports whether any row has the calls alone measured.
func hasCallsAlone(rows []LatencyRow) bool {
	for _, r := range rows {
		if r.CallsAlone > 0 {
			return true
		}
	}
	return false
}

// writeCalls lists the provider calls each bulwark row made (the mock's
// call log), when any was logged.
func writeCalls(b *strings.Builder, rows []LatencyRow) {
	var lines []string
	for _, row := range rows {
		if len(row.Bulwark.Calls) == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %d ms | %d | %s | %s | %s |", shapeLabel(row.Shape, row.N), fmtCount(row.N),
			row.LatencyMS, row.Parallelism, mockName(row.Batch), row.Command, fmtCalls(row.Bulwark.Calls, row.N)))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\n### Provider calls\n\nEvery call the mock answered but Configure (its call log, `BULWARK_MOCK_CALLS`), " +
		"by kind, each with its count per resource; a batch call (ReadMany, ValidateMany, CreateMany) counts once however many resources it carries.\n\n")
	b.WriteString("| shape | N | L | P | mock | command | calls (per resource) |\n|---|---:|---:|---:|---|---|---|\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
}

// fmtCalls is a row's calls by kind in CallOrder: "Read 400 (2), Create
// 200 (1)".
func fmtCalls(calls map[string]int, n int) string {
	kinds := slices.Sorted(maps.Keys(calls))
	slices.SortStableFunc(kinds, func(a, b string) int {
		ia, ib := slices.Index(CallOrder, a), slices.Index(CallOrder, b)
		if ia < 0 {
			ia = len(CallOrder)
		}
		if ib < 0 {
			ib = len(CallOrder)
		}
		return ia - ib
	})
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d (%s)", k, calls[k], strconv.FormatFloat(float64(calls[k])/float64(max(n, 1)), 'f', -1, 64)))
	}
	return strings.Join(parts, ", ")
}

// hasRollback reports whether rows hold a rollback row.
func hasRollback(rows []LatencyRow) bool {
	for _, r := range rows {
		if r.Command == CmdRollback {
			return true
		}
	}
	return false
}

// Markdown renders the report.
func (r *LatencyReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bulwark latency benchmark, %s\n\n", r.Date.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- machine: %d cores (runtime.NumCPU), %s, %s", r.CPUs, r.Platform, r.GoVersion)
	if r.Load != "" {
		fmt.Fprintf(&b, ", load average at the start %s", r.Load)
		if r.LoadAfter != "" {
			fmt.Fprintf(&b, ", at the end %s", r.LoadAfter)
		}
	}
	b.WriteString("\n")
	if r.Commit != "" {
		fmt.Fprintf(&b, "- bulwark at commit %s\n", r.Commit)
	}
	b.WriteString("- bulwark on the mock provider with `latency_ms: L` (every call but Configure sleeps L), `apply --parallelism P` then `teardown --yes")
	if r.TeardownParallelism {
		b.WriteString(" --parallelism P`")
	} else {
		b.WriteString("` (this bulwark's teardown takes no `--parallelism`: it ran at its own default whatever P)")
	}
	b.WriteString("; each stack in a fresh scratch state folder. mock **batching**: as built, with ReadMany, ValidateMany and CreateMany; " +
		"**no batch calls**: `BULWARK_MOCK_BATCH=off`, the way real providers (aws, Terraform's) are\n")
	if len(r.Tools) == 0 {
		fmt.Fprintf(&b, "- compared with: nothing (%s)\n", r.noComparison())
	} else {
		var ts []string
		for _, t := range r.Tools {
			ts = append(ts, t.Version)
		}
		fmt.Fprintf(&b, "- compared with: %s: the same graph as `terraform_data` resources (built in: no provider download, no network), "+
			"each with a `local-exec` provisioner `sleep L` at create and another (`when = destroy`) at destroy, which also charges the tool a "+
			"process spawn per resource that the mock's latency does not; local state, `-parallelism=P`, `apply -auto-approve` then "+
			"`destroy -auto-approve`, `init` once, not measured. The tools have no mock: their figures are the same in a setting's "+
			"batching and no-batch rows\n", strings.Join(ts, ", "))
	}
	if r.MockWorld != "" {
		fmt.Fprintf(&b, "- the mock's world (the simulated cloud's records) in a fresh folder under `%s` (`-mock-world`), so its own fsync per change is not in the figures: the limit takes every call to last L\n", r.MockWorld)
	} else {
		b.WriteString("- the mock's world (the simulated cloud's records) in its data folder, beside bulwark's state: each of its changes is fsynced after L, which the limit does not count (`-mock-world /dev/shm` takes it out)\n")
	}
	if r.Count > 1 {
		fmt.Fprintf(&b, "- each stack run %d times, interleaved (bulwark on each mock, then each tool, then again), each figure the median run's (a run that failed is shown instead)\n", r.Count)
	} else {
		b.WriteString("- each stack run once (bulwark on each mock, then each tool)\n")
	}
	if r.Budget != "" {
		fmt.Fprintf(&b, "- budget: a command still running after %s is stopped (shown as `> budget`); the rest of its stack is skipped\n", r.Budget)
	}
	if r.Args != "" {
		fmt.Fprintf(&b, "- run: `%s`\n", r.Args)
	}
	b.WriteString("\n" + LimitDefinition + " `× limit` is the figure ÷ the limit: 1× is the ideal engine.\n")

	var latency, rated []LatencyRow
	for _, row := range r.Rows {
		if row.RateLimit > 0 {
			rated = append(rated, row)
		} else {
			latency = append(latency, row)
		}
	}
	if len(latency) > 0 {
		b.WriteString("\n## Latency\n\n")
		b.WriteString("| shape | N | L | P | mock | command | start-up | limit | bulwark | × limit | failed steps |")
		align := "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|"
		alone := hasCallsAlone(latency)
		if alone {
			b.WriteString(" calls alone | × limit |")
			align += "---:|---:|"
		}
		for _, t := range r.Tools {
			fmt.Fprintf(&b, " %s | × limit | bulwark ÷ %s |", t.Name, t.Name)
			align += "---:|---:|---:|"
		}
		b.WriteString("\n" + align + "\n")
		for _, row := range latency {
			fmt.Fprintf(&b, "| %s | %s | %d ms | %d | %s | %s | %s | %s | %s | %s | %s |", shapeLabel(row.Shape, row.N), fmtCount(row.N),
				row.LatencyMS, row.Parallelism, mockName(row.Batch), row.Command, fmtStartup(row.Startup), fmtDuration(row.Limit), fmtLatencyWall(row.Bulwark),
				fmtLimitMultiple(row.Bulwark, row.Limit), fmtFailed(row.Bulwark))
			if alone {
				if row.CallsAlone > 0 {
					fmt.Fprintf(&b, " %s | %.2f× |", fmtDuration(row.CallsAlone), row.CallsAloneMultiple())
				} else {
					b.WriteString(" - | - |")
				}
			}
			for i := range r.Tools {
				if i >= len(row.Tools) {
					b.WriteString(" - | - | - |") // a rollback row: the tools have no rollback
					continue
				}
				t := row.Tools[i]
				fmt.Fprintf(&b, " %s | %s | %s |", fmtLatencyWall(t), fmtLimitMultiple(t, row.Limit), fmtToolRatio(row.Bulwark, t))
			}
			b.WriteString("\n")
		}
		b.WriteString("\nfailed steps: the resource steps bulwark's lifecycle events (stderr) report failed; `-` where it did not run or wrote no event.\n")
		if alone {
			b.WriteString("\n" + CallsAloneDefinition + "\n")
		}
		writeCalls(&b, latency)
		if hasRollback(latency) {
			b.WriteString("\n" + RollbackDefinition + "\n")
		}
	}
	if len(rated) > 0 {
		b.WriteString("\n## Rate-limited\n\n")
		b.WriteString("The mock with `rate_limit: R` (mutating calls per second; beyond it the mock answers \"throttled\") and no latency, bulwark alone. " +
			"limit = N ÷ R s (every resource needs one mutating call); the target is within 1.2× of it, exit 0 and no failed step.\n\n")
		b.WriteString("| shape | N | rate_limit | P | mock | command | limit | bulwark | × limit | exit | failed steps | within 1.2×, no failed step |\n")
		b.WriteString("|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|\n")
		for _, row := range rated {
			fmt.Fprintf(&b, "| %s | %s | %d/s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Shape, fmtCount(row.N), row.RateLimit,
				row.Parallelism, mockName(row.Batch), row.Command, fmtDuration(row.Limit), fmtLatencyWall(row.Bulwark),
				fmtLimitMultiple(row.Bulwark, row.Limit), fmtLatencyExit(row.Bulwark), fmtFailed(row.Bulwark), rateVerdict(row))
		}
	}
	if fs := r.failures(); len(fs) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, f := range fs {
			b.WriteString("- " + f + "\n")
		}
	}
	if len(r.Tools) == 0 {
		fmt.Fprintf(&b, "\nNo comparison: %s.\n", r.noComparison())
	}
	return b.String()
}

// failures are the commands that ran and did not end with exit 0, each
// with the end of its stderr, once each (a tool's figures are in two rows).
func (r *LatencyReport) failures() []string {
	var out []string
	seen := map[string]bool{}
	note := func(row LatencyRow, mock string, res Result) {
		if res.Skipped != "" || res.OK() {
			return
		}
		what := fmt.Sprintf("%s %s on %s%s", res.Tool, row.Command, row.Setting(), mock)
		if seen[what] {
			return
		}
		seen[what] = true
		out = append(out, what+": "+describe(res))
	}
	for _, row := range r.Rows {
		note(row, ", "+mockName(row.Batch)+" mock", row.Bulwark)
		for _, t := range row.Tools {
			note(row, "", t)
		}
	}
	return out
}

// RateTarget is how far above its limit a rate-limited row may be.
const RateTarget = 1.2

// rateVerdict says whether a rate-limited row met its target.
func rateVerdict(row LatencyRow) string {
	res := row.Bulwark
	switch {
	case res.Skipped != "":
		return "-"
	case res.Stopped:
		return "no: stopped"
	case res.ExitCode != 0:
		return fmt.Sprintf("no: exit %d", res.ExitCode)
	case res.FailedSteps > 0:
		return fmt.Sprintf("no: %d failed step(s)", res.FailedSteps)
	case row.Multiple() > RateTarget:
		return "no"
	}
	return "yes"
}

func (r *LatencyReport) noComparison() string {
	if r.NoComparison != "" {
		return r.NoComparison
	}
	return "neither `tofu` nor `terraform` is on PATH"
}

// fmtStartup is a row's start-up: "-" when not measured.
func fmtStartup(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmtDuration(d)
}

// shapeLabel is a shape as a row names it: layers with its layout.
func shapeLabel(shape Shape, n int) string {
	if shape == Layers {
		return fmt.Sprintf("layers (%d × %d)", LayerCount, layerWidth(n))
	}
	return string(shape)
}

// fmtLatencyWall is a figure, or why there is none.
func fmtLatencyWall(r Result) string {
	switch {
	case r.Skipped != "":
		return "skipped: " + r.Skipped
	case r.exitedWrong():
		return fmt.Sprintf("%s, exit %d", fmtDuration(r.Wall), r.ExitCode)
	}
	return fmtWall(r)
}

func fmtLatencyExit(r Result) string {
	if r.Skipped != "" {
		return "-"
	}
	return fmtExit(r)
}

func fmtLimitMultiple(r Result, limit time.Duration) string {
	m := multipleOf(r, limit)
	if m == 0 {
		return "-"
	}
	if r.Stopped {
		return "> " + fmtFactor(m)
	}
	return fmtFactor(m)
}

// fmtToolRatio is bulwark's wall time over a tool's, "-" unless both ran
// to the end (or past the budget, shown as a bound) with exit 0.
func fmtToolRatio(ours, theirs Result) string {
	failed := func(r Result) bool { return r.Skipped != "" || r.exitedWrong() }
	if failed(ours) || failed(theirs) {
		return "-"
	}
	return fmtRatio(ours, true, theirs)
}

func fmtFailed(r Result) string {
	if r.Skipped != "" || r.FailedSteps < 0 {
		return "-"
	}
	return fmt.Sprint(r.FailedSteps)
}
