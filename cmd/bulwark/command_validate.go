package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) validateCmd() *cobra.Command {
	var provider string
	cmd := &cobra.Command{
		Use:   "validate SPEC",
		Short: "Check a spec: its structure, then against the providers' schemas",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			if err := stack.Validate(cmd.Context(), sp, opts); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s: valid (stack %s, %d resources)\n", args[0], sp.Stack, len(sp.Resources))
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none")
	return cmd
}
