package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
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
			rep, err := stack.Status(sp, stack.Options{StateDir: c.stateDir})
			if err != nil {
				return err
			}
			if asJSON {
				c.journalProblems(rep.JournalProblems)
				return c.printJSON(jsonview.NewStatus(rep))
			}
			fmt.Fprintf(c.stdout, "stack %s: %d resource(s), revision %d\n", rep.Stack, len(rep.Resources), rep.Revision)
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			for _, r := range rep.Resources {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.Name, r.Type, r.Provider, r.Protection, r.ID)
			}
			tw.Flush()
			if rep.LastOp != nil {
				fmt.Fprintf(c.stdout, "last operation: %s %s %s\n", rep.LastOp.ID, rep.LastOp.Type, rep.LastOp.Status)
			}
			for _, u := range rep.Unfinished {
				fmt.Fprintf(c.stdout, "unfinished: %s (run `bulwark resume %s`)\n", u, args[0])
			}
			for _, i := range rep.Interventions {
				fmt.Fprintf(c.stdout, "NEEDS INTERVENTION: %s %s: %s (clear with `bulwark ack %s`)\n", i.Op, i.Resource, i.Error, i.Op)
			}
			c.journalProblems(rep.JournalProblems)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// journalProblems prints each bad journal line status found, with its
// repair, and makes status exit 1: the report is whole, the journal is not.
func (c *cli) journalProblems(problems []string) {
	for _, p := range problems {
		fmt.Fprintf(c.stderr, "bulwark: %s\n", p)
	}
	if len(problems) > 0 {
		c.exit = stack.ExitError
	}
}
