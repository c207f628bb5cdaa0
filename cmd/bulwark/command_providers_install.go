package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
		Use:   "install SOURCE[@CONSTRAINT]... | install SPEC",
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

With SPEC (a .yaml or .yml file) instead of sources, the Terraform providers
the spec declares are installed under its version constraints and pinned in
the bulwark.lock beside it (unless --lock says otherwise); a provider the
lock already pins at a version its constraint allows is installed at that
version, so a fresh machine gets the bytes the lock names.

At a version the lock already records, the package must match one of the
hashes recorded (as Terraform's lock file): other bytes are refused, naming
the provider and both hashes, and the lock is left as it was (a package
fetched from a registry stays in the provider folder, where a run refuses it).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("name the providers to install: bulwark providers install SOURCE[@CONSTRAINT]... or bulwark providers install SPEC")
			}
			o := providerlock.InstallOptions{
				LockPath:       lockPath,
				Dir:            dir,
				TrustedKeyFile: keyFile,
				Local:          local,
				Pinned: func(p providerlock.Pin) {
					trust := p.Trust
					if p.KeyID != "" {
						trust += " " + p.KeyID
					}
					fmt.Fprintf(c.stdout, "%s %s (%s)\n  %s\n", p.Source, p.Version, trust, p.Path)
					for _, h := range p.Hashes {
						fmt.Fprintf(c.stdout, "  %s\n", h)
					}
				},
				Repinning: func(e *providerlock.PinOutsideConstraintError) {
					fmt.Fprintf(c.stdout, "%s: %s pins %s, which %q does not allow: pinning a version it allows\n", e.Source, e.LockPath, e.Pinned, e.Constraint)
				},
			}
			if local {
				exe, _ := os.Executable()
				o.PluginDirs = pluginhost.LookupDirs(c.pluginDir, os.Getenv("BULWARK_PLUGIN_DIR"), exe)
			}
			if len(args) == 1 && isSpecFile(args[0]) {
				sp, err := c.peekProviders(args[0], "")
				if err != nil {
					return err
				}
				if !cmd.Flags().Changed("lock") {
					o.LockPath = providerlock.PathFor(args[0])
				}
				if err := providerlock.InstallSpec(cmd.Context(), sp, o); err != nil {
					return err
				}
			} else if err := providerlock.InstallSources(cmd.Context(), args, o); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "wrote %s\n", o.LockPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&lockPath, "lock", providerlock.FileName, "record the providers in lock file `FILE` (the bulwark.lock beside the spec)")
	cmd.Flags().StringVar(&keyFile, "key", "", "require SHA256SUMS to be signed by the armored OpenPGP public key in `FILE` (default $"+tfinstall.EnvTrustedKey+")")
	cmd.Flags().BoolVar(&local, "local", false, "pin the package found on this machine instead of downloading one")
	cmd.Flags().StringVar(&dir, "dir", "", "install into `DIR` (default $"+tfinstall.EnvProviderDir+", else ~/.cache/bulwark/providers)")
	return cmd
}

// isSpecFile reports whether arg names a spec (a YAML file) rather than a
// provider source.
func isSpecFile(arg string) bool {
	if !strings.HasSuffix(arg, ".yaml") && !strings.HasSuffix(arg, ".yml") {
		return false
	}
	fi, err := os.Stat(arg)
	return err == nil && fi.Mode().IsRegular()
}
