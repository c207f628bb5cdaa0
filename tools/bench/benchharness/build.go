package benchharness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FindRoot returns the repository's root: the first folder from dir upward
// that holds go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "go.work")); err == nil && fi.Mode().IsRegular() {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work in %s or above it: pass the repository's root", dir)
		}
	}
}

// Build builds bulwark and the mock provider from the repository at root
// into dir, as `make build-demo` lays them out, and returns the bulwark
// executable and the plugin folder.
func Build(ctx context.Context, root, dir string) (bulwark, pluginDir string, err error) {
	pluginDir = filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return "", "", err
	}
	bulwark = filepath.Join(dir, "bulwark")
	for _, b := range []struct{ out, pkg string }{
		{bulwark, "./cmd/bulwark"},
		{filepath.Join(pluginDir, "bulwark-provider-mock"), "./plugins/mock/cmd/bulwark-provider-mock"},
	} {
		// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", b.out, b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
		}
	}
	return bulwark, pluginDir, nil
}

// Commit is the repository's short commit, with "+dirty" when its tracked
// files differ from it; "" when git cannot say.
func Commit(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if err := exec.CommandContext(ctx, "git", "-C", root, "diff", "--quiet", "HEAD", "--").Run(); err != nil {
		c += "+dirty"
	}
	return c
}
