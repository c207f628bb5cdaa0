package benchharness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// TFCalls are the provider RPCs one tool made on a small item stack, by
// command (TFCommands) and RPC name: counted from the provider's own
// trace log (both frameworks log "Received request" with tf_rpc=NAME for
// every call they serve), which bulwark shows with BULWARK_LOG=trace and
// Terraform with TF_LOG=trace. Unlike a time, a count does not move with
// the machine's load.
type TFCalls struct {
	Tool     string // RunnerBulwarkTF or RunnerTerraform
	Provider string
	N        int
	Calls    map[string]map[string]int // command → RPC → calls
}

var tfRPCLine = regexp.MustCompile(`Received request.*tf_rpc"?[=:]"?([A-Za-z]+)`)

// countRPCs counts the "Received request" lines of a provider's trace
// log by RPC.
func countRPCs(log []byte) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if m := tfRPCLine.FindSubmatch(sc.Bytes()); m != nil {
			out[string(m[1])]++
		}
	}
	return out
}

// CountTFCalls runs, once for bulwark and once for Terraform (when
// cfg.Terraform is set), apply, plan, apply again and teardown (destroy)
// on n items of provider, with the provider's trace log on, and counts
// the calls each command made. Nothing is timed.
func CountTFCalls(ctx context.Context, cfg TFConfig, provider string, n int) ([]TFCalls, error) {
	dir, err := os.MkdirTemp(cfg.Scratch, "tfcalls-")
	if err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(dir)
	}
	var out []TFCalls
	bw := filepath.Join(dir, "bulwark")
	if err := os.MkdirAll(bw, 0o700); err != nil {
		return nil, err
	}
	specPath := filepath.Join(bw, "spec.yaml")
	if err := os.WriteFile(specPath, TFItemSpec(provider, n), 0o600); err != nil {
		return nil, err
	}
	key, err := secrets.NewKey("bench")
	if err != nil {
		return nil, err
	}
	env := append(append(os.Environ(), secrets.EnvKey+"="+key.Encode(), "BULWARK_LOG=trace", WorldEnv+"="+filepath.Join(bw, "world")), cfg.Env...)
	global := stateFlags(cfg.Mirror, filepath.Join(bw, "state"), "")
	calls := TFCalls{Tool: RunnerBulwarkTF, Provider: provider, N: n, Calls: map[string]map[string]int{}}
	for _, st := range []struct{ command, args string }{
		{CmdApply, "apply --yes " + specPath},
		{CmdNoopPlan, "plan " + specPath},
		{CmdNoop, "apply --yes " + specPath},
		{CmdTeardown, "teardown --yes " + specPath},
	} {
		log, err := runLogged(ctx, bw, cfg.Bulwark, env, append(append([]string{}, global...), strings.Fields(st.args)...))
		if err != nil {
			return nil, fmt.Errorf("bulwark %s: %w", st.command, err)
		}
		calls.Calls[st.command] = countRPCs(log)
	}
	out = append(out, calls)
	if cfg.Terraform == nil {
		return out, nil
	}
	tf := filepath.Join(dir, "terraform")
	if err := os.MkdirAll(tf, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tf, "main.tf"), TFItemConfig(provider, n), 0o600); err != nil {
		return nil, err
	}
	cli := filepath.Join(tf, "cli.tfrc")
	if err := os.WriteFile(cli, []byte(TFCLIConfig(cfg.Mirror)), 0o600); err != nil {
		return nil, err
	}
	var tenv []string
	for _, kv := range toolEnv() {
		if strings.HasPrefix(kv, "TF_") && !strings.HasPrefix(kv, "TF_IN_AUTOMATION=") && !strings.HasPrefix(kv, "TF_INPUT=") {
			continue
		}
		tenv = append(tenv, kv)
	}
	tenv = append(append(tenv, "TF_CLI_CONFIG_FILE="+cli, WorldEnv+"="+filepath.Join(tf, "world")), cfg.Env...)
	if _, err := runLogged(ctx, tf, cfg.Terraform.Path, tenv, []string{"init", "-input=false", "-no-color"}); err != nil {
		return nil, fmt.Errorf("terraform init: %w", err)
	}
	tenv = append(tenv, "TF_LOG=trace")
	calls = TFCalls{Tool: RunnerTerraform, Provider: provider, N: n, Calls: map[string]map[string]int{}}
	for _, st := range []struct{ command, args string }{
		{CmdApply, "apply -auto-approve -input=false -no-color"},
		{CmdNoopPlan, "plan -input=false -no-color"},
		{CmdNoop, "apply -auto-approve -input=false -no-color"},
		{CmdTeardown, "destroy -auto-approve -input=false -no-color"},
	} {
		log, err := runLogged(ctx, tf, cfg.Terraform.Path, tenv, strings.Fields(st.args))
		if err != nil {
			return nil, fmt.Errorf("terraform %s: %w", st.command, err)
		}
		calls.Calls[st.command] = countRPCs(log)
	}
	return append(out, calls), nil
}

// runLogged runs a command in dir and returns its stderr (the log); a
// non-zero exit is an error carrying the log's end.
func runLogged(ctx context.Context, dir, path string, env, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tail := stderr.Bytes()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return nil, fmt.Errorf("%w: %s", err, tail)
	}
	return stderr.Bytes(), nil
}

// tfCallsMarkdown renders the counts as calls per resource, by command and
// RPC, each tool beside the other.
func tfCallsMarkdown(counts []TFCalls) string {
	if len(counts) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Provider calls per resource\n\nCounted from the provider's own trace log (`BULWARK_LOG=trace`, `TF_LOG=trace`: "+
		"its \"Received request\" lines) on a stack of %d items, once; per-process calls (GetProviderSchema, ConfigureProvider, "+
		"ValidateProviderConfig; protocol 5's Configure, PrepareProviderConfig) are left out. Counts do not depend on the machine's load.\n", counts[0].N)
	byProvider := map[string][]TFCalls{}
	var provs []string
	for _, c := range counts {
		if _, ok := byProvider[c.Provider]; !ok {
			provs = append(provs, c.Provider)
		}
		byProvider[c.Provider] = append(byProvider[c.Provider], c)
	}
	// Per process, not per resource: protocol 6's names and protocol 5's
	// (Configure, PrepareProviderConfig).
	perProcess := map[string]bool{"GetProviderSchema": true, "ConfigureProvider": true, "ValidateProviderConfig": true, "GetMetadata": true, "StopProvider": true,
		"Configure": true, "PrepareProviderConfig": true, "GetSchema": true, "Stop": true}
	for _, p := range provs {
		fmt.Fprintf(&b, "\n### %s_item\n\n| command | tool | calls per resource | of which |\n| --- | --- | ---: | --- |\n", p)
		for _, cmd := range TFCommands {
			for _, c := range byProvider[p] {
				rpcs := c.Calls[cmd]
				var names []string
				total := 0
				for name, k := range rpcs {
					if perProcess[name] {
						continue
					}
					names = append(names, name)
					total += k
				}
				sort.Strings(names)
				var parts []string
				for _, name := range names {
					parts = append(parts, fmt.Sprintf("%s %s", name, perResource(rpcs[name], c.N)))
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cmd, c.Tool, perResource(total, c.N), strings.Join(parts, ", "))
			}
		}
	}
	return b.String()
}

func perResource(k, n int) string {
	x := float64(k) / float64(max(n, 1))
	if x == float64(int(x)) {
		return fmt.Sprintf("%d", int(x))
	}
	return fmt.Sprintf("%.2f", x)
}
