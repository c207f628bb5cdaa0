package benchharness

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// GuardFile is the regression guard's margins (bench/guard.json): for each
// shape and command, the largest multiple of the floor (see Floor.Multiple)
// a run at N resources may take. A figure above its maximum fails the guard.
type GuardFile struct {
	Comment []string `json:"comment,omitempty"`
	// N is the stack size the margins were measured at.
	N int `json:"n"`
	// LeastMax is the smallest maximum Calibrate sets: a figure near 1×
	// (validate, plan) is mostly process and plugin start-up at this N,
	// which a shared machine makes noisy.
	LeastMax float64 `json:"least_max_floor_multiple,omitempty"`
	// Max is the largest allowed × floor per shape and command.
	Max map[Shape]map[string]float64 `json:"max_floor_multiple"`
	// Measured is what the calibrating run measured (× floor), kept to see
	// how far a figure is from its margin.
	Measured map[Shape]map[string]float64 `json:"measured_floor_multiple,omitempty"`
	// Factor is what Measured was multiplied by to get Max.
	Factor float64 `json:"factor,omitempty"`
	// Calibrated says when, where and on what floor the margins were measured.
	Calibrated string `json:"calibrated,omitempty"`
}

// LoadGuard reads a guard file.
func LoadGuard(path string) (*GuardFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	var g GuardFile
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("guard %s: %w", path, err)
	}
	if g.N <= 0 || len(g.Max) == 0 {
		return nil, fmt.Errorf("guard %s: needs n and max_floor_multiple", path)
	}
	for shape, cmds := range g.Max {
		if _, err := ParseShape(string(shape)); err != nil {
			return nil, fmt.Errorf("guard %s: %w", path, err)
		}
		for c, m := range cmds {
			if !isCommand(c) {
				return nil, fmt.Errorf("guard %s: unknown command %q (want one of %s)", path, c, strings.Join(Commands, ", "))
			}
			if !(m > 0) {
				return nil, fmt.Errorf("guard %s: %s %s: the maximum must be a positive multiple, not %v", path, shape, c, m)
			}
		}
	}
	return &g, nil
}

func isCommand(c string) bool {
	for _, k := range Commands {
		if k == c {
			return true
		}
	}
	return false
}

// Shapes is the guarded shapes, in table order.
func (g *GuardFile) Shapes() []Shape {
	var out []Shape
	for _, s := range AllShapes {
		if _, ok := g.Max[s]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Allowed is the longest a guarded command may take on this floor, 0 when
// it is not guarded. The guard stops a command there: it has failed anyway.
func (g *GuardFile) Allowed(f Floor, shape Shape, command string) time.Duration {
	m, ok := g.Max[shape][command]
	if !ok {
		return 0
	}
	return time.Duration(m * float64(g.N) * float64(f.PerResource()))
}

// GuardCheck is one guarded figure.
type GuardCheck struct {
	Shape    Shape
	Command  string
	Multiple float64 // measured × floor (a lower bound when the command was stopped)
	Max      float64
	OK       bool
	Why      string // why it failed
}

// GuardReport is every guarded figure of a run.
type GuardReport struct {
	File   string
	N      int
	Checks []GuardCheck
}

// Failed is the checks that failed.
func (r *GuardReport) Failed() []GuardCheck {
	var out []GuardCheck
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Check compares bulwark's results at g.N with the margins. Every guarded
// figure must be there, have run to the end, exited 0 and stayed within its
// maximum multiple of the floor.
func (g *GuardFile) Check(file string, f Floor, results []Result) *GuardReport {
	rep := &GuardReport{File: file, N: g.N}
	for _, shape := range g.Shapes() {
		for _, c := range Commands {
			max, ok := g.Max[shape][c]
			if !ok {
				continue
			}
			chk := GuardCheck{Shape: shape, Command: c, Max: max}
			res, found := findResult(results, ToolBulwark, shape, g.N, c)
			switch {
			case !found:
				chk.Why = "not measured"
			case res.Skipped != "":
				chk.Why = "skipped: " + res.Skipped
			case res.Stopped:
				chk.Multiple = f.Multiple(res.Wall, res.N)
				chk.Why = fmt.Sprintf("stopped after %s, past its margin", fmtDuration(res.Wall))
			case res.ExitCode != 0:
				chk.Multiple = f.Multiple(res.Wall, res.N)
				chk.Why = fmt.Sprintf("exit %d: %s", res.ExitCode, res.Tail)
			default:
				chk.Multiple = f.Multiple(res.Wall, res.N)
				if chk.Multiple > max {
					chk.Why = fmt.Sprintf("%s of the floor, more than the %s allowed", fmtFactor(chk.Multiple), fmtFactor(max))
				} else {
					chk.OK = true
				}
			}
			rep.Checks = append(rep.Checks, chk)
		}
	}
	return rep
}

func findResult(results []Result, tool string, shape Shape, n int, command string) (Result, bool) {
	for _, r := range results {
		if r.Tool == tool && r.Shape == shape && r.N == n && r.Command == command {
			return r, true
		}
	}
	return Result{}, false
}

// Markdown renders the checks as a section of the report.
func (r *GuardReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Regression guard (%s, N = %s)\n\n", r.File, fmtCount(r.N))
	b.WriteString("| shape | command | × floor | allowed | verdict |\n|---|---|---:|---:|---|\n")
	for _, c := range r.Checks {
		verdict := "ok"
		if !c.OK {
			verdict = "**FAIL**: " + c.Why
		}
		m := "-"
		if c.Multiple > 0 {
			m = fmtFactor(c.Multiple)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.Shape, c.Command, m, fmtFactor(c.Max), verdict)
	}
	if n := len(r.Failed()); n > 0 {
		fmt.Fprintf(&b, "\n%d of %d guarded figures failed.\n", n, len(r.Checks))
	} else {
		fmt.Fprintf(&b, "\nAll %d guarded figures are within their margins.\n", len(r.Checks))
	}
	return b.String()
}

// Calibrate returns prev with new margins from a run: each figure prev
// guards (at prev's N), as measured, times factor, rounded up to two
// significant digits, and no less than prev's LeastMax. Every guarded figure
// must have run to the end with exit 0.
func Calibrate(prev *GuardFile, results []Result, f Floor, factor float64, calibrated string) (*GuardFile, error) {
	g := &GuardFile{Comment: prev.Comment, N: prev.N, Factor: factor, LeastMax: prev.LeastMax, Calibrated: calibrated,
		Max: map[Shape]map[string]float64{}, Measured: map[Shape]map[string]float64{}}
	for _, shape := range prev.Shapes() {
		for c := range prev.Max[shape] {
			r, ok := findResult(results, ToolBulwark, shape, prev.N, c)
			if !ok {
				return nil, fmt.Errorf("calibrate: %s %s at N = %d was not measured", shape, c, prev.N)
			}
			if !r.OK() {
				return nil, fmt.Errorf("calibrate: %s %s did not run to the end with exit 0: %s", shape, c, describe(r))
			}
			m := f.Multiple(r.Wall, r.N)
			if g.Max[shape] == nil {
				g.Max[shape], g.Measured[shape] = map[string]float64{}, map[string]float64{}
			}
			g.Measured[shape][c] = round(m, 2)
			g.Max[shape][c] = max(ceilSignificant(m*factor, 2), prev.LeastMax)
		}
	}
	return g, nil
}

// Write writes the guard file, indented, with a final newline.
func (g *GuardFile) Write(path string) error {
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ceilSignificant rounds x up to digits significant digits: 86.3 -> 87.
func ceilSignificant(x float64, digits int) float64 {
	if x <= 0 {
		return 0
	}
	p := math.Pow(10, float64(digits)-math.Ceil(math.Log10(x)))
	return math.Ceil(x*p-1e-9) / p
}

func round(x float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(x*p) / p
}
