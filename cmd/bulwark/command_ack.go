package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) ackCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ack OP_ID",
		Short: "Acknowledge a failure that needed a person, so operations may run again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := stack.Ack(c.stateDir, args[0], nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "acknowledged %s in stack %s\n", args[0], name)
			return nil
		},
	}
}
