package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) importCmd() *cobra.Command {
	var from string
	var par concurrency
	cmd := &cobra.Command{
		Use:   "import SPEC ADDRESS ID",
		Short: "Take over an existing resource: read it by id and record it as this stack's (imported: no rollback deletes it)",
		Long: "Take over an existing resource: read it by id, stamp this stack's claim on it through its provider, and record it\n" +
			"as this stack's (imported: no rollback deletes it). A resource another stack holds (made or imported there) is\n" +
			"refused: `bulwark state forget` it in that stack first, which releases the claim, then import it with --from STACK.",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			if err := par.set(&opts); err != nil {
				return err
			}
			opts.ImportFrom = from
			res, err := stack.Import(cmd.Context(), sp, opts, args[1], args[2])
			if err != nil {
				return err
			}
			return c.stateReport(res, fmt.Sprintf("imported %s as %s in stack %s", args[2], args[1], sp.Stack))
		},
	}
	par.flags(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the `STACK` a resource is taken from: only one whose claim that stack released (state forget)")
	c.lockTimeoutFlag(cmd)
	return cmd
}

// stateReport prints how a state command ended and returns its exit code.
func (c *cli) stateReport(res *stack.Result, ok string) error {
	if res.Outcome != engine.Succeeded {
		c.view().problem("%v", res.Err)
		return withExit(stack.ExitCode(res, nil))
	}
	fmt.Fprintf(c.stdout, "%s (%s)\n", ok, res.Op)
	return nil
}
