package main

import (
	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/spec"
)

func (c *cli) doctorCmd() *cobra.Command {
	var view viewFlag
	cmd := &cobra.Command{
		Use:   "doctor [SPEC]",
		Short: "Check plugins, state, journal, lock and interventions; exit 1 when something needs attention",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := parseDoctorArgs(args, view)
			var sp *spec.Spec
			if a.Spec != "" {
				var err error
				if sp, err = c.peekSpec(a.Spec, ""); err != nil {
					return err
				}
			}
			opts, done, err := c.options(sp)
			if err != nil {
				return err
			}
			defer done()
			checks := inspect.Doctor(cmd.Context(), sp, opts)
			return newDoctorView(a.View, c.view()).Doctor(checks)
		},
	}
	view.register(cmd, "print JSON: every check, with its fix")
	return cmd
}
