package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// outputCmd prints the outputs the state records, starting no provider. A
// sensitive output shows as (sensitive), unless it is asked for by name:
// then its value is printed alone (as Terraform's `output NAME` does), a
// string raw so a script can use it, anything else as JSON.
func (c *cli) outputCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "output SPEC [NAME]",
		Short: "Print the stack's outputs, as its last successful apply recorded them; starts no provider",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := c.peekSpec(args[0], "")
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			opts := c.stateOptions()
			opts.Secrets, opts.Redactor = c.secretsSource(), c.red
			outs, err := inspect.Outputs(sp, opts, name)
			if err != nil {
				return err
			}
			switch {
			case name != "" && asJSON:
				// Asked for by name: the value in clear, not redacted.
				return jsonview.Write(c.stdout, jsonview.NewOutput(outs[0]))
			case name != "":
				return printValue(c.stdout, outs[0].Value)
			case asJSON:
				return c.printJSON(jsonview.NewOutputs(sp.Stack, outs))
			}
			renderOutputsIndent(c.stdout, outs, "")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: every output's value, sensitive and description (a sensitive value as \"(sensitive)\"), or NAME's alone, in clear")
	return cmd
}

// printValue prints one output's value on its own line: a string as it is,
// anything else as JSON.
func printValue(w io.Writer, v any) error {
	if s, ok := v.(string); ok {
		_, err := fmt.Fprintln(w, s)
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// renderOutputs prints outputs one a line, `name = value` (values as JSON,
// a sensitive one as (sensitive)), as apply ends with and `bulwark output`
// prints them.
func renderOutputs(w io.Writer, outs []stack.OutputValue) {
	renderOutputsIndent(w, outs, "  ")
}

func renderOutputsIndent(w io.Writer, outs []stack.OutputValue, indent string) {
	for _, o := range outs {
		v := "(sensitive)"
		if !o.Sensitive {
			b, err := json.Marshal(o.Value)
			if err != nil {
				v = fmt.Sprint(o.Value)
			} else {
				v = string(b)
			}
		}
		// JSON leaves DEL and the C1 controls as they are: a listing
		// prints them inert (`output NAME` gives a string as it is).
		fmt.Fprintf(w, "%s%s = %s\n", indent, o.Name, printable.Line(v))
	}
}

// variablesLine shows variable values on one line, sorted by name: NAME=JSON
// (a masked sensitive one as (sensitive)).
func variablesLine(vars map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		v := vars[k]
		if s, ok := v.(string); ok && s == secrets.Mask {
			parts = append(parts, k+"="+s)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		parts = append(parts, k+"="+printable.Line(string(b)))
	}
	return strings.Join(parts, " ")
}
