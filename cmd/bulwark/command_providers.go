package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
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
		Short: "Write bulwark.lock beside the spec with the sha256 of every provider it uses (a Terraform provider's version and h1: hash)",
		Long: `Write bulwark.lock beside the spec with the sha256 of every provider plugin it
uses, and for each Terraform provider the version found on this machine (the
lock's own when the spec's constraint allows it, else the newest it allows)
and its h1: hash. Nothing is downloaded: see providers install. At a version
the lock already records, the package found must match one of the hashes
recorded: other bytes are refused, naming the provider and both hashes, and
nothing is written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := c.peekProviders(args[0], provider)
			if err != nil {
				return err
			}
			opts, done, err := c.options(nil)
			if err != nil {
				return err
			}
			defer done()
			path, err := providerlock.Lock(cmd.Context(), sp, providerlock.LockOptions{
				PluginDirs: opts.PluginDirs,
				UnpackDir:  stack.TerraformUnpackDir(opts.StateDir),
				Pinned: func(p providerlock.Pin) {
					if p.SHA256 != "" {
						fmt.Fprintf(c.stdout, "%s  %s  %s\n", p.Source, p.SHA256, p.Path)
						return
					}
					fmt.Fprintf(c.stdout, "%s  %s  %s  %s\n", p.Source, p.Version, strings.Join(p.Hashes, " "), p.Path)
				},
			})
			if err != nil {
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
		Use:   "providers [SPEC]",
		Short: "List the provider plugins found (name, version, protocol, sha256) and a spec's Terraform providers",
		Long: `List the provider plugins found: name, version, protocol, sha256 and path.

With SPEC, also the Terraform providers the spec declares, as a run would
find them (not started): name, source, version constraint, the version found
and where, and whether bulwark.lock pins those bytes ("locked"), does not name
them ("not locked"), pins other bytes ("mismatch"), pins a version the spec's
constraint does not allow ("outside constraint") or pins a version not found
here ("not found"). The last two are errors:
the list is printed and the command exits 1, as a run would refuse them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var sp *spec.Spec
			if len(args) == 1 {
				var err error
				if sp, err = c.peekProviders(args[0], ""); err != nil {
					return err
				}
			}
			opts, done, err := c.options(sp)
			if err != nil {
				return err
			}
			defer done()
			found, err := pluginhost.List(opts.PluginDirs)
			if err != nil {
				return err
			}
			doc := &jsonview.Providers{FormatVersion: jsonview.FormatVersion, Dirs: opts.PluginDirs, Providers: []jsonview.ProviderPlugin{}, Terraform: []jsonview.TerraformProvider{}}
			var tfErr error
			if sp != nil {
				doc.Terraform, tfErr = terraformProviders(cmd.Context(), sp, &opts)
			}
			if len(found) == 0 && len(doc.Terraform) == 0 {
				return fmt.Errorf("no provider plugins found in %s", strings.Join(opts.PluginDirs, ", "))
			}
			names := make([]string, len(found))
			for i, f := range found {
				names[i] = f.Name
			}
			// The schema only: no config to give (see doctor).
			started, err := inspect.Schemas(cmd.Context(), &opts, names)
			if started == nil {
				return err // nothing started (no temporary folder)
			}
			for i, f := range found {
				pp := jsonview.ProviderPlugin{Name: f.Name, SHA256: f.SHA256, Path: f.Path}
				if p := started[i]; p.Err == nil {
					pp.Version, pp.Protocol = p.Schema.ProviderVersion, p.Protocol
				} else {
					pp.Error = c.red.Redact(p.Err.Error())
				}
				doc.Providers = append(doc.Providers, pp)
			}
			if asJSON {
				if err := c.printJSON(doc); err != nil {
					return err
				}
				return tfErr
			}
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			if len(doc.Providers) > 0 {
				fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tSHA256\tPATH")
				for _, p := range doc.Providers {
					version, protocol := p.Version, fmt.Sprint(p.Protocol)
					if p.Error != "" {
						version, protocol = "error: "+p.Error, "?"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, schemaText(version), protocol, p.SHA256, schemaText(p.Path))
				}
			}
			if len(doc.Terraform) > 0 {
				if len(doc.Providers) > 0 {
					fmt.Fprintln(tw)
				}
				fmt.Fprintf(tw, "TERRAFORM PROVIDERS OF %s\n", sp.File)
				fmt.Fprintln(tw, "NAME\tSOURCE\tCONSTRAINT\tVERSION\tLOCK\tFOUND IN\tPATH")
				for _, p := range doc.Terraform {
					cons, version, where, path := orDash(p.Constraint), orDash(p.Version), orDash(p.Location), orDash(p.Path)
					lock := p.Lock
					if p.LockVersion != "" && p.Lock != providerlock.StatusNotLocked {
						lock += " (" + p.LockVersion + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Source, cons, schemaText(version), schemaText(lock), where, schemaText(path))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				for _, p := range doc.Terraform {
					if p.Error != "" {
						fmt.Fprintf(c.stdout, "%s: %s\n", p.Name, printable.Text(p.Error))
					}
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return tfErr
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: each plugin's name, version, protocol, sha256 and path, and the spec's Terraform providers")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// terraformProviders describes the Terraform providers sp declares, as a
// run would find them under opts' plugin folders and lock (nothing is
// started). The error is the first lock a run would refuse
// (providerlock.Describe).
func terraformProviders(ctx context.Context, sp *spec.Spec, opts *stack.Options) ([]jsonview.TerraformProvider, error) {
	found, refused := providerlock.Describe(ctx, sp, providerlock.DescribeOptions{
		Lock:       opts.ProviderLock,
		LockPath:   opts.LockPath,
		PluginDirs: opts.PluginDirs,
		UnpackDir:  stack.TerraformUnpackDir(opts.StateDir),
	})
	out := make([]jsonview.TerraformProvider, 0, len(found))
	for _, st := range found {
		tp := jsonview.TerraformProvider{Name: st.Name, Source: st.Source, Constraint: st.Constraint, Version: st.Version, Path: st.Path, Location: st.Location, Lock: st.Lock, LockVersion: st.LockVersion}
		if st.Err != nil {
			tp.Error = st.Err.Error()
		}
		out = append(out, tp)
	}
	return out, refused
}
