package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) ackCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ack OP_ID",
		Short: "Acknowledge a failure that needed a person, so operations may run again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.stateURL != "" {
				// Ack finds the stack by looking through the state
				// folder's stacks; a remote backend has no such listing yet.
				return fmt.Errorf("ack with --state %s: not supported yet for a backend off this machine (ack looks through the stacks of --state-dir); run it against a file copy, or see bulwark status SPEC", backends.Redact(c.stateURL))
			}
			name, err := stack.Ack(c.stateDir, args[0], nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "acknowledged %s in stack %s\n", args[0], name)
			return nil
		},
	}
}
