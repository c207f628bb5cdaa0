package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) applyCmd() *cobra.Command {
	var provider, simulate string
	var replace, targets []string
	var par concurrency
	var dryRun, asJSON, yes, refreshOnly bool
	cmd := &cobra.Command{
		Use:   "apply SPEC|PLANFILE",
		Short: "Converge the stack to the spec, or carry out a saved plan; a failure rolls back under the protection ladder",
		Long: "Converge the stack to the spec; a failure rolls back under the protection ladder.\n" +
			"On a terminal the plan is shown first and only 'yes' goes on (--yes does not ask).\n" +
			"Given a plan saved by bulwark plan --out (told by its content, not its name), apply carries out\n" +
			"exactly that plan, without asking, and refuses (exit 1) when anything it was made from changed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isPlanFile(args[0]) {
				if err := savedPlanFlags(cmd, args[0]); err != nil {
					return err
				}
				return c.applyPlanFile(cmd.Context(), args[0], par, asJSON)
			}
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			if err := par.set(&opts); err != nil {
				return err
			}
			if err := stack.CheckTargets(targets); err != nil {
				return err
			}
			opts.Targets = targets
			if refreshOnly {
				if simulate != "" || len(replace) > 0 {
					return errors.New("apply --refresh-only: --replace and --simulate-failure do not apply (it changes no resource, only what the state records)")
				}
				if dryRun {
					return c.planRefresh(cmd.Context(), sp, opts, asJSON, false)
				}
				opts.Stop = c.mutating(args[0])
				return c.applyRefresh(cmd.Context(), sp, opts, asJSON, yes)
			}
			if dryRun {
				if err := checkReplace(sp, replace); err != nil {
					return err
				}
				opts.Replace = replace
				return c.plan(cmd.Context(), sp, opts, asJSON, false)
			}
			if asJSON {
				c.streamEvents(&opts)
			}
			if simulate != "" {
				if _, ok := sp.Resource(simulate); !ok {
					return fmt.Errorf("--simulate-failure %s: no such resource in %s", simulate, args[0])
				}
			}
			if err := checkReplace(sp, replace); err != nil {
				return err
			}
			opts.SimulateFailure, opts.Replace = simulate, replace
			opts.Stop = c.mutating(args[0])
			if asJSON && !yes && c.terminal(c.stdin) {
				// As Terraform's -json needs -auto-approve: stdout carries
				// JSON alone, so there is no plan to show and no question.
				return errors.New("apply --json on a terminal needs --yes (stdout carries only JSON: no plan is shown and nothing asks), or apply a plan saved with plan --out")
			}
			// With --json nothing asks either: without --yes a run with
			// changes is refused, as without a terminal.
			var ok approval
			opts.Review = c.review(cmd.Context(), "apply", yes, !asJSON, &ok)
			res, err := stack.Apply(cmd.Context(), sp, opts)
			if err != nil {
				return ok.explain(err)
			}
			return c.report(res, args[0])
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none (a provider the spec does not declare runs with its default config)")
	cmd.Flags().StringVar(&simulate, "simulate-failure", "", "make the Execute of `RESOURCE` fail in this run (demos and tests)")
	replaceFlag(cmd, &replace)
	targetFlag(cmd, &targets, "apply only `ADDRESS` and what it depends on (NAME, NAME[KEY], CALL.NAME, or CALL for a module call's resources); repeatable. The run is partial: use it for exceptional situations")
	refreshFlag(cmd, &refreshOnly, "record in the state what reality holds (drift, what is gone) without changing anything in reality; the plan is shown first")
	par.flags(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "run every Check and no Execute: the same as bulwark plan")
	cmd.Flags().BoolVar(&asJSON, "json", false, "stream the lifecycle events to stdout, one JSON object a line, operation start and end included, and nothing else (with --dry-run: the plan as JSON)")
	yesFlags(cmd, &yes)
	c.lockTimeoutFlag(cmd)
	return cmd
}

// replaceFlag is --replace ADDRESS (repeatable), of apply and plan.
func replaceFlag(cmd *cobra.Command, replace *[]string) {
	cmd.Flags().StringArrayVar(replace, "replace", nil, "replace `ADDRESS` even with no change, and consent to replacing it when it is durable (its data will be deleted); repeatable")
}

// targetFlag is --target ADDRESS (repeatable), of plan, apply and teardown.
func targetFlag(cmd *cobra.Command, targets *[]string, usage string) {
	cmd.Flags().StringArrayVar(targets, "target", nil, usage)
}

// checkReplace refuses a --replace that names no resource of the spec.
func checkReplace(sp *spec.Spec, replace []string) error {
	for _, a := range replace {
		if _, ok := sp.Resource(a); !ok {
			return fmt.Errorf("--replace %s: no such resource in %s", a, sp.File)
		}
	}
	return nil
}
