package main

import (
	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/inspect"
)

func (c *cli) statusCmd() *cobra.Command {
	var view viewFlag
	cmd := &cobra.Command{
		Use:   "status SPEC",
		Short: "Show the stack's recorded resources, pending interventions and last operation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := parseSpecArgs(args, view)
			sp, err := c.peekSpec(a.Spec, "")
			if err != nil {
				return err
			}
			rep, err := inspect.Status(sp, c.stateOptions())
			if err != nil {
				return err
			}
			return newStatusView(a.View, c.view()).Status(rep, a.Spec)
		},
	}
	view.register(cmd, "print JSON: the resources, interventions, last operation, lock")
	return cmd
}
