package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/planview"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/printable"
)

func (c *cli) providersSchemaCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "schema [NAME]",
		Short: "Print each provider's resource types, attributes, config and capabilities",
		Long: `Print what each provider plugin found (or only the one named) describes of itself:
its resource types with their attributes (type, required, computed, sensitive,
force_new, description), the data sources it reads (a spec's data: entries),
its own config schema and its capabilities. The
plugins are started and asked for their schema only: none is configured, so no
spec is needed.`,
		Example: `  bulwark providers schema
  bulwark providers schema mock
  bulwark providers schema aws --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, done, err := c.options(nil)
			if err != nil {
				return err
			}
			defer done()
			var names []string
			if len(args) == 1 && strings.Contains(args[0], "/") {
				// A Terraform provider's source address.
				names = args
			} else if len(args) == 1 {
				if _, err := pluginhost.Find(opts.PluginDirs, args[0]); err != nil {
					return err
				}
				names = args
			} else {
				found, err := pluginhost.List(opts.PluginDirs)
				if err != nil {
					return err
				}
				if len(found) == 0 {
					return fmt.Errorf("no provider plugins found in %s", strings.Join(opts.PluginDirs, ", "))
				}
				for _, f := range found {
					names = append(names, f.Name)
				}
			}
			found, err := inspect.Schemas(cmd.Context(), &opts, names)
			if err != nil {
				return err
			}
			doc := &jsonview.ProvidersSchema{FormatVersion: jsonview.FormatVersion, Providers: make([]jsonview.SchemaProvider, 0, len(found))}
			for _, p := range found {
				if p.Err != nil {
					doc.Providers = append(doc.Providers, jsonview.SchemaProvider{Name: p.Name, Error: p.Err.Error(),
						Config: []jsonview.SchemaAttribute{}, ResourceTypes: []jsonview.SchemaType{}, DataSources: []jsonview.SchemaDataSource{}})
					continue
				}
				doc.Providers = append(doc.Providers, jsonview.NewSchemaProvider(p.Name, p.Protocol, p.Schema))
			}
			if asJSON {
				err = c.printJSON(doc)
			} else {
				err = renderSchemas(c.stdout, doc)
			}
			if err != nil {
				return err
			}
			for _, p := range doc.Providers {
				if p.Error != "" {
					return fmt.Errorf("%s", p.Error)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (format_version "+jsonview.FormatVersion+")")
	return cmd
}

// renderSchemas prints the schemas for a person.
func renderSchemas(w io.Writer, doc *jsonview.ProvidersSchema) error {
	for i, p := range doc.Providers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if p.Error != "" {
			fmt.Fprintf(w, "provider %s: does not start: %s\n", schemaText(p.Name), printable.Text(p.Error))
			continue
		}
		fmt.Fprintf(w, "provider %s %s (protocol %d)\n", schemaText(p.Name), schemaText(p.Version), p.Protocol)
		var caps []string
		for _, c := range []struct {
			on   bool
			name string
		}{
			{p.Capabilities.IdempotencyKeys, "idempotency_keys"},
			{p.Capabilities.Import, "import"},
			{p.Capabilities.ReadMany, "read_many"},
			{p.Capabilities.ValidateMany, "validate_many"},
			{p.Capabilities.CreateMany, "create_many"},
			{p.Capabilities.CreateReadsBack, "create_reads_back"},
			{p.Capabilities.DeleteReadsBack, "delete_reads_back"},
			{p.Capabilities.NoIdempotencyKeys, "no_idempotency_keys"},
			{p.Capabilities.ReadData, "read_data"},
			{p.Capabilities.SchemaValidation, "schema_validation"},
			{p.Capabilities.DeleteChecksKey, "delete_checks_key"},
		} {
			if c.on {
				caps = append(caps, c.name)
			}
		}
		if len(caps) == 0 {
			caps = []string{"none"}
		}
		fmt.Fprintf(w, "  capabilities: %s\n", strings.Join(caps, ", "))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		if len(p.Config) == 0 {
			fmt.Fprintln(tw, "  config: not described")
		} else {
			fmt.Fprintln(tw, "  config:")
			attributeLines(tw, "    ", p.Config)
		}
		for _, rt := range p.ResourceTypes {
			if rt.Description != "" {
				fmt.Fprintf(tw, "  resource %s: %s\n", schemaText(rt.Name), schemaText(rt.Description))
			} else {
				fmt.Fprintf(tw, "  resource %s\n", schemaText(rt.Name))
			}
			attributeLines(tw, "    ", rt.Attributes)
			// No tab: the line ends the attributes' columns.
			fmt.Fprintf(tw, "    replace: %s\n", replaceOrder(rt.Coexistence))
			if p.Capabilities.NoIdempotencyKeys {
				fmt.Fprintf(tw, "    %s\n", planview.KeylessNote)
			}
		}
		for _, dt := range p.DataSources {
			if dt.Description != "" {
				fmt.Fprintf(tw, "  data %s: %s\n", schemaText(dt.Name), schemaText(dt.Description))
			} else {
				fmt.Fprintf(tw, "  data %s\n", schemaText(dt.Name))
			}
			attributeLines(tw, "    ", dt.Attributes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// schemaText is a name, type, version or description a plugin declared,
// as the schema's text prints it: a third party's words (a Terraform
// provider's markdown among them), their control characters written as
// escapes.
func schemaText(s string) string { return printable.Line(s) }

func attributeLines(tw io.Writer, indent string, as []jsonview.SchemaAttribute) {
	for _, a := range as {
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{a.Required, "required"}, {a.Computed, "computed"}, {a.Sensitive, "sensitive"}, {a.ForceNew, "force_new"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		if len(flags) == 0 {
			flags = []string{"optional"}
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, schemaText(a.Name), schemaText(a.Type), strings.Join(flags, ","), schemaText(a.Description))
	}
}

// replaceOrder says in words when a replace of a type creates first.
func replaceOrder(c jsonview.SchemaCoexistence) string {
	switch {
	case c.Always:
		return "create first"
	case len(c.WhenDiffers) > 0:
		return "create first when " + schemaText(strings.Join(c.WhenDiffers, " or ")) + " changes, else delete first"
	}
	return "delete first"
}
