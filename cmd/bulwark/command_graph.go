package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/graphsvg"
	"github.com/bulwark-iac/bulwark/core/resolve"
)

func (c *cli) graphCmd() *cobra.Command {
	var format, collapseFlag string
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
			if format == "svg" {
				svg, err := graphsvg.SVG(cmd.Context(), graphsvg.FromSpec(sp), collapse)
				if err != nil {
					return err
				}
				_, err = c.stdout.Write(svg)
				return err
			}
			fmt.Fprintf(c.stdout, "digraph %q {\n  rankdir=LR;\n", sp.Stack)
			for _, r := range sp.Resources {
				fmt.Fprintf(c.stdout, "  %q [label=\"%s\\n%s (%s)\"];\n", r.Name, r.Name, r.Type, r.Protection)
			}
			// Data entries are read at plan time, before any resource:
			// each is a node data.NAME, with an edge from what uses it.
			for _, d := range sp.Data {
				fmt.Fprintf(c.stdout, "  %q [label=\"data.%s\\n%s (read)\", shape=note];\n", "data."+d.Name, d.Name, d.Type)
			}
			for _, d := range sp.Data {
				for _, dep := range d.DependsOn {
					fmt.Fprintf(c.stdout, "  %q -> %q;\n", "data."+d.Name, "data."+dep)
				}
			}
			g := sp.Graph()
			for _, n := range g.Nodes() {
				for _, d := range g.DependsOn(n) {
					fmt.Fprintf(c.stdout, "  %q -> %q;\n", n, d)
				}
			}
			if len(sp.Data) > 0 {
				for _, r := range sp.Resources {
					for _, d := range resolve.DataRefs(r.Config) {
						fmt.Fprintf(c.stdout, "  %q -> %q;\n", r.Name, "data."+d)
					}
				}
			}
			fmt.Fprintln(c.stdout, "}")
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "dot", "output format: dot, or svg (laid out by Graphviz's dot engine, built in)")
	cmd.Flags().StringVar(&collapseFlag, "collapse", "auto", "svg: draw each for_each group and module call as one node: auto (above "+fmt.Sprint(graphsvg.AutoCollapseAbove)+" nodes), all or none")
	return cmd
}
