package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) validateCmd() *cobra.Command {
	var provider string
	var view viewFlag
	cmd := &cobra.Command{
		Use:   "validate SPEC",
		Short: "Check a spec: its structure, then against the providers' schemas",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := parseSpecArgs(args, view)
			sp, notes, err := c.validate(cmd.Context(), a.Spec, provider)
			return newValidateView(a.View, c.view()).Validate(a.Spec, sp, notes, err)
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none")
	view.register(cmd, "print the result as JSON: every problem a diagnostic with its file, line, column and attribute path")
	return cmd
}

// validate loads the spec and checks it against the providers' schemas:
// the spec (nil when it did not parse), notes on what could not be checked
// (a variable with no value is an unknown value here: loadUnknown) and
// what stopped it, if anything.
func (c *cli) validate(ctx context.Context, path, provider string) (*spec.Spec, spec.Problems, error) {
	sp, notes, err := c.loadUnknown(path, provider)
	if err != nil {
		return nil, nil, err
	}
	opts, done, err := c.options(sp)
	if err != nil {
		return sp, notes, err
	}
	defer done()
	return sp, notes, stack.Validate(ctx, sp, opts)
}
