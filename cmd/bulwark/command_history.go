package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
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
			rep, err := stack.StackHistory(sp, stack.Options{StateDir: c.stateDir})
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(jsonview.NewHistory(rep))
			}
			fmt.Fprintln(c.stdout, "operations:")
			for _, o := range rep.Operations {
				fmt.Fprintf(c.stdout, "  %s  %-9s %-20s %s\n", o.ID, o.Type, o.Status, o.Start.Format("2006-01-02 15:04:05"))
			}
			fmt.Fprintln(c.stdout, "revisions:")
			for _, r := range rep.Revisions {
				mark := " "
				if r.Current {
					mark = "*"
				}
				fmt.Fprintf(c.stdout, "%s %3d  %-8s %s  %s  %s\n", mark, r.N, r.Status, r.Op, r.Time.Format("2006-01-02 15:04:05"), r.File)
				if len(r.Variables) > 0 {
					fmt.Fprintf(c.stdout, "       variables: %s\n", variablesLine(r.Variables))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
