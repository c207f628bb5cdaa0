package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) resumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume SPEC",
		Short: "Finish an operation that a crash, a kill or a failed compensation left unfinished",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.loadResume(args[0])
			if err != nil {
				return err
			}
			defer done()
			opts.Stop = c.mutating(args[0])
			res, err := stack.Resume(cmd.Context(), sp, opts)
			if errors.Is(err, stack.ErrNothingToResume) {
				fmt.Fprintln(c.stdout, err)
				return nil
			}
			if err != nil {
				return err
			}
			return c.report(res, args[0])
		},
	}
}
