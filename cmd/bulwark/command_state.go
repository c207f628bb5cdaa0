package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) stateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect and change what the stack's state records, without touching any resource",
	}
	var listView, showView viewFlag
	list := &cobra.Command{
		Use:   "list SPEC",
		Short: "List the resources the state records",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := parseSpecArgs(args, listView)
			sp, err := c.peekSpec(a.Spec, "")
			if err != nil {
				return err
			}
			rs, err := inspect.StateList(sp, c.stateOptions())
			if err != nil {
				return err
			}
			return newStateView(a.View, c.view()).List(sp.Stack, rs)
		},
	}
	listView.register(list, "print JSON: every record, sensitive values masked")
	show := &cobra.Command{
		Use:   "show SPEC ADDRESS",
		Short: "Show what the state records of one resource",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := parseAddressArgs(args, showView)
			sp, err := c.peekSpec(a.Spec, "")
			if err != nil {
				return err
			}
			r, err := inspect.StateShow(sp, c.stateOptions(), a.Address)
			if err != nil {
				return err
			}
			return newStateView(a.View, c.view()).Show(sp.Stack, r)
		},
	}
	showView.register(show, "print JSON: the record, sensitive values masked")
	forget := &cobra.Command{
		Use:   "forget SPEC ADDRESS",
		Short: "Stop managing a resource without deleting it (any protection level: nothing is deleted) and release the stack's claim on it",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			res, err := stack.StateForget(cmd.Context(), sp, opts, args[1])
			if err != nil {
				return err
			}
			return c.stateReport(res, fmt.Sprintf("forgot %s: stack %s no longer manages it; nothing was deleted", args[1], sp.Stack))
		},
	}
	mv := &cobra.Command{
		Use:   "mv SPEC OLD NEW",
		Short: "Rename a resource in the state, so a rename in the spec is not a delete and a create",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			res, err := stack.StateMove(cmd.Context(), sp, opts, args[1], args[2])
			if err != nil {
				return err
			}
			return c.stateReport(res, fmt.Sprintf("moved %s to %s in stack %s", args[1], args[2], sp.Stack))
		},
	}
	c.lockTimeoutFlag(forget)
	c.lockTimeoutFlag(mv)
	cmd.AddCommand(list, show, forget, mv, c.stateMigrateCmd())
	return cmd
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
