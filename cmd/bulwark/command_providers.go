package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
)

func (c *cli) providersCmd() *cobra.Command {
	cmd := c.providersListCmd()
	cmd.AddCommand(c.providersLockCmd(), c.providersSchemaCmd())
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
	return &cobra.Command{
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
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tSHA256\tPATH")
			for _, f := range found {
				version, protocol := "?", "?"
				// The schema only: no config to give (see doctor).
				p, err := host.Start(cmd.Context(), pluginhost.Config{Name: f.Name, Source: f.Name, DataDir: tmp + "/" + f.Name, ReadOnly: true, SchemaOnly: true})
				if err == nil {
					version, protocol = p.Schema().ProviderVersion, fmt.Sprint(p.Protocol())
				} else {
					version = "error: " + err.Error()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Name, version, protocol, f.SHA256, f.Path)
			}
			return tw.Flush()
		},
	}
}
