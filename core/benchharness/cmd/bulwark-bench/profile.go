package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/bulwark-iac/bulwark/core/benchharness"
	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// profile runs one command of one generated stack in this process, through
// core/stack as the CLI calls it (the mock provider still a plugin
// process), with the CPU profile on for that command alone, and writes the
// profile to cpuFile. The commands before it on the stack (an apply before a
// no-op plan, a no-op apply or a teardown) run first, unprofiled.
func profile(ctx context.Context, command string, shape benchharness.Shape, n, latencyMS int, pluginDir, scratch string, parallelism int, cpuFile string) error {
	dir, err := os.MkdirTemp(scratch, "profile-")
	if err != nil {
		return err
	}
	specPath := filepath.Join(dir, "spec.yaml")
	text := benchharness.BulwarkSpec(shape, n, latencyMS)
	if err := os.WriteFile(specPath, text, 0o600); err != nil {
		return err
	}
	sp, err := spec.Parse(specPath, text)
	if err != nil {
		return err
	}
	ev, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return err
	}
	defer ev.Close()
	// Seal as the CLI does, with a key of the run's own (never the user's).
	key, err := secrets.NewKey("bench")
	if err != nil {
		return err
	}
	opts := stack.Options{
		Secrets:     &secrets.Source{Env: key.Encode()},
		StateDir:    filepath.Join(dir, "state"),
		PluginDirs:  []string{pluginDir},
		Events:      events.NewWriter(ev, nil),
		Parallelism: parallelism,
	}
	apply := func() error {
		res, err := stack.Apply(ctx, sp, opts)
		if err == nil && res.Err != nil {
			err = res.Err
		}
		return err
	}
	var fn func() error
	switch command {
	case benchharness.CmdValidate:
		fn = func() error { return stack.Validate(ctx, sp, opts) }
	case benchharness.CmdPlan, benchharness.CmdNoopPlan:
		fn = func() error { _, err := stack.Plan(ctx, sp, opts); return err }
	case benchharness.CmdApply:
		fn = apply
	case benchharness.CmdNoop:
		fn = apply
	case benchharness.CmdTeardown:
		fn = func() error {
			res, err := stack.Teardown(ctx, sp, opts)
			if err == nil && res.Err != nil {
				err = res.Err
			}
			return err
		}
	default:
		return fmt.Errorf("-profile %q: want one of validate, plan, apply, no-op plan, no-op apply, teardown", command)
	}
	if command == benchharness.CmdNoopPlan || command == benchharness.CmdNoop || command == benchharness.CmdTeardown {
		fmt.Fprintf(os.Stderr, "apply first (not profiled)\n")
		if err := apply(); err != nil {
			return fmt.Errorf("the apply before %s: %w", command, err)
		}
	}
	f, err := os.Create(cpuFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	start := time.Now()
	err = fn()
	wall := time.Since(start)
	pprof.StopCPUProfile()
	if err != nil {
		return fmt.Errorf("%s: %w", command, err)
	}
	fmt.Fprintf(os.Stderr, "%s of %d %s resources in process: %s; CPU profile in %s (bulwark's side only: the mock is another process)\n"+
		"  go tool pprof -top -nodecount 30 %s\n", command, n, shape, wall.Round(time.Millisecond), cpuFile, cpuFile)
	return nil
}
