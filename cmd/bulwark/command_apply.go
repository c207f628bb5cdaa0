package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) applyCmd() *cobra.Command {
	var provider, simulate string
	var parallelism int
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "apply SPEC",
		Short: "Converge the stack to the spec; a failure rolls back under the protection ladder",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			if dryRun {
				return c.plan(cmd.Context(), sp, opts, asJSON, false)
			}
			if asJSON {
				c.streamEvents(&opts)
			}
			if parallelism < 1 {
				return fmt.Errorf("--parallelism %d: must be at least 1", parallelism)
			}
			if simulate != "" {
				if _, ok := sp.Resource(simulate); !ok {
					return fmt.Errorf("--simulate-failure %s: no such resource in %s", simulate, args[0])
				}
			}
			opts.Parallelism, opts.SimulateFailure = parallelism, simulate
			opts.Stop = c.mutating(args[0])
			res, err := stack.Apply(cmd.Context(), sp, opts)
			if err != nil {
				return err
			}
			c.report(res, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none (a provider the spec does not declare runs with its default config)")
	cmd.Flags().StringVar(&simulate, "simulate-failure", "", "make the Execute of `RESOURCE` fail in this run (demos and tests)")
	cmd.Flags().IntVar(&parallelism, "parallelism", 10, "work on at most `N` independent resources at once")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "run every Check and no Execute: the same as bulwark plan")
	cmd.Flags().BoolVar(&asJSON, "json", false, "stream the lifecycle events to stdout, one JSON object a line, operation start and end included, and nothing else (with --dry-run: the plan as JSON)")
	return cmd
}
