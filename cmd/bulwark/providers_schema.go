package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/sdk"
)

// schemaFormat is the format_version of `bulwark providers schema --json`
// (the same scheme as `bulwark version --json`: a major change breaks readers).
const schemaFormat = "1.0"

// The JSON wire types of `providers schema --json`. Keys are snake_case,
// enums are strings, and every field is always present (false, "" or [] when
// unset), so a reader needs no defaults.
type (
	schemaDoc struct {
		FormatVersion string           `json:"format_version"`
		Providers     []schemaProvider `json:"providers"`
	}
	schemaProvider struct {
		Name          string             `json:"name"` // the plugin's name: bulwark-provider-NAME, a spec's source
		Version       string             `json:"version"`
		Protocol      int                `json:"protocol"`
		Error         string             `json:"error,omitempty"` // the plugin did not start; nothing else is set
		Capabilities  schemaCapabilities `json:"capabilities"`
		Config        []schemaAttribute  `json:"provider_config"`
		ResourceTypes []schemaType       `json:"resource_types"`
	}
	schemaCapabilities struct {
		IdempotencyKeys bool `json:"idempotency_keys"`
		Import          bool `json:"import"`
	}
	schemaType struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Attributes  []schemaAttribute `json:"attributes"`
	}
	schemaAttribute struct {
		Name        string `json:"name"`
		Type        string `json:"type"` // string, number, bool, list, map
		Required    bool   `json:"required"`
		Computed    bool   `json:"computed"`
		Sensitive   bool   `json:"sensitive"`
		ForceNew    bool   `json:"force_new"`
		Description string `json:"description"`
	}
)

func wireAttributes(as []sdk.Attribute) []schemaAttribute {
	out := make([]schemaAttribute, 0, len(as))
	for _, a := range as {
		out = append(out, schemaAttribute{Name: a.Name, Type: a.Type.String(), Required: a.Required, Computed: a.Computed,
			Sensitive: a.Sensitive, ForceNew: a.ForceNew, Description: a.Description})
	}
	return out
}

// wireSchema is what GetSchema said, in the order the provider said it.
func wireSchema(name string, protocol int, s *sdk.GetSchemaResponse) schemaProvider {
	p := schemaProvider{Name: name, Version: s.ProviderVersion, Protocol: protocol,
		Capabilities:  schemaCapabilities{IdempotencyKeys: s.Capabilities.IdempotencyKeys, Import: s.Capabilities.Import},
		Config:        wireAttributes(s.ProviderConfig),
		ResourceTypes: make([]schemaType, 0, len(s.ResourceTypes)),
	}
	for _, rt := range s.ResourceTypes {
		p.ResourceTypes = append(p.ResourceTypes, schemaType{Name: rt.Name, Description: rt.Description, Attributes: wireAttributes(rt.Attributes)})
	}
	return p
}

func (c *cli) providersSchemaCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "schema [NAME]",
		Short: "Print each provider's resource types, attributes, config and capabilities",
		Long: `Print what each provider plugin found (or only the one named) describes of itself:
its resource types with their attributes (type, required, computed, sensitive,
force_new, description), its own config schema and its capabilities. The
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
			if len(args) == 1 {
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
			host := pluginhost.New(pluginhost.Options{Dirs: opts.PluginDirs, Logger: opts.Logger, StartTimeout: opts.StartTimeout, CallTimeout: opts.CallTimeout})
			defer host.Close()
			doc, err := readSchemas(cmd.Context(), host, names)
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(c.stdout, doc)
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (format_version "+schemaFormat+")")
	return cmd
}

// readSchemas starts each plugin for its schema only (never Configure: a
// provider whose config only a spec can give would refuse an empty one). A
// plugin that does not start is reported in its entry.
func readSchemas(ctx context.Context, host *pluginhost.Host, names []string) (*schemaDoc, error) {
	tmp, err := os.MkdirTemp("", "bulwark-schema-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	doc := &schemaDoc{FormatVersion: schemaFormat, Providers: make([]schemaProvider, 0, len(names))}
	for _, n := range names {
		p, err := host.Start(ctx, pluginhost.Config{Name: n, Source: n, DataDir: filepath.Join(tmp, n), ReadOnly: true, SchemaOnly: true})
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			doc.Providers = append(doc.Providers, schemaProvider{Name: n, Error: err.Error(),
				Config: []schemaAttribute{}, ResourceTypes: []schemaType{}})
			continue
		}
		doc.Providers = append(doc.Providers, wireSchema(n, p.Protocol(), p.Schema()))
	}
	return doc, nil
}

// writeJSON writes v indented, with no HTML escaping (a description's "<"
// stays "<").
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// renderSchemas prints the schemas for a person.
func renderSchemas(w io.Writer, doc *schemaDoc) error {
	for i, p := range doc.Providers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if p.Error != "" {
			fmt.Fprintf(w, "provider %s: does not start: %s\n", p.Name, p.Error)
			continue
		}
		fmt.Fprintf(w, "provider %s %s (protocol %d)\n", p.Name, p.Version, p.Protocol)
		var caps []string
		if p.Capabilities.IdempotencyKeys {
			caps = append(caps, "idempotency_keys")
		}
		if p.Capabilities.Import {
			caps = append(caps, "import")
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
				fmt.Fprintf(tw, "  resource %s: %s\n", rt.Name, rt.Description)
			} else {
				fmt.Fprintf(tw, "  resource %s\n", rt.Name)
			}
			attributeLines(tw, "    ", rt.Attributes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func attributeLines(tw io.Writer, indent string, as []schemaAttribute) {
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
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, a.Name, a.Type, strings.Join(flags, ","), a.Description)
	}
}
