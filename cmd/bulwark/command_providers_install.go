package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
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
			var wants []tfWant
			fromSpec := len(args) == 1 && isSpecFile(args[0])
			if fromSpec {
				sp, err := c.peekProviders(args[0], "")
				if err != nil {
					return err
				}
				if !cmd.Flags().Changed("lock") {
					lockPath = providerlock.PathFor(args[0])
				}
				if wants, err = specTerraformWants(sp); err != nil {
					return err
				}
				if len(wants) == 0 {
					return fmt.Errorf("%s declares no Terraform provider (bulwark's own plugins are pinned by `bulwark providers lock %s`)", args[0], args[0])
				}
			} else {
				for _, a := range args {
					src, cons, err := tfinstall.ParseRequirement(a)
					if err != nil {
						return err
					}
					wants = append(wants, tfWant{src: src, c: cons})
				}
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
				// From a spec, the version the lock pins, when the
				// spec's constraint allows it: what the lock says runs.
				pinned := ""
				if e, ok := lf.Terraform[w.src.String()]; ok && fromSpec {
					if stack.CheckPin(w.name, w.src, w.c, e, lockPath) == nil {
						pinned = e.Version
					} else {
						fmt.Fprintf(c.stdout, "%s: %s pins %s, which %q does not allow: pinning a version it allows\n", w.src, lockPath, e.Version, w.c.String())
					}
				}
				if finder != nil {
					got, err = pinLocal(cmd.Context(), finder, w.src, w.c, pinned)
				} else {
					cons := w.c
					if pinned != "" {
						if cons, err = tfinstall.ParseConstraints("= " + pinned); err != nil {
							return err
						}
					}
					got, err = in.Install(cmd.Context(), w.src, cons)
				}
				if err != nil {
					return err
				}
				if _, err := pinTerraform(lf, lockPath, w, got); err != nil {
					return err
				}
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

// tfWant is one Terraform provider to install or pin: its source, the
// constraint it is installed under, and the spec's name for it ("" when
// named on the command line).
type tfWant struct {
	src  tfinstall.Source
	c    tfinstall.Constraints
	name string
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

// specTerraformWants lists the Terraform providers sp declares, by name.
func specTerraformWants(sp *spec.Spec) ([]tfWant, error) {
	var out []tfWant
	for _, n := range slices.Sorted(maps.Keys(sp.Providers)) {
		pc := sp.Providers[n]
		if !pc.Terraform() {
			continue
		}
		src, err := tfinstall.ParseSource(pc.Source)
		if err != nil {
			return nil, fmt.Errorf("%s: provider %s: %w", sp.File, n, err)
		}
		cons, err := tfinstall.ParseConstraints(pc.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: provider %s: version %q: %w", sp.File, n, pc.Version, err)
		}
		out = append(out, tfWant{src: src, c: cons, name: n})
	}
	return out, nil
}

// pinLocal pins the package a run would find on this machine: of version
// when set (the lock's), else the newest c allows.
func pinLocal(ctx context.Context, f *tfinstall.Finder, src tfinstall.Source, c tfinstall.Constraints, version string) (*tfinstall.Installed, error) {
	p, err := f.Find(ctx, tfinstall.Request{Source: src, Constraints: c, Version: version})
	if err != nil {
		return nil, err
	}
	hashes, err := tfinstall.Pin(p)
	if err != nil {
		return nil, err
	}
	return &tfinstall.Installed{Package: p, Hashes: hashes, Trust: tfinstall.Trust("found in " + p.Location)}, nil
}
