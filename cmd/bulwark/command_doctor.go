package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [SPEC]",
		Short: "Check plugins, state, journal, lock and interventions; exit 1 when something needs attention",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var sp *spec.Spec
			if len(args) == 1 {
				var err error
				if sp, err = c.peekSpec(args[0], ""); err != nil {
					return err
				}
			}
			opts, done, err := c.options(sp)
			if err != nil {
				return err
			}
			defer done()
			checks := stack.Doctor(cmd.Context(), sp, opts)
			bad := 0
			for _, ch := range checks {
				if !ch.OK {
					bad++
				}
			}
			if asJSON {
				if err := c.printJSON(jsonview.NewDoctor(checks)); err != nil {
					return err
				}
			} else {
				for _, ch := range checks {
					mark := "ok  "
					if !ch.OK {
						mark = "FAIL"
					}
					fmt.Fprintf(c.stdout, "%s %-28s %s\n", mark, ch.Name, ch.Detail)
					if ch.Fix != "" {
						fmt.Fprintf(c.stdout, "     %-28s fix: %s\n", "", ch.Fix)
					}
				}
			}
			if bad > 0 {
				fmt.Fprintf(c.stderr, "bulwark: doctor found %d problem(s)\n", bad)
				c.exit = stack.ExitError
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
