package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
)

func (c *cli) ackCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ack OP_ID",
		Short: "Acknowledge a failure that needed a person, so operations may run again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.stateURL != "" {
				return c.ackRemote(cmd.Context(), args[0])
			}
			name, err := stack.AckWith(c.stateDir, args[0], nil, c.lockWaiter)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "acknowledged %s in stack %s\n", args[0], name)
			return nil
		},
	}
	c.lockTimeoutFlag(cmd)
	return cmd
}

// ackRemote is ack on a backend off this machine: it looks through the
// stacks the backend lists.
func (c *cli) ackRemote(ctx context.Context, opID string) error {
	names, err := c.backends.Stacks(ctx, c.stateURL)
	if err != nil {
		return err
	}
	for _, name := range names {
		be, err := c.backends.Open(ctx, c.stateURL, storage.Options{Stack: name})
		if err != nil {
			return err
		}
		found, err := stack.AckOn(ctx, c.lockWaiter(be), opID, nil)
		be.Close()
		if err != nil {
			return err
		}
		if found {
			fmt.Fprintf(c.stdout, "acknowledged %s in stack %s\n", opID, printable.Line(name)) // a stack the backend lists
			return nil
		}
	}
	return stack.ErrNoSuchIntervention
}
