package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (c *cli) graphCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "graph SPEC",
		Short: "Print the dependency graph as DOT",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := c.loadSpec(args[0], "")
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "digraph %q {\n  rankdir=LR;\n", sp.Stack)
			for _, r := range sp.Resources {
				fmt.Fprintf(c.stdout, "  %q [label=\"%s\\n%s (%s)\"];\n", r.Name, r.Name, r.Type, r.Protection)
			}
			g := sp.Graph()
			for _, n := range g.Nodes() {
				for _, d := range g.DependsOn(n) {
					fmt.Fprintf(c.stdout, "  %q -> %q;\n", n, d)
				}
			}
			fmt.Fprintln(c.stdout, "}")
			return nil
		},
	}
}
