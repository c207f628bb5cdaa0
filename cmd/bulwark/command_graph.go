package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/graphsvg"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func (c *cli) graphCmd() *cobra.Command {
	var format, collapseFlag, planPath string
	var expand []string
	cmd := &cobra.Command{
		Use:   "graph SPEC",
		Short: "Print the dependency graph as DOT (data entries as data.NAME), or as SVG with --format svg",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "dot" && format != "svg" {
				return fmt.Errorf("--format %q: want dot or svg", format)
			}
			collapse, err := graphsvg.ParseCollapse(collapseFlag)
			if err != nil {
				return fmt.Errorf("--collapse: %w", err)
			}
			// No variable needs a value to draw the graph (loadUnknown).
			sp, notes, err := c.loadUnknown(args[0], "")
			if err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintln(c.stderr, c.red.Redact("warning: "+n.Error()))
			}
			// --plan: each node's action from a saved plan of this stack
			// (read as show reads it: no key, no provider).
			var actions map[string]string
			missing := map[string]graphsvg.Node{}
			if planPath != "" {
				f, err := stack.ReadPlan(planPath)
				if err != nil {
					return fmt.Errorf("--plan: %w", err)
				}
				if f.Stack != sp.Stack {
					return fmt.Errorf("--plan %s is a plan of stack %s, not of %s (%s)", planPath, f.Stack, sp.Stack, args[0])
				}
				actions = map[string]string{}
				for _, r := range f.Resources {
					actions[r.Address] = r.Action
					lvl, _ := protection.Parse(r.Protection)
					missing[r.Address] = graphsvg.Node{Type: r.Type, Protection: lvl}
				}
			}
			// One graph for both formats: the nodes and edges graphsvg
			// draws (resources, data entries, depends_on, references, data
			// reads).
			g := graphsvg.FromSpec(sp)
			if format == "svg" {
				if actions != nil {
					g.SetActions(actions, missing)
				}
				for _, e := range expand {
					if !slices.Contains(g.Groups(), e) {
						return fmt.Errorf("--expand %q: no such group; the groups are %s", e, strings.Join(g.Groups(), ", "))
					}
				}
				program, err := graphsvg.Program()
				if err != nil {
					return err
				}
				svg, err := graphsvg.SVGWith(cmd.Context(), program, g, graphsvg.Options{Collapse: collapse, Expand: expand})
				if err != nil {
					return err
				}
				_, err = c.stdout.Write(svg)
				return err
			}
			if len(expand) > 0 {
				return errors.New("--expand draws groups in the SVG: it needs --format svg")
			}
			fmt.Fprintf(c.stdout, "digraph %q {\n  rankdir=LR;\n", sp.Stack)
			for _, n := range g.Nodes {
				if n.Data {
					continue
				}
				if a, ok := actions[n.ID]; ok {
					fmt.Fprintf(c.stdout, "  %q [label=\"%s\\n%s (%s)\\n%s\", color=%q];\n", n.ID, n.ID, n.Type, n.Protection, graphsvg.ActionWord(a), graphsvg.ActionColor(a))
					delete(actions, n.ID)
					continue
				}
				fmt.Fprintf(c.stdout, "  %q [label=\"%s\\n%s (%s)\"];\n", n.ID, n.ID, n.Type, n.Protection)
			}
			// What the plan does to resources the spec no longer has
			// (their deletes).
			for _, name := range slices.Sorted(maps.Keys(actions)) {
				m := missing[name]
				// The name and type are the state's (a teammate's, or a
				// hand's in the backend): quoted for DOT and inert.
				fmt.Fprintf(c.stdout, "  %q [label=\"%s\\n%s (%s)\\n%s\", color=%q, style=dashed];\n", name, dotText(name), dotText(m.Type), m.Protection, graphsvg.ActionWord(actions[name]), graphsvg.ActionColor(actions[name]))
			}
			// Data entries are read at plan time, before any resource:
			// each is a node data.NAME, with an edge from what uses it.
			for _, n := range g.Nodes {
				if n.Data {
					fmt.Fprintf(c.stdout, "  %q [label=\"%s\\n%s (read)\", shape=note];\n", n.ID, n.ID, n.Type)
				}
			}
			for _, e := range g.Edges {
				fmt.Fprintf(c.stdout, "  %q -> %q;\n", e.From, e.To)
			}
			fmt.Fprintln(c.stdout, "}")
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "dot", "output format: dot, or svg (laid out by Graphviz's dot engine, built in)")
	cmd.Flags().StringVar(&planPath, "plan", "", "mark each node with its action in this saved plan (bulwark plan --out FILE): create, update, replace, delete, noop")
	cmd.Flags().StringArrayVar(&expand, "expand", nil, "svg: draw this group in full though --collapse collapses the others (repeatable): NAME[*] for a for_each, \"module NAME\" for a module call")
	cmd.Flags().StringVar(&collapseFlag, "collapse", "auto", "svg: draw each for_each group and module call as one node: auto (above "+fmt.Sprint(graphsvg.AutoCollapseAbove)+" nodes), all or none")
	return cmd
}

// dotText is text from the state inside a DOT label's quotes: its control
// characters written as escapes (printable.Line), then its backslashes and
// quotes escaped, so it can neither drive a terminal nor end the label.
func dotText(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(printable.Line(s))
}
