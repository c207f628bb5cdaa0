package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) validateCmd() *cobra.Command {
	var provider string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate SPEC",
		Short: "Check a spec: its structure, then against the providers' schemas",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return c.validateJSON(cmd, args[0], provider)
			}
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON: every problem a diagnostic with its file, line, column and attribute path")
	return cmd
}

// validateJSON prints validate's document: whatever stops the validation
// (the spec does not parse, the providers do not start, the schemas refuse
// it) is a diagnostic in it, not a line on stderr, and the exit code is 1.
func (c *cli) validateJSON(cmd *cobra.Command, path, provider string) error {
	var sp *spec.Spec
	err := func() error {
		var err error
		sp, err = c.loadSpec(path, provider)
		if err != nil {
			return err
		}
		opts, done, err := c.options(sp)
		if err != nil {
			return err
		}
		defer done()
		return stack.Validate(cmd.Context(), sp, opts)
	}()
	if perr := c.printJSON(jsonview.NewValidate(sp, err, c.red.Redact)); perr != nil {
		return perr
	}
	if err != nil {
		return withExit(stack.ExitCode(nil, err))
	}
	return nil
}
