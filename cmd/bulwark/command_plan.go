package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) planCmd() *cobra.Command {
	var provider string
	var asJSON, detailed bool
	cmd := &cobra.Command{
		Use:   "plan SPEC",
		Short: "The dry run: every step's Check, no Execute, and a diff per resource; takes no lock",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			return c.plan(cmd.Context(), sp, opts, asJSON, detailed)
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when the plan has changes, 0 when it has none")
	return cmd
}

func (c *cli) plan(ctx context.Context, sp *spec.Spec, opts stack.Options, asJSON, detailed bool) error {
	pv, err := stack.Plan(ctx, sp, opts)
	if err != nil {
		return err
	}
	if asJSON {
		if err := c.printJSON(jsonview.NewPlan(pv)); err != nil {
			return err
		}
	} else {
		pv.Render(c.red.Writer(c.stdout))
	}
	if err := pv.Err(); err != nil {
		// What the apply would be refused with, and its exit code: 3 for
		// the ladder, 1 for a conflict.
		c.exit = stack.ExitCode(nil, err)
		return nil
	}
	if detailed && pv.HasChanges() {
		c.exit = stack.ExitChanges
	}
	return nil
}
