package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) resumeCmd() *cobra.Command {
	var asJSON, yes bool
	var par concurrency
	var notCreated []string
	cmd := &cobra.Command{
		Use:   "resume SPEC",
		Short: "Finish an operation that a crash, a kill or a failed compensation left unfinished",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.loadResume(args[0])
			if err != nil {
				return err
			}
			defer done()
			if err := par.set(&opts); err != nil {
				return err
			}
			if asJSON {
				// Nothing asks (see below).
				c.streamEvents(&opts)
			}
			// resume never asks, on a terminal or without one, and needs
			// no --yes: it continues an operation that was approved when
			// it began (or needed no approval), as the journal records
			// it. --yes is accepted so that a script may pass it to every
			// mutating command alike.
			_ = yes
			opts.Stop = c.mutating(args[0])
			opts.NotCreated = notCreated
			// A migration left unfinished (at either of its places) is
			// finished by the migration itself, not by the step engine.
			out := c.stdout
			if asJSON {
				out = c.stderr // stdout carries JSON alone
			}
			if ok, err := c.resumeMigration(cmd.Context(), out, sp.Stack); ok {
				return err
			}
			res, err := stack.Resume(cmd.Context(), sp, opts)
			if errors.Is(err, stack.ErrNothingToResume) {
				out := c.stdout
				if asJSON {
					out = c.stderr // stdout carries JSON alone: no line, exit 0
				}
				fmt.Fprintln(out, err)
				return nil
			}
			if err != nil {
				return err
			}
			return c.report(res, args[0])
		},
	}
	par.flags(cmd)
	cmd.Flags().BoolVar(&yes, "yes", false, "accepted and ignored: resume never asks (it continues an operation that was approved when it began)")
	cmd.Flags().BoolVar(&yes, "auto-approve", false, "the same as --yes")
	cmd.Flags().BoolVar(&asJSON, "json", false, "stream the lifecycle events to stdout, one JSON object a line, as apply --json (docs/json.md)")
	cmd.Flags().StringArrayVar(&notCreated, "not-created", nil, "say that the interrupted create of resource `NAME`, whose outcome is unknown (exit 12), made nothing: you looked and found none; it is created again (repeatable)")
	c.lockTimeoutFlag(cmd)
	return cmd
}
