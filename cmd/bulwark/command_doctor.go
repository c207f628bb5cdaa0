package main

import (
	"github.com/spf13/cobra"

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
			return newDoctorView(viewTypeOf(asJSON), c.view()).Doctor(checks)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
