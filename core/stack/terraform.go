package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// terraformSource reports whether a provider source is a Terraform
// provider's source address (NAMESPACE/TYPE, with an optional host), not
// the name of one of bulwark's own plugins.
func terraformSource(src string) bool { return strings.Contains(src, "/") }

// terraformPlugin completes pc for the Terraform provider at source src
// with the version constraint constraint ("" for any): the executable
// found where Terraform users keep them (--plugin-dir, the filesystem
// mirrors, the plugin cache, bulwark's own install folder) and, under a
// bulwark.lock, the lock's version, run from a private copy whose bytes
// match the lock's hashes.
func (s *session) terraformPlugin(ctx context.Context, pc *pluginhost.Config, src, constraint string) error {
	return TerraformPlugin(ctx, &s.opts, pc, src, constraint)
}

// TerraformPlugin completes pc to start the Terraform provider at source
// src (see the session's terraformPlugin), with o's plugin folders and
// provider lock: for what starts a provider outside an operation
// (`providers schema`, doctor).
func TerraformPlugin(ctx context.Context, o *Options, pc *pluginhost.Config, src, constraint string) error {
	source, err := tfinstall.ParseSource(src)
	if err != nil {
		return fmt.Errorf("provider %s: %w", pc.Name, err)
	}
	req := tfinstall.Request{Source: source}
	if constraint != "" {
		if req.Constraints, err = tfinstall.ParseConstraints(constraint); err != nil {
			return fmt.Errorf("provider %s: version %q: %w", pc.Name, constraint, err)
		}
	}
	if lf := o.ProviderLock; lf != nil {
		e, ok := lf.Terraform[source.String()]
		if !ok {
			return &providerlock.TerraformNotPinnedError{Source: source.String(), Path: o.LockPath}
		}
		req.Version, req.Hashes = e.Version, tfinstall.HashesOf(e.Hashes)
	}
	copies := filepath.Join(PluginCopyDir(o.StateDir), "terraform")
	f := &tfinstall.Finder{
		Locations: tfinstall.DefaultLocations(o.PluginDirs, os.Getenv),
		UnpackDir: filepath.Join(copies, "unpacked"),
	}
	exe, pkg, err := tfinstall.Prepare(ctx, f, req, copies)
	if err != nil {
		return fmt.Errorf("provider %s: %w", pc.Name, err)
	}
	pc.Terraform, pc.Path, pc.Version, pc.SHA256 = true, exe, pkg.Version, ""
	return nil
}
