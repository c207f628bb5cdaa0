package benchharness

import (
	"bytes"
	"cmp"
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

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
)

// The commands measured on every stack, in the order they run.
const (
	CmdValidate = "validate"
	CmdPlan     = "plan"        // from empty: every resource is read and planned for creation
	CmdApply    = "apply"       // from empty
	CmdNoopPlan = "no-op plan"  // after the apply: every resource is read and found in place
	CmdNoop     = "no-op apply" // the same spec again: every resource is in place
	CmdTeardown = "teardown"    // --yes (Terraform: destroy)
)

// Commands is every command, in the order they run on a stack.
var Commands = []string{CmdValidate, CmdPlan, CmdApply, CmdNoopPlan, CmdNoop, CmdTeardown}

// NotWanted is the Skipped of a command Config.Want left out; the table
// leaves such rows out.
const NotWanted = "not wanted"

// ToolBulwark names bulwark's own results.
const ToolBulwark = "bulwark"

// Tool is a Terraform-compatible CLI (OpenTofu or Terraform) found on PATH.
type Tool struct {
	Name    string // tofu or terraform: the executable's name
	Path    string
	Version string // the first line of its `version`
}

// FindTools returns OpenTofu and Terraform, whichever are on PATH.
func FindTools(ctx context.Context) []Tool {
	var tools []Tool
	for _, name := range []string{"tofu", "terraform"} {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		cmd := exec.CommandContext(ctx, path, "version")
		cmd.Env = toolEnv()
		out, err := cmd.Output()
		if err != nil {
			continue
		}
		tools = append(tools, Tool{Name: name, Path: path, Version: versionLine(string(out))})
	}
	return tools
}

// versionLine is the line of a tool's `version` output that names it
// ("OpenTofu v1.12.6", "Terraform v1.11.4"), skipping the warnings OpenTofu
// prints first when it finds no CLI configuration file; the first line
// when none does.
func versionLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "OpenTofu v") || strings.HasPrefix(l, "Terraform v") {
			return l
		}
	}
	return strings.TrimSpace(lines[0])
}

// toolEnv is the environment Terraform and OpenTofu run in: no checkpoint
// call to the network, no prompts.
func toolEnv() []string {
	return append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0")
}

// Config says what RunStacks measures.
type Config struct {
	Bulwark     string // the bulwark executable
	PluginDir   string // the folder holding bulwark-provider-mock
	Shapes      []Shape
	Sizes       []int
	Parallelism int           // --parallelism for bulwark, -parallelism for the tools
	Budget      time.Duration // the longest one command may run before it is stopped; 0: no limit
	// BudgetFor, when set, gives a command's budget instead of Budget.
	BudgetFor func(tool string, shape Shape, n int, command string) time.Duration
	// Want, when set, says which commands to run; the others are skipped
	// (as NotWanted). An apply that a wanted no-op apply or teardown
	// needs is run all the same.
	Want    func(tool string, shape Shape, n int, command string) bool
	Scratch string // where each stack's fresh folder is made
	// Count is how many times each stack is run (in a fresh folder each
	// time); each figure is then the median run's (see Median). 0 is 1.
	Count    int
	Tools    []Tool // run the same stacks on these too
	Progress io.Writer
	// LatencyMS makes every call to the mock take this long (its
	// latency_ms); 0 is none.
	LatencyMS int
	// Keep leaves each stack's scratch folder in place.
	Keep bool
	// Interleave runs bulwark's shapes of one N in turn within each of the
	// Count rounds (flat, modules, flat, modules, …) instead of one
	// shape's Count runs after the other's, so a shared machine's changing
	// load moves both alike: for a ratio between shapes. Not with
	// StateURL; the tools run after, as without it.
	Interleave bool
	// StateURL, when set, runs bulwark's stacks a second time with
	// --state StateURL (each stack run in a schema or prefix of its own),
	// interleaved with the file backend's runs of the same stack, as tool
	// ToolRemote(StateURL).
	StateURL string
}

// Result is one command's figures on one stack.
type Result struct {
	Tool    string // ToolBulwark or a Tool's Name
	Shape   Shape
	N       int
	Command string
	Measurement
	// After the command, in the stack's state folder (bulwark only): the
	// state file, the journal, and every file of the stack's folder
	// (backups and the mock's world included).
	StateBytes, JournalBytes, FolderBytes int64
	// Resources is how many resources the state records after the command
	// (bulwark's status --json), -1 when unknown.
	Resources int
	// Skipped, when set, says why the command was not run.
	Skipped string
	// Tail is the end of the command's stderr when it failed.
	Tail string
	// FailedSteps is how many resource steps bulwark's events reported
	// failed (latency rows only; -1 when its output held no event).
	FailedSteps int
	// Calls are the provider calls the command made, by kind, from the
	// mock's call log (latency rows only; nil: none logged).
	Calls map[string]int
	// WantExit is the exit code that means the command did what it was
	// run for: 0, or 11 (rolled back) for the apply a rollback row makes
	// fail on purpose.
	WantExit int
}

// OK reports that the command ran to the end and exited as it should
// (WantExit: 0 but for a rollback row's apply).
func (r Result) OK() bool { return r.Skipped == "" && !r.Stopped && r.ExitCode == r.WantExit }

// exitedWrong reports that the command ran to the end and exited other
// than it should.
func (r Result) exitedWrong() bool { return !r.Stopped && r.ExitCode != r.WantExit }

// RunStacks runs every command on every shape and size: bulwark first, then
// each tool, each stack in a fresh folder. A command that fails or is
// stopped skips the rest of its stack. The error is for what kept the
// harness itself from working.
func RunStacks(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 10
	}
	// Load the executable once, untimed, so the first figure is not the
	// page cache's.
	exec.CommandContext(ctx, cfg.Bulwark, "version").Run()
	var all []Result
	for _, n := range cfg.Sizes {
		if cfg.Interleave {
			runs := map[Shape][][]Result{}
			for i := 0; i < max(cfg.Count, 1); i++ {
				for _, shape := range cfg.Shapes {
					rs, err := runBulwark(ctx, cfg, shape, n, "")
					runs[shape] = append(runs[shape], rs)
					if err != nil {
						return append(all, rs...), err
					}
				}
			}
			for _, shape := range cfg.Shapes {
				all = append(all, Median(runs[shape])...)
			}
		}
		for _, shape := range cfg.Shapes {
			// With a remote backend, its runs alternate with the file
			// backend's (file, remote, file, remote, …) so that a shared
			// machine's load moves both alike.
			var runs, remote [][]Result
			for i := 0; i < max(cfg.Count, 1) && !cfg.Interleave; i++ {
				rs, err := runBulwark(ctx, cfg, shape, n, "")
				runs = append(runs, rs)
				if err != nil {
					return append(all, rs...), err
				}
				if cfg.StateURL == "" {
					continue
				}
				rs, err = runBulwark(ctx, cfg, shape, n, cfg.StateURL)
				remote = append(remote, rs)
				if err != nil {
					return append(all, rs...), err
				}
			}
			all = append(all, Median(runs)...)
			all = append(all, Median(remote)...)
			for _, t := range cfg.Tools {
				var runs [][]Result
				for i := 0; i < max(cfg.Count, 1); i++ {
					rs, err := runTool(ctx, cfg, t, shape, n)
					runs = append(runs, rs)
					if err != nil {
						return append(all, rs...), err
					}
				}
				all = append(all, Median(runs)...)
			}
		}
	}
	return all, nil
}

// Median folds repeated runs of one stack (each the same commands in the
// same order) into one: for each command, the run with the median wall
// time, or the first that did not run to the end with exit 0, so a failure
// is never hidden by better runs. With an even count the slower of the two
// middle runs is taken.
func Median(runs [][]Result) []Result {
	if len(runs) == 0 {
		return nil
	}
	out := make([]Result, len(runs[0]))
	for i := range out {
		var rs []Result
		for _, run := range runs {
			if i < len(run) {
				rs = append(rs, run[i])
			}
		}
		out[i] = medianOne(rs)
	}
	return out
}

func medianOne(rs []Result) Result {
	for _, r := range rs {
		if !r.OK() && r.Skipped != NotWanted {
			return r
		}
	}
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b Result) int { return cmp.Compare(a.Wall, b.Wall) })
	return sorted[len(sorted)/2]
}

// wanted reports whether command runs on this stack.
func (cfg Config) wanted(tool string, shape Shape, n int, command string) bool {
	if cfg.Want == nil || cfg.Want(tool, shape, n, command) {
		return true
	}
	if command == CmdApply {
		return cfg.Want(tool, shape, n, CmdNoopPlan) || cfg.Want(tool, shape, n, CmdNoop) || cfg.Want(tool, shape, n, CmdTeardown)
	}
	return false
}

func (cfg Config) budget(tool string, shape Shape, n int, command string) time.Duration {
	if cfg.BudgetFor != nil {
		return cfg.BudgetFor(tool, shape, n, command)
	}
	return cfg.Budget
}

// stackRun is one stack's scratch folder and the commands run in it.
type stackRun struct {
	cfg   Config
	tool  string
	shape Shape
	n     int
	dir   string
	out   []Result
	stop  string // set once a command failed: why the rest is skipped
	// wantExit is the exit code the next measured command should end
	// with (Result.WantExit).
	wantExit int
}

func newStackRun(cfg Config, tool string, shape Shape, n int) (*stackRun, error) {
	dir, err := os.MkdirTemp(cfg.Scratch, fmt.Sprintf("%s-%s-%d-", tool, shape, n))
	if err != nil {
		return nil, err
	}
	return &stackRun{cfg: cfg, tool: tool, shape: shape, n: n, dir: dir}, nil
}

func (s *stackRun) close() {
	if !s.cfg.Keep {
		os.RemoveAll(s.dir)
	}
}

// measure runs one command in the stack's folder, unless an earlier one
// failed, and records it; after, when set, completes the result.
func (s *stackRun) measure(ctx context.Context, command, name string, env []string, args []string, after func(*Result)) error {
	r := Result{Tool: s.tool, Shape: s.shape, N: s.n, Command: command, Resources: -1, WantExit: s.wantExit}
	if s.stop != "" || !s.cfg.wanted(s.tool, s.shape, s.n, command) {
		r.Skipped = s.stop
		if r.Skipped == "" {
			r.Skipped = NotWanted
		}
		s.out = append(s.out, r)
		return nil
	}
	base := strings.ReplaceAll(command, " ", "-")
	stdout, err := os.Create(filepath.Join(s.dir, base+".stdout"))
	if err != nil {
		return err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(s.dir, base+".stderr"))
	if err != nil {
		return err
	}
	defer stderr.Close()
	budget := s.cfg.budget(s.tool, s.shape, s.n, command)
	m, err := run(ctx, budget, s.dir, env, stdout, stderr, name, args...)
	if err != nil {
		return fmt.Errorf("%s %s %d %s: %w", s.tool, s.shape, s.n, command, err)
	}
	r.Measurement = m
	switch {
	case m.Stopped:
		s.stop = fmt.Sprintf("%s was stopped after %s", command, budget)
	case m.ExitCode != s.wantExit:
		s.stop = fmt.Sprintf("%s exited %d", command, m.ExitCode)
		r.Tail = tail(filepath.Join(s.dir, base+".stderr"), 400)
	}
	if after != nil {
		after(&r)
	}
	s.out = append(s.out, r)
	fmt.Fprintf(s.cfg.Progress, "%-9s %-5s %6d  %-11s %s\n", s.tool, s.shape, s.n, command, describe(r))
	return nil
}

// describe is a result's one-line summary for the progress output.
func describe(r Result) string {
	switch {
	case r.Skipped != "":
		return "skipped: " + r.Skipped
	case r.Stopped:
		return fmt.Sprintf("stopped after %s", fmtDuration(r.Wall))
	case r.ExitCode != r.WantExit:
		return fmt.Sprintf("%s, exit %d: %s", fmtDuration(r.Wall), r.ExitCode, r.Tail)
	}
	return fmt.Sprintf("%s (%s per resource), peak RSS %s", fmtDuration(r.Wall), fmtDuration(r.Wall/time.Duration(max(r.N, 1))), fmtBytes(r.PeakRSS))
}

// runBulwark runs one stack on the file backend, or with stateURL set on
// that backend (in a schema or prefix of this run's own).
func runBulwark(ctx context.Context, cfg Config, shape Shape, n int, stateURL string) ([]Result, error) {
	tool := ToolBulwark
	if stateURL != "" {
		tool = ToolRemote(stateURL)
		u, err := stackStateURL(stateURL, shape, n)
		if err != nil {
			return nil, fmt.Errorf("-state %s: %w", Redact(stateURL), err)
		}
		stateURL = u
	}
	s, err := newStackRun(cfg, tool, shape, n)
	if err != nil {
		return nil, err
	}
	defer s.close()
	specPath := filepath.Join(s.dir, "spec.yaml")
	if err := WriteFiles(s.dir, BulwarkFiles(shape, n, MockConfig{LatencyMS: cfg.LatencyMS})); err != nil {
		return nil, err
	}
	stateDir := filepath.Join(s.dir, "state")
	stackDir := filepath.Join(stateDir, StackName(shape, n))
	global := stateFlags(cfg.PluginDir, stateDir, stateURL)
	// A secrets key of the run's own, so a benchmark (or its test) never
	// creates a key file in the user's config folder, nor uses theirs.
	key, err := secrets.NewKey("bench")
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), secrets.EnvKey+"="+key.Encode())
	after := func(r *Result) {
		if stateURL == "" { // a remote backend's sizes are not files here
			r.StateBytes = fileSize(filepath.Join(stackDir, state.FileName))
			// The live segment and the sealed ones (core/storage/filestore).
			r.JournalBytes = fileSize(filepath.Join(stackDir, journal.FileName)) + treeSize(filepath.Join(stackDir, "journal"))
			r.FolderBytes = treeSize(stackDir)
		}
		r.Resources = recorded(ctx, cfg.Bulwark, env, global, specPath)
	}
	par := fmt.Sprint(cfg.Parallelism)
	steps := []struct {
		command string
		args    []string
	}{
		{CmdValidate, []string{"validate", specPath}},
		{CmdPlan, []string{"plan", specPath}},
		{CmdApply, []string{"apply", "--yes", specPath, "--parallelism", par}},
		{CmdNoopPlan, []string{"plan", specPath}},
		{CmdNoop, []string{"apply", "--yes", specPath, "--parallelism", par}},
		{CmdTeardown, []string{"teardown", specPath, "--yes"}},
	}
	for _, st := range steps {
		if err := s.measure(ctx, st.command, cfg.Bulwark, env, append(append([]string{}, global...), st.args...), after); err != nil {
			return s.out, err
		}
	}
	return s.out, nil
}

// recorded is how many resources bulwark's status --json lists, -1 when it
// cannot say.
func recorded(ctx context.Context, bulwark string, env, global []string, specPath string) int {
	cmd := exec.CommandContext(ctx, bulwark, append(append([]string{}, global...), "status", specPath, "--json")...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return -1
	}
	var st struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return -1
	}
	return len(st.Resources)
}

func runTool(ctx context.Context, cfg Config, t Tool, shape Shape, n int) ([]Result, error) {
	s, err := newStackRun(cfg, t.Name, shape, n)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := WriteFiles(s.dir, TerraformFiles(shape, n, 0)); err != nil {
		return nil, err
	}
	env := toolEnv()
	s.toolInit(ctx, t, env)
	par := fmt.Sprintf("-parallelism=%d", cfg.Parallelism)
	after := func(r *Result) { r.StateBytes = fileSize(filepath.Join(s.dir, "terraform.tfstate")) }
	steps := []struct {
		command string
		args    []string
	}{
		{CmdValidate, []string{"validate", "-no-color"}},
		{CmdPlan, []string{"plan", "-input=false", "-no-color", par}},
		{CmdApply, []string{"apply", "-auto-approve", "-input=false", "-no-color", par}},
		{CmdNoopPlan, []string{"plan", "-input=false", "-no-color", par}},
		{CmdNoop, []string{"apply", "-auto-approve", "-input=false", "-no-color", par}},
		{CmdTeardown, []string{"destroy", "-auto-approve", "-input=false", "-no-color", par}},
	}
	for _, st := range steps {
		if err := s.measure(ctx, st.command, t.Path, env, st.args, after); err != nil {
			return s.out, err
		}
	}
	return s.out, nil
}

// toolInit runs the tool's init in the stack's folder, once, not measured:
// terraform_data needs no provider download. When it fails the stack's
// commands are skipped, saying so.
func (s *stackRun) toolInit(ctx context.Context, t Tool, env []string) {
	init := exec.CommandContext(ctx, t.Path, "init", "-input=false", "-no-color")
	init.Dir, init.Env = s.dir, env
	if out, err := init.CombinedOutput(); err != nil {
		s.stop = fmt.Sprintf("%s init failed: %v", t.Name, err)
		fmt.Fprintf(s.cfg.Progress, "%s init: %v\n%s\n", t.Name, err, lastBytes(out, 400))
	}
}

// tail is the last n bytes of the file at path, on one line.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return lastBytes(b, n)
}

func lastBytes(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
