package main

import (
	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) historyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history SPEC",
		Short: "List the stack's operations and revisions, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := c.peekSpec(args[0], "")
			if err != nil {
				return err
			}
			rep, err := stack.StackHistory(sp, c.stateOptions())
			if err != nil {
				return err
			}
			return newHistoryView(viewTypeOf(asJSON), c.view()).History(rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
