package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) planCmd() *cobra.Command {
	var provider, out string
	var replace, targets []string
	var asJSON, detailed, refreshOnly bool
	var par concurrency
	cmd := &cobra.Command{
		Use:   "plan SPEC",
		Short: "The dry run: every step's Check, no Execute, and a diff per resource; takes no lock",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			if err := par.set(&opts); err != nil {
				return err
			}
			if err := checkReplace(sp, replace); err != nil {
				return err
			}
			opts.Replace = replace
			if err := stack.CheckTargets(targets); err != nil {
				return err
			}
			opts.Targets = targets
			if refreshOnly {
				if out != "" || len(replace) > 0 {
					return errors.New("plan --refresh-only: --out and --replace do not apply (a refresh-only plan changes no resource; apply --refresh-only makes it again and records it)")
				}
				return c.planRefresh(cmd.Context(), sp, opts, asJSON, detailed)
			}
			if out != "" {
				return c.savePlan(cmd.Context(), sp, opts, out, asJSON, detailed)
			}
			return c.plan(cmd.Context(), sp, opts, asJSON, detailed)
		},
	}
	par.flags(cmd)
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().BoolVar(&c.showUnchanged, "show-unchanged", false, "list every resource, not only those that change (the unchanged are counted either way)")
	replaceFlag(cmd, &replace)
	targetFlag(cmd, &targets, "plan only `ADDRESS` and what it depends on (NAME, NAME[KEY], CALL.NAME, or CALL for a module call's resources); repeatable; a plan saved with --out keeps them")
	refreshFlag(cmd, &refreshOnly, "plan only what the state would record of reality: read every recorded resource, show drift and what is gone, change nothing")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when the plan has changes, 0 when it has none")
	cmd.Flags().StringVar(&out, "out", "", "save the plan to `FILE` (mode 0600, secrets sealed), for bulwark apply FILE to carry out exactly")
	return cmd
}

func (c *cli) plan(ctx context.Context, sp *spec.Spec, opts stack.Options, asJSON, detailed bool) error {
	if asJSON {
		opts.Reporter = c.progressView(false) // stdout carries the JSON alone
	}
	pv, err := stack.Plan(ctx, sp, opts)
	if err != nil {
		return err
	}
	return c.renderPlan(pv, asJSON, detailed)
}

// renderPlan prints a plan (text or --json: plan, apply --dry-run and show
// FILE print through it) and returns plan's exit code: the refusal's, or 2
// for changes with --detailed-exitcode.
func (c *cli) renderPlan(pv *stack.Preview, asJSON, detailed bool) error {
	return newPlanView(viewTypeOf(asJSON), c.view()).Plan(pv, detailed)
}
