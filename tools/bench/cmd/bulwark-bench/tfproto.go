package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/tools/bench/benchharness"
)

// tfOptions are the flags of -terraform-protocol.
type tfOptions struct {
	on        bool
	mirror    string
	providers string
	n         int
	env       string
	// world is -tf-world: the folder under which every stack's world is
	// kept (empty: each stack's own).
	world string
	// calls is -tf-calls: the items of the stack whose provider calls are
	// counted (0: none).
	calls int
	// profileProvider is -profile-tf: with -profile, the Terraform test
	// provider whose items are profiled.
	profileProvider string
}

// runTFProtocol runs the Terraform-protocol rows instead of the standard
// table and writes OUT/terraform-DATE.md.
func (o options) runTFProtocol(ctx context.Context, root, bulwark, pluginDir, scratch string) error {
	to := o.tf
	mirror := to.mirror
	if mirror == "" {
		mirror = filepath.Join(root, "bin", "testproviders")
	}
	mirror, err := filepath.Abs(mirror)
	if err != nil {
		return err
	}
	var provs []string
	for _, p := range strings.Split(to.providers, ",") {
		switch p = strings.TrimSpace(p); p {
		case "fwtest", "sdktest":
			provs = append(provs, p)
		default:
			return fmt.Errorf("-tf-providers: %q: want fwtest and/or sdktest", p)
		}
		if _, err := os.Stat(filepath.Join(mirror, "registry.terraform.io", "bulwark", p)); err != nil {
			return fmt.Errorf("-tf-mirror %s holds no %s (make build-testproviders builds it into bin/testproviders): %w", mirror, p, err)
		}
	}
	if to.n < 1 {
		return errors.New("-tf-n must be positive")
	}
	var env []string
	for _, kv := range strings.Fields(to.env) {
		if !strings.Contains(kv, "=") {
			return fmt.Errorf("-tf-env: %q is not NAME=VALUE", kv)
		}
		env = append(env, kv)
	}
	var terraform *benchharness.Tool
	if o.compare == "auto" {
		for _, t := range benchharness.FindTools(ctx) {
			if t.Name == "terraform" {
				terraform = &t
			}
		}
		if terraform == nil {
			fmt.Fprintln(os.Stderr, "terraform is not on PATH: measuring bulwark alone")
		}
	}
	cfg := benchharness.TFConfig{
		Bulwark: bulwark, PluginDir: pluginDir, Mirror: mirror, Terraform: terraform, Providers: provs,
		N: to.n, Parallelism: o.parallelism, Count: o.count, Budget: o.budget, Env: env,
		Scratch: scratch, Progress: os.Stderr, Keep: o.keep, World: to.world,
	}
	rep := &benchharness.TFReport{
		Date: time.Now().UTC(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Commit: benchharness.Commit(ctx, root),
		Load: loadAverage(), Args: commandLine(os.Args), Count: max(o.count, 1), N: to.n,
		Parallelism: o.parallelism, Terraform: terraform, Env: env, World: to.world,
	}
	if o.budget > 0 {
		rep.Budget = o.budget.String()
	}
	rows, err := benchharness.RunTFProtocol(ctx, cfg)
	rep.Rows, rep.LoadAfter = rows, loadAverage()
	if err != nil {
		return err
	}
	if to.calls > 0 {
		for _, p := range provs {
			counts, err := benchharness.CountTFCalls(ctx, cfg, p, to.calls)
			if err != nil {
				// The timed rows stand without it.
				fmt.Fprintf(os.Stderr, "counting %s's calls: %v\n", p, err)
				continue
			}
			rep.Calls = append(rep.Calls, counts...)
		}
	}
	var failure error
	for _, r := range rows {
		if res := r.Results[benchharness.RunnerBulwarkTF]; !res.OK() {
			failure = fmt.Errorf("bulwark %s on %s_item did not finish with exit 0: %s", r.Command, r.Provider, res.Tail)
			break
		}
	}
	md := rep.Markdown()
	fmt.Print(md)
	if o.out != "" {
		dir := o.out
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		name := filepath.Join(dir, "terraform-"+rep.Date.Format("2006-01-02-1504")+".md")
		if err := os.WriteFile(name, []byte(md), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", name)
	}
	return failure
}
