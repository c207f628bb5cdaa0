package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) teardownCmd() *cobra.Command {
	var yes, dryRun, asJSON bool
	var targets []string
	var par concurrency
	cmd := &cobra.Command{
		Use:   "teardown SPEC",
		Short: "Delete everything the stack's state records; refused whole if any of it is protected",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
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
			if dryRun {
				if asJSON {
					return errors.New("teardown --dry-run --json: not offered (--dry-run lists what would be deleted as text; plan --json and status --json are the documents)")
				}
				pl, err := stack.TeardownPlan(sp, opts)
				if pl != nil {
					for _, ch := range pl.Changes {
						fmt.Fprintf(c.stdout, "  - %-16s %s (%s)\n", ch.Resource, ch.Type, ch.Protection)
					}
				}
				c.partialWarning(targets)
				return err
			}
			var ok approval
			switch {
			case asJSON && !yes:
				// As Terraform's destroy -json needs -auto-approve: stdout
				// carries JSON alone, so nothing can ask.
				return errors.New("teardown --json needs --yes (stdout carries only JSON: nothing asks before deleting)")
			case asJSON:
				c.streamEvents(&opts)
			case !yes && !c.terminal(c.stdin):
				// Asked only when there is something to delete: an empty
				// teardown needs no approval.
				opts.Confirm = func(names []string) bool {
					fmt.Fprintf(c.stdout, "This would delete %d resource(s) of stack %s: %s\n", len(names), sp.Stack, strings.Join(names, ", "))
					ok.refused = &approvalError{op: "teardown"}
					return false
				}
			case !yes:
				opts.Confirm = func(names []string) bool {
					// An interrupt while the question waits ends the
					// command: nothing has started.
					c.graceful.Store(false)
					defer c.graceful.Store(true)
					fmt.Fprintf(c.stdout, "This deletes %d resource(s) of stack %s: %s\nType yes to go on: ", len(names), sp.Stack, strings.Join(names, ", "))
					var answer string
					fmt.Fscanln(c.stdin, &answer)
					return answer == "yes"
				}
			}
			opts.Stop = c.mutating(args[0])
			res, err := stack.Teardown(cmd.Context(), sp, opts)
			if err != nil {
				return ok.explain(err)
			}
			return c.report(res, args[0])
		},
	}
	par.flags(cmd)
	targetFlag(cmd, &targets, "delete only `ADDRESS` and what depends on it (deleted first); NAME, NAME[KEY], CALL.NAME or CALL; repeatable. A protected one is still refused")
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask (needed when not on a terminal, and with --json)")
	cmd.Flags().BoolVar(&yes, "auto-approve", false, "the same as --yes")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "stream the lifecycle events to stdout, one JSON object a line, as apply --json (docs/json.md); needs --yes")
	c.lockTimeoutFlag(cmd)
	return cmd
}
