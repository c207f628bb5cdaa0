package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
)

func (c *cli) providersCmd() *cobra.Command {
	cmd := c.providersListCmd()
	cmd.AddCommand(c.providersLockCmd(), c.providersSchemaCmd(), c.providersInstallCmd())
	return cmd
}

func (c *cli) providersLockCmd() *cobra.Command {
	var provider string
	cmd := &cobra.Command{
		Use:   "lock SPEC",
		Short: "Write bulwark.lock beside the spec with the sha256 of every provider it uses",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := c.peekSpec(args[0], provider)
			if err != nil {
				return err
			}
			opts, done, err := c.options(nil)
			if err != nil {
				return err
			}
			defer done()
			// Entries already pinned (say, for a run with --provider) stay.
			lf, err := providerlock.Read(providerlock.PathFor(args[0]))
			if err != nil {
				return err
			}
			if lf == nil {
				lf = &providerlock.File{Providers: map[string]providerlock.Entry{}}
			}
			for _, n := range sp.ProvidersUsed() {
				src := sp.Providers[n].Source
				path, err := pluginhost.Find(opts.PluginDirs, src)
				if err != nil {
					return err
				}
				sum, err := pluginhost.FileSHA256(path)
				if err != nil {
					return err
				}
				lf.Providers[src] = providerlock.Entry{SHA256: sum}
				fmt.Fprintf(c.stdout, "%s  %s  %s\n", src, sum, path)
			}
			path := providerlock.PathFor(args[0])
			if err := providerlock.Write(path, lf); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "pin provider `NAME` too, for runs that use --provider")
	return cmd
}

func (c *cli) providersListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "List the provider plugins found: name, version, protocol, sha256",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, done, err := c.options(nil)
			if err != nil {
				return err
			}
			defer done()
			found, err := pluginhost.List(opts.PluginDirs)
			if err != nil {
				return err
			}
			if len(found) == 0 {
				return fmt.Errorf("no provider plugins found in %s", strings.Join(opts.PluginDirs, ", "))
			}
			host := pluginhost.New(pluginhost.Options{Dirs: opts.PluginDirs, Logger: opts.Logger, StartTimeout: opts.StartTimeout, CallTimeout: opts.CallTimeout})
			defer host.Close()
			tmp, err := os.MkdirTemp("", "bulwark-providers-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			doc := &jsonview.Providers{FormatVersion: jsonview.FormatVersion, Dirs: opts.PluginDirs, Providers: []jsonview.ProviderPlugin{}}
			for _, f := range found {
				pp := jsonview.ProviderPlugin{Name: f.Name, SHA256: f.SHA256, Path: f.Path}
				// The schema only: no config to give (see doctor).
				p, err := host.Start(cmd.Context(), pluginhost.Config{Name: f.Name, Source: f.Name, DataDir: tmp + "/" + f.Name, ReadOnly: true, SchemaOnly: true})
				if err == nil {
					pp.Version, pp.Protocol = p.Schema().ProviderVersion, p.Protocol()
				} else {
					pp.Error = c.red.Redact(err.Error())
				}
				doc.Providers = append(doc.Providers, pp)
			}
			if asJSON {
				return c.printJSON(doc)
			}
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tSHA256\tPATH")
			for _, p := range doc.Providers {
				version, protocol := p.Version, fmt.Sprint(p.Protocol)
				if p.Error != "" {
					version, protocol = "error: "+p.Error, "?"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, version, protocol, p.SHA256, p.Path)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: each plugin's name, version, protocol, sha256 and path")
	return cmd
}
