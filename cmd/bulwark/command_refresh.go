package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// refreshFlag is --refresh-only, of plan and apply.
func refreshFlag(cmd *cobra.Command, on *bool, what string) {
	cmd.Flags().BoolVar(on, "refresh-only", false, what)
}

// planRefresh is plan --refresh-only: what a refresh-only apply would
// record, as text or --json. With --detailed-exitcode, 2 when it would
// change a record.
func (c *cli) planRefresh(ctx context.Context, sp *spec.Spec, opts stack.Options, asJSON, detailed bool) error {
	if asJSON {
		opts.Reporter = c.progressView(false)
	}
	pv, err := stack.RefreshPlan(ctx, sp, opts)
	if err != nil {
		return err
	}
	if asJSON {
		if err := c.printJSON(jsonview.NewRefreshPlan(pv)); err != nil {
			return err
		}
	} else {
		renderRefresh(c.red.Writer(c.stdout), pv)
		c.partialWarning(pv.Targets)
	}
	if detailed && pv.HasChanges() {
		return withExit(stack.ExitChanges)
	}
	return nil
}

// applyRefresh is apply --refresh-only: the refresh plan is shown, then
// asked about on a terminal unless --yes; without a terminal it needs
// --yes (it changes the state).
func (c *cli) applyRefresh(ctx context.Context, sp *spec.Spec, opts stack.Options, asJSON, yes bool) error {
	switch {
	case !yes && !c.terminal(c.stdin):
		return errors.New("apply --refresh-only changes the state: pass --yes (or --auto-approve) to confirm when not on a terminal")
	case asJSON && !yes:
		return errors.New("apply --refresh-only --json needs --yes (stdout carries only JSON: nothing asks)")
	case asJSON:
		c.streamEvents(&opts)
	default:
		opts.ReviewRefresh = func(pv *stack.RefreshPreview) bool {
			w := c.red.Writer(c.stdout)
			renderRefresh(w, pv)
			fmt.Fprintln(w)
			if yes || !pv.HasChanges() {
				return true
			}
			return c.approve(ctx, w, fmt.Sprintf("Do you want to record what reality holds in stack %s's state, as planned above?", pv.Stack))
		}
	}
	res, err := stack.Refresh(ctx, sp, opts)
	if err != nil {
		return err
	}
	return c.report(res, sp.File)
}

// approve asks question on the terminal and reports whether the answer
// was yes; an interrupt while it waits is a no.
func (c *cli) approve(ctx context.Context, w io.Writer, question string) bool {
	c.graceful.Store(false)
	defer c.graceful.Store(true)
	fmt.Fprintf(w, "%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", question)
	got := make(chan string, 1)
	go func() {
		a, err := readLine(c.stdin)
		if err != nil {
			a = ""
		}
		got <- a
	}()
	select {
	case a := <-got:
		fmt.Fprintln(w)
		return a == "yes"
	case <-ctx.Done():
		fmt.Fprintln(w)
		return false
	}
}

// renderRefresh prints a refresh-only plan: one line per record it would
// change or keep though gone, then the counts.
func renderRefresh(w io.Writer, pv *stack.RefreshPreview) {
	fmt.Fprintf(w, "Refresh only: the state records what reality holds; nothing in reality is changed.\n\n")
	counts := map[string]int{}
	for _, r := range pv.Resources {
		counts[r.Action]++
		switch r.Action {
		case stack.RefreshUpdate:
			fmt.Fprintf(w, "~   refresh    %s (%s, %s): changed outside bulwark\n", r.Address, r.Type, r.Protection)
			for _, k := range r.Drifted {
				if slices.Contains(r.Sensitive, k) {
					fmt.Fprintf(w, "      %s = (sensitive)\n", k)
					continue
				}
				fmt.Fprintf(w, "      %s: %s -> %s\n", k, shown(r.Before, k), shown(r.After, k))
			}
		case stack.RefreshDrop:
			fmt.Fprintf(w, "-   drop       %s (%s, %s, id %s): %s\n", r.Address, r.Type, r.Protection, r.ID, r.Reason)
		case stack.RefreshVanished:
			fmt.Fprintf(w, "!   vanished   %s (%s, %s, id %s): %s\n", r.Address, r.Type, r.Protection, r.ID, r.Reason)
		case stack.RefreshConflict:
			fmt.Fprintf(w, "x   conflict   %s (%s, %s, id %s): %s\n", r.Address, r.Type, r.Protection, r.ID, r.Reason)
		}
	}
	if !pv.HasChanges() {
		fmt.Fprintf(w, "No changes: the state already records what reality holds (%d resource(s) read).\n", len(pv.Resources))
		return
	}
	fmt.Fprintf(w, "\nRefresh: %d record(s) to update, %d to drop, %d kept though gone, %d unchanged.\n",
		counts[stack.RefreshUpdate], counts[stack.RefreshDrop], counts[stack.RefreshVanished]+counts[stack.RefreshConflict], counts[stack.RefreshNoOp])
}

// shown is a value of a refresh's diff, "(none)" when absent.
func shown(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok || v == nil {
		return "(none)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
