package main

import (
	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/inspect"
)

func (c *cli) historyCmd() *cobra.Command {
	var view viewFlag
	cmd := &cobra.Command{
		Use:   "history SPEC",
		Short: "List the stack's operations and revisions, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := parseSpecArgs(args, view)
			sp, err := c.peekSpec(a.Spec, "")
			if err != nil {
				return err
			}
			rep, err := inspect.StackHistory(sp, c.stateOptions())
			if err != nil {
				return err
			}
			return newHistoryView(a.View, c.view()).History(rep)
		},
	}
	view.register(cmd, "print JSON: the operations and revisions")
	return cmd
}
