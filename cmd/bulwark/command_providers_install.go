package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// providersInstallCmd installs Terraform-protocol providers from a registry
// speaking Terraform's provider registry protocol and records them in
// bulwark.lock.
func (c *cli) providersInstallCmd() *cobra.Command {
	var lockPath, keyFile, dir string
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
			for _, w := range wants {
				got, err := in.Install(cmd.Context(), w.src, w.c)
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
	cmd.Flags().StringVar(&dir, "dir", "", "install into `DIR` (default $"+tfinstall.EnvProviderDir+", else ~/.cache/bulwark/providers)")
	return cmd
}
