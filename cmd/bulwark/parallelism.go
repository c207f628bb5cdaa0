package main

import (
	"fmt"

	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/spf13/cobra"
)

// concurrency is --parallelism and --read-parallelism, on every command
// that calls providers (apply, plan, teardown, rollback, resume, import),
// as Terraform has -parallelism on each of its.
type concurrency struct {
	writes, reads int
}

// flags registers both flags on cmd.
func (f *concurrency) flags(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.writes, "parallelism", 10, "make at most `N` writes (create, update, delete) at once")
	cmd.Flags().IntVar(&f.reads, "read-parallelism", 0, fmt.Sprintf("make at most `N` reads and validations at once (default %d, and never fewer than --parallelism)", stack.DefaultReadParallelism))
}

// set checks the flags and puts them in opts.
func (f *concurrency) set(opts *stack.Options) error {
	if f.writes < 1 {
		return fmt.Errorf("--parallelism %d: must be at least 1", f.writes)
	}
	if f.reads < 0 {
		return fmt.Errorf("--read-parallelism %d: must be at least 1", f.reads)
	}
	opts.Parallelism, opts.ReadParallelism = f.writes, f.reads
	if f.reads > 0 && f.reads < f.writes {
		// A Verify reads after every write: fewer read slots than write
		// slots would leave writes' slots idle behind them.
		opts.ReadParallelism = f.writes
	}
	return nil
}
