package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulwark-iac/bulwark/core/nofollow"
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
	if s.opts.ProviderLock != nil && s.tfCopies == "" {
		// The verified copies of this session, removed by close once the
		// plugins are gone (see pluginhost's verifiedCopy).
		parent := filepath.Join(PluginCopyDir(s.opts.StateDir), "terraform")
		// A real folder, never a link planted in its place: the bytes
		// verified would be copied wherever it points, where another
		// could swap them before they run (as pluginhost's privateDir).
		if _, err := nofollow.Mkdir(PluginCopyDir(s.opts.StateDir), 0o700); err != nil {
			return fmt.Errorf("provider %s: verified copy: %w", pc.Name, err)
		}
		if _, err := nofollow.Mkdir(parent, 0o700); err != nil {
			return fmt.Errorf("provider %s: verified copy: %w", pc.Name, err)
		}
		dir, err := os.MkdirTemp(parent, "run-")
		if err != nil {
			return fmt.Errorf("provider %s: verified copy: %w", pc.Name, err)
		}
		s.tfCopies = dir
	}
	return TerraformPlugin(ctx, &s.opts, pc, src, constraint, s.tfCopies)
}

// TerraformPlugin completes pc to start the Terraform provider at source
// src (see the session's terraformPlugin), with o's plugin folders and
// provider lock: for what starts a provider outside an operation
// (`providers schema`, doctor). Under a lock, the verified copy is made in
// copies, a folder of the caller's that it removes once the plugin is gone.
func TerraformPlugin(ctx context.Context, o *Options, pc *pluginhost.Config, src, constraint, copies string) error {
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
		if err := providerlock.CheckPin(pc.Name, source, req.Constraints, e, o.LockPath); err != nil {
			return err
		}
		req.Version, req.Hashes = e.Version, tfinstall.HashesOf(e.Hashes)
	}
	f := &tfinstall.Finder{
		Locations: tfinstall.DefaultLocations(o.PluginDirs, os.Getenv),
		UnpackDir: TerraformUnpackDir(o.StateDir),
	}
	if len(req.Hashes) > 0 && copies == "" {
		return fmt.Errorf("provider %s: no folder for the verified copy", pc.Name)
	}
	exe, pkg, err := tfinstall.Prepare(ctx, f, req, filepath.Join(copies, strings.ReplaceAll(source.String(), "/", "_")))
	if err != nil {
		return fmt.Errorf("provider %s: %w", pc.Name, err)
	}
	pc.Terraform, pc.Path, pc.Version, pc.SHA256 = true, exe, pkg.Version, ""
	return nil
}

// TerraformUnpackDir is where a packed Terraform provider package found
// for the stacks of stateDir is unpacked (see tfinstall.Finder.UnpackDir).
func TerraformUnpackDir(stateDir string) string {
	return filepath.Join(PluginCopyDir(stateDir), "terraform", "unpacked")
}
