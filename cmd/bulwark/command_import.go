package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) importCmd() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "import SPEC ADDRESS ID",
		Short: "Take over an existing resource: read it by id and record it as this stack's (imported: no rollback deletes it)",
		Long: "Take over an existing resource: read it by id and record it as this stack's (imported: no rollback deletes it).\n" +
			"A resource another bulwark stack made is refused unless --from names that stack (forget it there first).",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			opts.ImportFrom = from
			res, err := stack.Import(cmd.Context(), sp, opts, args[1], args[2])
			if err != nil {
				return err
			}
			return c.stateReport(res, fmt.Sprintf("imported %s as %s in stack %s", args[2], args[1], sp.Stack))
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the `STACK` a resource carrying another stack's key is taken from (it must have forgotten it)")
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
