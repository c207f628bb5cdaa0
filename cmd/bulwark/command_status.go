package main

import (
	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status SPEC",
		Short: "Show the stack's recorded resources, pending interventions and last operation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := c.peekSpec(args[0], "")
			if err != nil {
				return err
			}
			rep, err := stack.Status(sp, c.stateOptions())
			if err != nil {
				return err
			}
			return newStatusView(viewTypeOf(asJSON), c.view()).Status(rep, args[0])
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
