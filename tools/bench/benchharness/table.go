package benchharness

import (
	"fmt"
	"strings"
	"time"
)

// Report is one run of the harness: where it ran, the floor, and every
// figure.
type Report struct {
	Date        time.Time
	CPUs        int    // runtime.NumCPU
	GoVersion   string // runtime.Version of the harness, which built bulwark
	Platform    string // GOOS/GOARCH
	Commit      string // the repository's commit, when known
	Load        string // the load average when the run started, when known
	LoadAfter   string // the load average when the stacks were done, when known
	Args        string // the harness's command line
	Parallelism int
	Count       int    // runs of each stack; each figure is the median run's
	Interleave  bool   // the shapes of one N ran in turn within each round (Config.Interleave)
	LatencyMS   int    // the mock's latency_ms
	Budget      string // the per-command budget, as said to a reader
	Floor       Floor  // the floor the figures are scaled by
	// FloorBefore and FloorAfter, when both set, are the floor measured
	// before and after the stacks; Floor is then their mean.
	FloorBefore, FloorAfter Floor
	// NoComparison says why no tool ran beside bulwark, when none did.
	NoComparison string
	Tools        []Tool
	Results      []Result
	Guard        *GuardReport // set when the run was checked against a guard file
	// StateURL, when set, is the remote backend bulwark's stacks also ran
	// on (Config.StateURL), password masked.
	StateURL string
}

// Markdown renders the report as a markdown document.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bulwark benchmark, %s\n\n", r.Date.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- machine: %d cores (runtime.NumCPU), %s, %s", r.CPUs, r.Platform, r.GoVersion)
	if r.Load != "" {
		fmt.Fprintf(&b, ", load average at the start %s", r.Load)
		if r.LoadAfter != "" {
			fmt.Fprintf(&b, ", at the end %s", r.LoadAfter)
		}
	}
	b.WriteString("\n")
	if r.Commit != "" {
		fmt.Fprintf(&b, "- bulwark at commit %s, ", r.Commit)
	} else {
		b.WriteString("- bulwark: ")
	}
	latency := "no latency"
	if r.LatencyMS > 0 {
		latency = fmt.Sprintf("`latency_ms: %d` on every call", r.LatencyMS)
	}
	fmt.Fprintf(&b, "mock provider with %s, `--parallelism %d`; each stack in a fresh scratch state folder; "+
		"commands in order: %s\n", latency, r.Parallelism, strings.Join(Commands, ", "))
	if len(r.Tools) == 0 {
		fmt.Fprintf(&b, "- compared with: nothing (%s)\n", r.noComparison())
	} else {
		var ts []string
		for _, t := range r.Tools {
			ts = append(ts, t.Version)
		}
		fmt.Fprintf(&b, "- compared with: %s: the same stacks as `terraform_data` resources (no provider process), "+
			"local state, `-parallelism=%d`, `init` once, not measured\n", strings.Join(ts, ", "), r.Parallelism)
	}
	if r.Count > 1 {
		fmt.Fprintf(&b, "- each stack run %d times, each figure the median run's (a run that failed is shown instead)\n", r.Count)
		if r.Interleave {
			b.WriteString("- the shapes of one N run in turn in each of those rounds (flat, modules, flat, modules, …), so the machine's load moves both alike\n")
		}
	} else {
		b.WriteString("- each stack run once\n")
	}
	if r.Budget != "" {
		fmt.Fprintf(&b, "- budget: a command still running after %s is stopped (shown as `> budget`); the rest of its stack is skipped\n", r.Budget)
	}
	if r.Args != "" {
		fmt.Fprintf(&b, "- run: `%s`\n", r.Args)
	}

	b.WriteString("\n## The floor (measured in this run)\n\n")
	if r.FloorAfter.PerResource() > 0 {
		b.WriteString("Measured before and after the stacks; the figures are scaled by the mean of the two.\n\n")
		b.WriteString("| what | median before | median after | mean, used | samples |\n|---|---:|---:|---:|---:|\n")
		row := func(what string, before, after, used time.Duration, samples int) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", what, fmtDuration(before), fmtDuration(after), fmtDuration(used), fmtSamples(samples))
		}
		fb, fa, f := r.FloorBefore, r.FloorAfter, r.Floor
		row(floorRoundTrip, fb.RoundTrip, fa.RoundTrip, f.RoundTrip, f.Calls)
		row(floorAppend, fb.Append, fa.Append, f.Append, f.Appends)
		row(floorRawSync, fb.RawSync, fa.RawSync, f.RawSync, f.Appends)
		fmt.Fprintf(&b, "| **floor per resource** = round trip + append | %s | %s | **%s** | |\n",
			fmtDuration(fb.PerResource()), fmtDuration(fa.PerResource()), fmtDuration(f.PerResource()))
	} else {
		b.WriteString("| what | median | samples |\n|---|---:|---:|\n")
		fmt.Fprintf(&b, "| %s | %s | %s |\n", floorRoundTrip, fmtDuration(r.Floor.RoundTrip), fmtSamples(r.Floor.Calls))
		fmt.Fprintf(&b, "| %s | %s | %s |\n", floorAppend, fmtDuration(r.Floor.Append), fmtSamples(r.Floor.Appends))
		fmt.Fprintf(&b, "| %s | %s | %s |\n", floorRawSync, fmtDuration(r.Floor.RawSync), fmtSamples(r.Floor.Appends))
		fmt.Fprintf(&b, "| **floor per resource** = round trip + append | **%s** | |\n", fmtDuration(r.Floor.PerResource()))
	}
	b.WriteString("\n`× floor` = (wall time ÷ N) ÷ floor per resource: how many floors one resource costs. " +
		"One provider call and one durable journal record is the least a journaled step can do alone, so 1× is a serial engine " +
		"doing exactly that per resource; parallel steps and shared fsyncs (group commit) can go below it. " +
		"The same scale is used for every command, validate and plan included, so the figures compare across commands and machines.\n")

	b.WriteString("\n## bulwark\n\n")
	b.WriteString("| shape | N | command | exit | wall | per resource | × floor | CPU bulwark | CPU plugins | peak RSS (bulwark) | peak RSS (with plugins) | state | journal | stack folder | resources after |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		if res.Tool != ToolBulwark || res.Skipped == NotWanted {
			continue
		}
		if res.Skipped != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | | skipped: %s | | | | | | | | | | |\n", res.Shape, fmtCount(res.N), res.Command, res.Skipped)
			continue
		}
		selfCPU, pluginCPU := fmtCPU(res)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			res.Shape, fmtCount(res.N), res.Command, fmtExit(res), fmtWall(res), fmtPerResource(res), fmtMultiple(r.Floor, res), selfCPU, pluginCPU,
			fmtBytes(res.PeakRSS), fmtBytes(max(res.PeakRSSTree, res.PeakRSS)), fmtBytes(res.StateBytes), fmtBytes(res.JournalBytes),
			fmtBytes(res.FolderBytes), fmtResources(res.Resources))
	}
	b.WriteString("\nCPU is user + system time: bulwark's own (read from /proc/PID/stat once it exited, before it was reaped, " +
		"in 10 ms ticks), and its plugins' (wait4's rusage of bulwark and the children it reaped, less bulwark's own); " +
		"wall time beyond the two is waiting, mostly on fsync.\n")
	b.WriteString("\nPeak RSS (bulwark) is bulwark's own peak: the largest VmHWM read from /proc every " + rssSampleEvery.String() +
		" while it ran. Peak RSS (with plugins) is os/exec's ProcessState.SysUsage Maxrss (wait4's ru_maxrss): the largest of bulwark " +
		"and the plugin processes it started and reaped, which are its children. Sizes are after the command: the state file, the journal, " +
		"and every file in the stack's folder (backups and the mock's world file included); - is no such file (validate and plan write nothing).\n")

	r.modulesMarkdown(&b)

	if r.StateURL != "" {
		r.remoteMarkdown(&b)
	}

	for _, t := range r.Tools {
		fmt.Fprintf(&b, "\n## Beside %s\n\n", t.Version)
		fmt.Fprintf(&b, "| shape | N | command | bulwark | %s | bulwark ÷ %s | %s peak RSS | %s state |\n", t.Name, t.Name, t.Name, t.Name)
		b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|\n")
		for _, res := range r.Results {
			if res.Tool != t.Name || res.Skipped == NotWanted {
				continue
			}
			ours, ok := findResult(r.Results, ToolBulwark, res.Shape, res.N, res.Command)
			if res.Skipped != "" {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | skipped: %s | | | |\n", res.Shape, fmtCount(res.N), res.Command, fmtWallOf(ours, ok), res.Skipped)
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", res.Shape, fmtCount(res.N), res.Command,
				fmtWallOf(ours, ok), fmtWall(res), fmtRatio(ours, ok, res), fmtBytes(res.PeakRSSTree), fmtBytes(res.StateBytes))
		}
	}
	if len(r.Tools) == 0 {
		fmt.Fprintf(&b, "\nNo comparison: %s.\n", r.noComparison())
	}

	if r.Guard != nil {
		b.WriteString("\n" + r.Guard.Markdown())
	}
	return b.String()
}

// fmtCPU is a result's CPU time, bulwark's own and its plugins'.
func fmtCPU(r Result) (self, plugins string) {
	if r.Stopped || r.CPU <= 0 {
		return "-", "-"
	}
	if r.CPUSelf <= 0 {
		return "-", "-"
	}
	return fmtDuration(r.CPUSelf), fmtDuration(max(r.CPU-r.CPUSelf, 0))
}

func (r *Report) noComparison() string {
	if r.NoComparison != "" {
		return r.NoComparison
	}
	return "neither `tofu` nor `terraform` is on PATH"
}

// The floor's parts, as the table names them.
const (
	floorRoundTrip = "one unary gRPC round trip (`Read`) to a mock plugin process started through core/pluginhost"
	floorAppend    = "one core/journal `Append` (write + fsync, no one to share it with) on the scratch folder's disk"
	floorRawSync   = "for reference: a bare `os.File` write + `Sync` of a 200-byte line there"
)

func fmtSamples(n int) string {
	if n <= 0 {
		return ""
	}
	return fmtCount(n)
}

func fmtExit(r Result) string {
	if r.Stopped {
		return "stopped"
	}
	return fmt.Sprint(r.ExitCode)
}

func fmtWall(r Result) string {
	if r.Stopped {
		return "> " + fmtDuration(r.Wall)
	}
	return fmtDuration(r.Wall)
}

func fmtWallOf(r Result, ok bool) string {
	if !ok || r.Skipped != "" {
		return "-"
	}
	return fmtWall(r)
}

func fmtPerResource(r Result) string {
	if r.N <= 0 {
		return "-"
	}
	s := fmtDuration(r.Wall / time.Duration(r.N))
	if r.Stopped {
		return "> " + s
	}
	return s
}

func fmtMultiple(f Floor, r Result) string {
	m := f.Multiple(r.Wall, r.N)
	if m == 0 {
		return "-"
	}
	s := fmtFactor(m)
	if r.Stopped {
		return "> " + s
	}
	return s
}

// fmtRatio is bulwark's wall time over a tool's.
func fmtRatio(ours Result, ok bool, theirs Result) string {
	if !ok || ours.Skipped != "" || theirs.Wall <= 0 || ours.Wall <= 0 {
		return "-"
	}
	s := fmtFactor(float64(ours.Wall) / float64(theirs.Wall))
	switch {
	case ours.Stopped && theirs.Stopped:
		return "?"
	case ours.Stopped:
		return "> " + s
	case theirs.Stopped:
		return "< " + s
	}
	return s
}

// fmtFactor prints a multiple with two significant digits at least.
func fmtFactor(m float64) string {
	switch {
	case m >= 100:
		return fmt.Sprintf("%.0f×", m)
	case m >= 10:
		return fmt.Sprintf("%.1f×", m)
	default:
		return fmt.Sprintf("%.2f×", m)
	}
}

// fmtDuration prints d with three significant digits in a unit a reader
// takes in at once.
func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d < 100*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	default:
		return fmt.Sprintf("%.0f s", d.Seconds())
	}
}

// fmtBytes prints a size in binary units; "-" for none measured.
func fmtBytes(n int64) string {
	const k = 1024
	switch {
	case n <= 0:
		return "-"
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < 10*k*k:
		return fmt.Sprintf("%.0f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	default:
		return fmt.Sprintf("%.2f GiB", float64(n)/(k*k*k))
	}
}

// fmtCount prints n with thousands separators: 10,000.
func fmtCount(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func fmtResources(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// remoteMarkdown is the section comparing bulwark on the remote backend
// with bulwark on the file backend, measured in the same run.
func (r *Report) remoteMarkdown(b *strings.Builder) {
	tool := ToolRemote(r.StateURL)
	scheme := strings.TrimPrefix(tool, ToolBulwark+"@")
	fmt.Fprintf(b, "\n## bulwark on %s beside the file backend\n\n", scheme)
	fmt.Fprintf(b, "The same stacks with `--state %s` (each stack run in a schema or prefix of its own; the providers' data folders "+
		"still under `--state-dir`), each run right after the file backend's run of the same stack, so the machine's load moves both alike; "+
		"each figure the median run's.\n\n", r.StateURL)
	var key []string
	for _, res := range r.Results {
		if res.Tool != tool || res.Skipped != "" || (res.Command != CmdApply && res.Command != CmdNoop) {
			continue
		}
		file, _ := findResult(r.Results, ToolBulwark, res.Shape, res.N, res.Command)
		key = append(key, fmt.Sprintf("%s %s of %s: %s", res.Shape, res.Command, fmtCount(res.N), fmtRatio(res, true, file)))
	}
	if len(key) > 0 {
		fmt.Fprintf(b, "**%s ÷ file**: %s.\n\n", scheme, strings.Join(key, "; "))
	}
	fmt.Fprintf(b, "| shape | N | command | file | %s | %s ÷ file | exit | CPU bulwark | peak RSS (bulwark) | resources after |\n", scheme, scheme)
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		if res.Tool != tool || res.Skipped == NotWanted {
			continue
		}
		file, ok := findResult(r.Results, ToolBulwark, res.Shape, res.N, res.Command)
		if res.Skipped != "" {
			fmt.Fprintf(b, "| %s | %s | %s | %s | skipped: %s | | | | | |\n", res.Shape, fmtCount(res.N), res.Command, fmtWallOf(file, ok), res.Skipped)
			continue
		}
		selfCPU, _ := fmtCPU(res)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", res.Shape, fmtCount(res.N), res.Command,
			fmtWallOf(file, ok), fmtWall(res), fmtRatio(res, ok, file), fmtExit(res), selfCPU, fmtBytes(res.PeakRSS), fmtResources(res.Resources))
	}
}

// ModulesLimit is issue 22's bound: a stack written as calls of a module
// validates, plans and applies within this multiple of the same stack
// written flat.
const ModulesLimit = 1.5

// modulesBound reports whether ModulesLimit applies to command.
func modulesBound(command string) bool {
	return command == CmdValidate || command == CmdPlan || command == CmdApply
}

// ModulesRatio is the Modules shape's wall time over Flat's at the same N,
// for one tool and command; ok is false when either did not run to the end.
func ModulesRatio(results []Result, tool string, n int, command string) (ratio float64, ok bool) {
	m, okM := findResult(results, tool, Modules, n, command)
	f, okF := findResult(results, tool, Flat, n, command)
	if !okM || !okF || !m.OK() || !f.OK() || f.Wall <= 0 {
		return 0, false
	}
	return float64(m.Wall) / float64(f.Wall), true
}

// modulesMarkdown is the modules ÷ flat table: for every N where both
// shapes ran, each command's wall time written through a module over the
// same resources written flat, bulwark's checked against ModulesLimit, the
// tools' (the same module in HCL) beside for reference.
func (r *Report) modulesMarkdown(b *strings.Builder) {
	tools := []string{ToolBulwark}
	for _, t := range r.Tools {
		tools = append(tools, t.Name)
	}
	header := false
	for _, tool := range tools {
		for _, res := range r.Results {
			if res.Tool != tool || res.Shape != Modules || res.Skipped == NotWanted {
				continue
			}
			flat, ok := findResult(r.Results, tool, Flat, res.N, res.Command)
			if !ok {
				continue
			}
			if !header {
				header = true
				fmt.Fprintf(b, "\n## Modules ÷ flat\n\nThe same N resources written as %d-resource module calls (`modules`) and written flat (`flat`), "+
					"each in a fresh stack; issue 22 bounds bulwark's validate, plan and apply to %s.\n\n", ModuleSize, fmtFactor(ModulesLimit))
				b.WriteString("| tool | N | command | flat | modules | modules ÷ flat | bound |\n|---|---:|---|---:|---:|---:|---|\n")
			}
			ratio, ok := ModulesRatio(r.Results, tool, res.N, res.Command)
			rs, verdict := "-", ""
			if ok {
				rs = fmtFactor(ratio)
			}
			if tool == ToolBulwark && modulesBound(res.Command) {
				switch {
				case !ok:
					verdict = "not measured"
				case ratio <= ModulesLimit:
					verdict = "within " + fmtFactor(ModulesLimit)
				default:
					verdict = "**over " + fmtFactor(ModulesLimit) + "**"
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", tool, fmtCount(res.N), res.Command, fmtWall(flat), fmtWall(res), rs, verdict)
		}
	}
}
