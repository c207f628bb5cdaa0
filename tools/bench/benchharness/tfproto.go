package benchharness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// The Terraform-protocol rows (issue 21, item 8): a flat stack of N items
// of a test provider built for Terraform (testproviders: fwtest on
// terraform-plugin-framework, sdktest on terraform-plugin-sdk/v2), run by
// bulwark and by Terraform from the same binary in a filesystem mirror, and
// the same N on bulwark's own protocol (the mock's generic type).

// The commands of a Terraform-protocol stack, in the order they run.
var TFCommands = []string{CmdApply, CmdNoopPlan, CmdNoop, CmdTeardown}

// The runners of the Terraform-protocol rows.
const (
	RunnerBulwarkTF   = "bulwark"        // bulwark on the Terraform provider
	RunnerTerraform   = "terraform"      // Terraform on the same binary
	RunnerMock        = "mock"           // bulwark on its own protocol: the mock as built (batch calls)
	RunnerMockNoBatch = "mock, no batch" // the mock with its batch calls hidden, one call per resource as a Terraform provider
	// StartupSuffix marks a runner's stack of one resource: its start-up,
	// what the same command costs whatever N (process, plugin start,
	// schema, lock, state), subtracted from the N-resource figure for the
	// per-resource cost past start-up.
	StartupSuffix    = " @1"
	tfProviderSource = "bulwark/%s" // short source address of a test provider
	tfItemType       = "%s_item"
)

// TFConfig says what RunTFProtocol measures.
type TFConfig struct {
	Bulwark   string // the bulwark executable
	PluginDir string // the folder holding bulwark-provider-mock
	// Mirror is the filesystem mirror holding the test providers
	// (make build-testproviders: bin/testproviders), for bulwark's
	// --plugin-dir and Terraform's CLI configuration alike.
	Mirror    string
	Terraform *Tool    // nil: bulwark alone
	Providers []string // fwtest and/or sdktest
	N         int
	// Parallelism is bulwark's --parallelism and Terraform's -parallelism.
	Parallelism int
	Count       int
	Budget      time.Duration
	// Env is added to the environment of every command of both tools (and
	// so of the providers they start), e.g. TF_LOG_SDK=off.
	Env      []string
	Scratch  string
	Progress io.Writer
	Keep     bool
	// World, when set, is where every stack keeps its world (the
	// simulated cloud's records), the test providers' and the mock's
	// alike, each in a fresh folder under it (e.g. /dev/shm), so that
	// neither side's figures hold its storage's disk work; empty: each
	// stack's own folder (the test providers') or the mock's data folder.
	World string
}

// worldDir is the world folder of the stack in folder dir: a fresh one
// under cfg.World, removed by done unless cfg.Keep, or def (created by its
// user) when cfg.World is empty.
func (cfg TFConfig) worldDir(def string) (dir string, done func(), err error) {
	if cfg.World == "" {
		return def, func() {}, nil
	}
	dir, err = os.MkdirTemp(cfg.World, "bulwark-bench-world-")
	if err != nil {
		return "", nil, fmt.Errorf("-tf-world: %w", err)
	}
	if cfg.Keep {
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// TFRow is one command of one provider's stack: each runner's result.
type TFRow struct {
	Provider string // fwtest or sdktest
	Command  string
	// By runner (RunnerBulwarkTF, RunnerTerraform, RunnerMock,
	// RunnerMockNoBatch); a runner that did not run is absent.
	Results map[string]Result
}

// RunTFProtocol runs, Count times, for each provider: bulwark on its item
// stack, bulwark on the mock without batch calls, Terraform on the item
// stack; then bulwark on the mock as built; each in a fresh folder, so
// that a shared machine's load moves every runner alike (the two runs the
// own-protocol target compares are next to each other). Each figure is the
// median run's.
func RunTFProtocol(ctx context.Context, cfg TFConfig) ([]TFRow, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 10
	}
	base := Config{Bulwark: cfg.Bulwark, Parallelism: cfg.Parallelism, Budget: cfg.Budget,
		Scratch: cfg.Scratch, Progress: cfg.Progress, Keep: cfg.Keep}
	runs := map[string]map[string][][]Result{} // provider → runner → runs
	for _, p := range cfg.Providers {
		runs[p] = map[string][][]Result{}
	}
	for i := 0; i < max(cfg.Count, 1); i++ {
		for _, p := range cfg.Providers {
			rs, err := runBulwarkTF(ctx, base, cfg, p)
			runs[p][RunnerBulwarkTF] = append(runs[p][RunnerBulwarkTF], rs)
			if err != nil {
				return nil, err
			}
			// The mock without batch calls right after, so that the ratio
			// the target is held to compares runs under the same load.
			rs, err = runBulwarkMock(ctx, base, cfg, false)
			runs[p][RunnerMockNoBatch] = append(runs[p][RunnerMockNoBatch], rs)
			if err != nil {
				return nil, err
			}
			// Both again on a stack of one: their start-up.
			one := cfg
			one.N = 1
			rs, err = runBulwarkTF(ctx, base, one, p)
			runs[p][RunnerBulwarkTF+StartupSuffix] = append(runs[p][RunnerBulwarkTF+StartupSuffix], rs)
			if err != nil {
				return nil, err
			}
			rs, err = runBulwarkMock(ctx, base, one, false)
			runs[p][RunnerMockNoBatch+StartupSuffix] = append(runs[p][RunnerMockNoBatch+StartupSuffix], rs)
			if err != nil {
				return nil, err
			}
			if cfg.Terraform != nil {
				rs, err := runTerraformTF(ctx, base, cfg, p)
				runs[p][RunnerTerraform] = append(runs[p][RunnerTerraform], rs)
				if err != nil {
					return nil, err
				}
			}
		}
		rs, err := runBulwarkMock(ctx, base, cfg, true)
		if err != nil {
			return nil, err
		}
		for _, p := range cfg.Providers {
			runs[p][RunnerMock] = append(runs[p][RunnerMock], rs)
		}
	}
	var rows []TFRow
	for _, p := range cfg.Providers {
		med := map[string][]Result{}
		for runner, rs := range runs[p] {
			med[runner] = Median(rs)
		}
		for i, c := range TFCommands {
			row := TFRow{Provider: p, Command: c, Results: map[string]Result{}}
			for runner, rs := range med {
				if i < len(rs) {
					row.Results[runner] = rs[i]
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func mockRunner(batch bool) string {
	if batch {
		return RunnerMock
	}
	return RunnerMockNoBatch
}

// TFItemSpec is a bulwark spec of n items of a test provider (fwtest or
// sdktest) found as bulwark/PROVIDER; the provider finds its world in
// $BULWARK_TFTEST_WORLD.
func TFItemSpec(provider string, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# generated by bulwark-bench: %d flat %s resources\n", n, fmt.Sprintf(tfItemType, provider))
	fmt.Fprintf(&b, "version: 1\nstack: %s\nproviders:\n  %s: {source: %s, version: \"~> 0.1\"}\nresources:\n",
		"bench-"+provider+fmt.Sprintf("-%d", n), provider, fmt.Sprintf(tfProviderSource, provider))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - name: %s\n    type: %s\n    config: {name: %s, value: v}\n", ResourceName(i), fmt.Sprintf(tfItemType, provider), ResourceName(i))
	}
	return []byte(b.String())
}

// TFItemConfig is the same stack as Terraform's configuration.
func TFItemConfig(provider string, n int) []byte {
	var b strings.Builder
	typ := fmt.Sprintf(tfItemType, provider)
	fmt.Fprintf(&b, "# generated by bulwark-bench: %d flat %s resources\n", n, typ)
	fmt.Fprintf(&b, "terraform {\n  required_providers {\n    %s = { source = %q, version = \"~> 0.1\" }\n  }\n}\n\nprovider %q {}\n\n",
		provider, fmt.Sprintf(tfProviderSource, provider), provider)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "resource %q %q {\n  name  = %q\n  value = \"v\"\n}\n", typ, ResourceName(i), ResourceName(i))
	}
	return []byte(b.String())
}

// TFCLIConfig is a Terraform CLI configuration installing every provider
// from the filesystem mirror and nothing from the network.
func TFCLIConfig(mirror string) string {
	return fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror)
}

// WorldEnv is the variable naming the test providers' world folder.
const WorldEnv = "BULWARK_TFTEST_WORLD"

func runBulwarkTF(ctx context.Context, base Config, cfg TFConfig, provider string) ([]Result, error) {
	s, err := newStackRun(base, "bulwark-"+provider, Flat, cfg.N)
	if err != nil {
		return nil, err
	}
	s.tool = RunnerBulwarkTF
	defer s.close()
	world, done, err := cfg.worldDir(filepath.Join(s.dir, "world"))
	if err != nil {
		return nil, err
	}
	defer done()
	return s.bulwarkCommands(ctx, cfg, TFItemSpec(provider, cfg.N), cfg.Mirror,
		append(append([]string{}, cfg.Env...), WorldEnv+"="+world))
}

func runBulwarkMock(ctx context.Context, base Config, cfg TFConfig, batch bool) ([]Result, error) {
	name := "bulwark-mock"
	env := append([]string{}, cfg.Env...)
	if !batch {
		name += "-nobatch"
		env = append(env, "BULWARK_MOCK_BATCH=off")
	}
	s, err := newStackRun(base, name, Flat, cfg.N)
	if err != nil {
		return nil, err
	}
	s.tool = mockRunner(batch)
	defer s.close()
	world, done, err := cfg.worldDir("")
	if err != nil {
		return nil, err
	}
	defer done()
	return s.bulwarkCommands(ctx, cfg, BulwarkSpecWith(Flat, cfg.N, MockConfig{World: world}), cfg.PluginDir, env)
}

// bulwarkCommands runs TFCommands on spec in the stack's folder.
func (s *stackRun) bulwarkCommands(ctx context.Context, cfg TFConfig, spec []byte, pluginDir string, extra []string) ([]Result, error) {
	specPath := filepath.Join(s.dir, "spec.yaml")
	if err := os.WriteFile(specPath, spec, 0o600); err != nil {
		return nil, err
	}
	global := stateFlags(pluginDir, filepath.Join(s.dir, "state"), "")
	key, err := secrets.NewKey("bench")
	if err != nil {
		return nil, err
	}
	env := append(append(os.Environ(), secrets.EnvKey+"="+key.Encode()), extra...)
	after := func(r *Result) { r.Resources = recorded(ctx, cfg.Bulwark, env, global, specPath) }
	par := fmt.Sprint(s.cfg.Parallelism)
	steps := []struct {
		command string
		args    []string
	}{
		{CmdApply, []string{"apply", "--yes", specPath, "--parallelism", par}},
		{CmdNoopPlan, []string{"plan", specPath}},
		{CmdNoop, []string{"apply", "--yes", specPath, "--parallelism", par}},
		{CmdTeardown, []string{"teardown", specPath, "--yes", "--parallelism", par}},
	}
	for _, st := range steps {
		if err := s.measure(ctx, st.command, cfg.Bulwark, env, append(append([]string{}, global...), st.args...), after); err != nil {
			return s.out, err
		}
	}
	return s.out, nil
}

func runTerraformTF(ctx context.Context, base Config, cfg TFConfig, provider string) ([]Result, error) {
	s, err := newStackRun(base, "terraform-"+provider, Flat, cfg.N)
	if err != nil {
		return nil, err
	}
	s.tool = RunnerTerraform
	defer s.close()
	if err := os.WriteFile(filepath.Join(s.dir, "main.tf"), TFItemConfig(provider, cfg.N), 0o600); err != nil {
		return nil, err
	}
	cli := filepath.Join(s.dir, "cli.tfrc")
	if err := os.WriteFile(cli, []byte(TFCLIConfig(cfg.Mirror)), 0o600); err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range toolEnv() {
		// The user's own Terraform settings (a plugin cache, a CLI
		// configuration, logging) would make this run differ from the
		// next machine's.
		if strings.HasPrefix(kv, "TF_") && !strings.HasPrefix(kv, "TF_IN_AUTOMATION=") && !strings.HasPrefix(kv, "TF_INPUT=") {
			continue
		}
		env = append(env, kv)
	}
	world, done, err := cfg.worldDir(filepath.Join(s.dir, "world"))
	if err != nil {
		return nil, err
	}
	defer done()
	env = append(append(env, "TF_CLI_CONFIG_FILE="+cli, WorldEnv+"="+world), cfg.Env...)
	s.toolInit(ctx, *cfg.Terraform, env)
	par := fmt.Sprintf("-parallelism=%d", s.cfg.Parallelism)
	after := func(r *Result) { r.StateBytes = fileSize(filepath.Join(s.dir, "terraform.tfstate")) }
	steps := []struct {
		command string
		args    []string
	}{
		{CmdApply, []string{"apply", "-auto-approve", "-input=false", "-no-color", par}},
		{CmdNoopPlan, []string{"plan", "-input=false", "-no-color", par}},
		{CmdNoop, []string{"apply", "-auto-approve", "-input=false", "-no-color", par}},
		{CmdTeardown, []string{"destroy", "-auto-approve", "-input=false", "-no-color", par}},
	}
	for _, st := range steps {
		if err := s.measure(ctx, st.command, cfg.Terraform.Path, env, st.args, after); err != nil {
			return s.out, err
		}
	}
	return s.out, nil
}

// TFReport is one run of the Terraform-protocol rows.
type TFReport struct {
	Date                        time.Time
	CPUs                        int
	GoVersion, Platform, Commit string
	Load, LoadAfter, Args       string
	Count, N, Parallelism       int
	Budget                      string
	Terraform                   *Tool
	Env                         []string
	// World is TFConfig.World.
	World string
	Rows  []TFRow
	// Calls are the provider calls counted per tool (CountTFCalls).
	Calls []TFCalls
}

// TFTargets are issue 21's targets: bulwark at least ApplyFaster times
// faster than Terraform on apply and no-op apply, and its per-resource cost
// on a Terraform provider within WithinOwn times the same stack's on its own
// protocol.
const (
	TFTargetFaster = 5.0
	TFTargetOwn    = 2.0
)

// Markdown renders the report.
func (r *TFReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bulwark on Terraform-protocol providers, %s\n\n", r.Date.UTC().Format("2006-01-02 15:04 UTC"))
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
	fmt.Fprintf(&b, "- stack: %d flat `PROVIDER_item` resources (`name`, `value`; the provider makes up the `id`) of the test providers "+
		"(testproviders: fwtest on terraform-plugin-framework, protocol 6; sdktest on terraform-plugin-sdk/v2, protocol 5), "+
		"one binary in a filesystem mirror (`make build-testproviders`) that bulwark (`--plugin-dir MIRROR`) and Terraform "+
		"(`TF_CLI_CONFIG_FILE` with a `filesystem_mirror`, `init` once, offline, not measured) both run; each stack in a fresh folder "+
		"with a world folder of its own; local state, file backend\n", r.N)
	if r.Terraform != nil {
		fmt.Fprintf(&b, "- Terraform: %s (`%s`)\n", r.Terraform.Version, r.Terraform.Path)
	} else {
		b.WriteString("- Terraform: not on PATH, bulwark alone\n")
	}
	fmt.Fprintf(&b, "- commands: bulwark `apply --parallelism %d`, `plan`, `apply` again (no-op), `teardown --yes --parallelism %d`; "+
		"Terraform `apply -auto-approve -parallelism=%d`, `plan`, `apply` again, `destroy -auto-approve`\n", r.Parallelism, r.Parallelism, r.Parallelism)
	b.WriteString("- **mock**: the same N as the mock's `generic` type on bulwark's own protocol, as built (ReadMany, ValidateMany, CreateMany); " +
		"**mock, no batch**: with its batch calls hidden (`BULWARK_MOCK_BATCH=off`), one call per resource per kind of call, as a Terraform provider\n")
	if len(r.Env) > 0 {
		fmt.Fprintf(&b, "- environment of every command of both tools (and so of the providers): `%s`\n", strings.Join(r.Env, " "))
	} else {
		b.WriteString("- environment: as given (`TF_LOG_SDK` unset: the providers log every RPC at trace level under Terraform, " +
			"which reads and drops the lines; bulwark, logging nothing, starts them with their `TF_LOG_*` levels off)\n")
	}
	if r.World != "" {
		fmt.Fprintf(&b, "- every stack's world (the simulated cloud's records), the test providers' and the mock's alike, in a fresh folder under `%s` (`-tf-world`), so that neither side's figures hold its storage's disk work\n", r.World)
	} else {
		b.WriteString("- the test providers' world in the stack's folder (a file per object, written to a temporary file and renamed, not fsynced), the mock's in its data folder (an appended log, fsynced per change): `-tf-world /dev/shm` puts both on tmpfs\n")
	}
	if r.Count > 1 {
		fmt.Fprintf(&b, "- each stack run %d times, interleaved (per provider: bulwark, the mock without batch calls, Terraform; then the mock; then again), each figure the median run's\n", r.Count)
	} else {
		b.WriteString("- each stack run once, interleaved (per provider: bulwark, the mock without batch calls, Terraform; then the mock)\n")
	}
	if r.Budget != "" {
		fmt.Fprintf(&b, "- a command still running after %s is stopped\n", r.Budget)
	}
	if r.Args != "" {
		fmt.Fprintf(&b, "- run as `%s`\n", r.Args)
	}
	fmt.Fprintf(&b, "\nTargets (issue 21): bulwark ≥ %g× faster than Terraform on apply and no-op apply; bulwark's per-resource cost on the "+
		"Terraform provider ≤ %g× the same stack's on its own protocol (held against the mock without batch calls, which makes the same "+
		"number of calls; the batching mock's ratio beside it). Wall time, and per resource in parentheses (wall time ÷ N, start-up included). "+
		"\"start-up\" is the same command on a stack of one resource, bulwark on the Terraform provider / on the mock without batch calls "+
		"(run beside them, medians alike): what the command costs whatever N (process, plugin start and handshake, schema, lock, state). "+
		"\"past start-up ÷\" is the per-resource cost without it, (wall − start-up) on the Terraform provider ÷ the same on the "+
		"mock without batch calls: what each further resource adds, which the wall-time ratio mixes with each side's own start-up "+
		"(a start-up made faster on both sides raises the wall-time ratio). Both ratios are held to the target. CPU is the command's own "+
		"user+system time / with its plugin processes (wait4's rusage); \"CPU ratio\" is bulwark's CPU with its provider ÷ the same of the mock "+
		"without batch calls, which a shared machine's load moves far less than wall time; \"host CPU ratio\" is bulwark's own process alone "+
		"(no provider) ÷ the same on the mock without batch calls, the host's cost apart from the provider framework's.\n", TFTargetFaster, TFTargetOwn)
	provider := ""
	for _, row := range r.Rows {
		if row.Provider != provider {
			provider = row.Provider
			fmt.Fprintf(&b, "\n## %s_item × %d\n\n", provider, r.N)
			b.WriteString("| command | bulwark | Terraform | Terraform ÷ bulwark | mock | mock, no batch | bulwark ÷ mock, no batch | start-up | past start-up ÷ | bulwark ÷ mock | bulwark CPU | mock, no batch CPU | CPU ratio | host CPU ratio | Terraform CPU |\n")
			b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		}
		bw, tf := row.Results[RunnerBulwarkTF], row.Results[RunnerTerraform]
		mk, mn := row.Results[RunnerMock], row.Results[RunnerMockNoBatch]
		faster, own, ownBatch := "", "", ""
		// A tool that did not run (-compare none, not on PATH) has no
		// result: no ratio, rather than 0.0×.
		if bw.OK() && tf.OK() && tf.Tool != "" && bw.Wall > 0 {
			faster = verdict(float64(tf.Wall)/float64(bw.Wall), row.Command == CmdApply || row.Command == CmdNoop, func(x float64) bool { return x >= TFTargetFaster })
		}
		if bw.OK() && mn.OK() {
			own = verdict(float64(bw.Wall)/float64(mn.Wall), true, func(x float64) bool { return x <= TFTargetOwn })
		}
		if bw.OK() && mk.OK() {
			ownBatch = fmt.Sprintf("%.1f×", float64(bw.Wall)/float64(mk.Wall))
		}
		startup, past := "", ""
		bw1, mn1 := row.Results[RunnerBulwarkTF+StartupSuffix], row.Results[RunnerMockNoBatch+StartupSuffix]
		if bw1.OK() && mn1.OK() && bw1.Wall > 0 && mn1.Wall > 0 {
			startup = fmtDuration(bw1.Wall) + " / " + fmtDuration(mn1.Wall)
			if bw.OK() && mn.OK() && bw.Wall > bw1.Wall && mn.Wall > mn1.Wall {
				past = verdict(float64(bw.Wall-bw1.Wall)/float64(mn.Wall-mn1.Wall), true, func(x float64) bool { return x <= TFTargetOwn })
			}
		}
		cpuRatio := ""
		if bw.OK() && mn.OK() && bw.CPU > 0 && mn.CPU > 0 {
			cpuRatio = fmt.Sprintf("%.1f×", float64(bw.CPU)/float64(mn.CPU))
		}
		// bulwark's own process alone on both sides: the host's cost,
		// apart from what the provider's framework spends.
		hostRatio := ""
		if bw.OK() && mn.OK() && bw.CPUSelf > 0 && mn.CPUSelf > 0 {
			hostRatio = fmt.Sprintf("%.1f×", float64(bw.CPUSelf)/float64(mn.CPUSelf))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Command,
			tfCell(bw, r.N), tfCell(tf, r.N), faster, tfCell(mk, r.N), tfCell(mn, r.N), own, startup, past, ownBatch, cpuCell(bw), cpuCell(mn), cpuRatio, hostRatio, cpuCell(tf))
	}
	b.WriteString(tfCallsMarkdown(r.Calls))
	return b.String()
}

// verdict is a ratio, marked against its target when the target applies.
func verdict(x float64, targeted bool, met func(float64) bool) string {
	s := fmt.Sprintf("%.1f×", x)
	if !targeted {
		return s
	}
	if met(x) {
		return s + " ✓"
	}
	return "**" + s + " ✗**"
}

func tfCell(r Result, n int) string {
	switch {
	case r.Tool == "":
		return ""
	case r.Skipped != "":
		return "skipped: " + r.Skipped
	case r.Stopped:
		return "stopped after " + fmtDuration(r.Wall)
	case r.ExitCode != 0:
		return fmt.Sprintf("exit %d: %s", r.ExitCode, r.Tail)
	}
	return fmt.Sprintf("%s (%s)", fmtDuration(r.Wall), fmtDuration(r.Wall/time.Duration(max(n, 1))))
}

func cpuCell(r Result) string {
	if !r.OK() || r.CPU == 0 {
		return ""
	}
	return fmt.Sprintf("%s / %s", fmtDuration(r.CPUSelf), fmtDuration(r.CPU))
}
