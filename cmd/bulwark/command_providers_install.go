package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// providersInstallCmd installs Terraform-protocol providers from a registry
// speaking Terraform's provider registry protocol and records them in
// bulwark.lock.
func (c *cli) providersInstallCmd() *cobra.Command {
	var lockPath, keyFile, dir string
	var local bool
	cmd := &cobra.Command{
		Use:   "install SOURCE[@CONSTRAINT]...",
		Short: "Install Terraform providers from their registry and pin them in bulwark.lock",
		Long: `Install Terraform providers from their registry and pin them in bulwark.lock.

Each SOURCE is a Terraform source address, [HOST/]NAMESPACE/TYPE (the host
defaults to registry.terraform.io), with an optional version constraint as
Terraform writes it after an @: hashicorp/random@"~> 3.6". The newest version
the constraint allows, built for this platform and speaking plugin protocol 5
or 6, is downloaded over https; its SHA-256 must match the registry's and the
SHA256SUMS file's, and SHA256SUMS must carry a valid OpenPGP signature: by the
key of --key ($` + tfinstall.EnvTrustedKey + `) when one is given, else by a key the
registry names (a package the registry offers unsigned is installed only
without --key, and said to be unsigned). It is unpacked into the provider
folder (--dir, $` + tfinstall.EnvProviderDir + `, else ~/.cache/bulwark/providers)
as HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/, and its version, constraint and
Terraform hashes (h1:, zh:) are recorded in the lock file: from then on the
bytes that run must match them.

The server's certificate is checked against the system's pool; SSL_CERT_FILE
or SSL_CERT_DIR add to it (for a registry of your own).

With --local nothing is downloaded: the package is the one a run would find
on this machine (the plugin folders, --plugin-dir first; the filesystem
mirrors of $` + tfinstall.EnvMirror + ` and Terraform's implied ones,
~/.terraform.d/plugins and terraform/plugins under $XDG_DATA_HOME and
$XDG_DATA_DIRS; $` + tfinstall.EnvPluginCache + ` and the provider folder),
and its hashes are pinned as they are (a packed zip is unpacked into the
provider folder).

The providers a spec declares are not read from it yet: name them here.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("name the providers to install: bulwark providers install SOURCE[@CONSTRAINT]... (reading them from a spec is not supported yet)")
			}
			type want struct {
				src tfinstall.Source
				c   tfinstall.Constraints
			}
			var wants []want
			for _, a := range args {
				src, cons, err := tfinstall.ParseRequirement(a)
				if err != nil {
					return err
				}
				wants = append(wants, want{src, cons})
			}
			if keyFile == "" {
				keyFile = os.Getenv(tfinstall.EnvTrustedKey)
			}
			in := &tfinstall.Installer{Dir: dir}
			if in.Dir == "" {
				in.Dir = tfinstall.ProviderDir(os.Getenv)
			}
			if keyFile != "" {
				b, err := os.ReadFile(keyFile)
				if err != nil {
					return fmt.Errorf("trusted key: %w", err)
				}
				in.TrustedKeys = string(b)
			}
			lf, err := providerlock.Read(lockPath)
			if err != nil {
				return err
			}
			if lf == nil {
				lf = &providerlock.File{Providers: map[string]providerlock.Entry{}}
			}
			// Each is recorded once installed: the lock holds what this
			// command installed even when a later one fails.
			var finder *tfinstall.Finder
			if local {
				exe, _ := os.Executable()
				dirs := pluginhost.LookupDirs(c.pluginDir, os.Getenv("BULWARK_PLUGIN_DIR"), exe)
				finder = &tfinstall.Finder{Locations: tfinstall.DefaultLocations(dirs, os.Getenv), UnpackDir: in.Dir}
			}
			for _, w := range wants {
				var got *tfinstall.Installed
				if finder != nil {
					got, err = pinLocal(cmd.Context(), finder, w.src, w.c)
				} else {
					got, err = in.Install(cmd.Context(), w.src, w.c)
				}
				if err != nil {
					return err
				}
				hashes := make([]string, len(got.Hashes))
				for i, h := range got.Hashes {
					hashes[i] = string(h)
				}
				lf.SetTerraform(w.src.String(), providerlock.TerraformEntry{Version: got.Package.Version, Constraints: w.c.String(), Hashes: hashes})
				if err := providerlock.Write(lockPath, lf); err != nil {
					return err
				}
				trust := string(got.Trust)
				if got.KeyID != "" {
					trust += " " + got.KeyID
				}
				fmt.Fprintf(c.stdout, "%s %s (%s)\n  %s\n", w.src, got.Package.Version, trust, got.Package.ExePath())
				for _, h := range got.Hashes {
					fmt.Fprintf(c.stdout, "  %s\n", h)
				}
			}
			fmt.Fprintf(c.stdout, "wrote %s\n", lockPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&lockPath, "lock", providerlock.FileName, "record the providers in lock file `FILE` (the bulwark.lock beside the spec)")
	cmd.Flags().StringVar(&keyFile, "key", "", "require SHA256SUMS to be signed by the armored OpenPGP public key in `FILE` (default $"+tfinstall.EnvTrustedKey+")")
	cmd.Flags().BoolVar(&local, "local", false, "pin the package found on this machine instead of downloading one")
	cmd.Flags().StringVar(&dir, "dir", "", "install into `DIR` (default $"+tfinstall.EnvProviderDir+", else ~/.cache/bulwark/providers)")
	return cmd
}

// pinLocal pins the package a run would find on this machine.
func pinLocal(ctx context.Context, f *tfinstall.Finder, src tfinstall.Source, c tfinstall.Constraints) (*tfinstall.Installed, error) {
	p, err := f.Find(ctx, tfinstall.Request{Source: src, Constraints: c})
	if err != nil {
		return nil, err
	}
	hashes, err := tfinstall.Pin(p)
	if err != nil {
		return nil, err
	}
	return &tfinstall.Installed{Package: p, Hashes: hashes, Trust: tfinstall.Trust("found in " + p.Location)}, nil
}
