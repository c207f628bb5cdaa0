package main

import (
	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) rollbackCmd() *cobra.Command {
	var to int
	var yes, asJSON bool
	var par concurrency
	cmd := &cobra.Command{
		Use:   "rollback SPEC",
		Short: "Converge the stack back to an earlier applied revision (default: the newest before the current one with another spec)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			if err := par.set(&opts); err != nil {
				return err
			}
			opts.Stop = c.mutating(args[0])
			if asJSON {
				if err := c.streamOperation(&opts, "rollback", yes); err != nil {
					return err
				}
			}
			var ok approval
			opts.Review = c.review(cmd.Context(), "roll back", yes, !asJSON, &ok)
			res, err := stack.Rollback(cmd.Context(), sp, opts, to)
			if err != nil {
				return ok.explain(err)
			}
			return c.report(res, args[0])
		},
	}
	par.flags(cmd)
	cmd.Flags().IntVar(&to, "to", 0, "the `REVISION` to go back to (bulwark history lists them)")
	yesFlags(cmd, &yes)
	cmd.Flags().BoolVar(&asJSON, "json", false, "stream the lifecycle events to stdout, one JSON object a line, as apply --json (docs/json.md)")
	c.lockTimeoutFlag(cmd)
	return cmd
}
