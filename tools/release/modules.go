// Package release holds what bulwark's install and release checks need: the
// list of the repository's modules, a `go mod tidy` check that resolves the
// sibling modules from their folders (tidy ignores go.work), a module proxy
// in a folder built from the working tree, and the version bump that keeps
// the modules' requirements on each other in step.
//
// It is its own module, outside go.work, so golang.org/x/mod never enters
// the build list of bulwark's published modules.
package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// Prefix is the module path every bulwark module starts with.
const Prefix = "github.com/bulwark-iac/bulwark/"

// Module is one of the repository's modules.
type Module struct {
	Path string // module path
	Dir  string // folder, relative to the repository root, with slashes
	// Published modules are the ones users require or install from a
	// proxy: their go.mod holds no replace directive. The examples are not
	// published: they stand for out-of-tree code and may replace the sdk
	// with its folder.
	Published bool
	File      *modfile.File
}

// Modules returns every module of the repository at root, found from the
// go.mod files git knows (tracked, or new and not ignored), sorted by folder.
func Modules(ctx context.Context, root string) ([]Module, error) {
	out, err := git(ctx, root, "ls-files", "-co", "--exclude-standard", "--", "go.mod", "**/go.mod")
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, rel := range strings.Fields(out) {
		dir := path.Dir(rel)
		if strings.Contains("/"+dir+"/", "/testdata/") {
			continue
		}
		file := filepath.Join(root, filepath.FromSlash(rel))
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(file, data, nil)
		if err != nil {
			return nil, err
		}
		if f.Module == nil {
			return nil, fmt.Errorf("%s: no module line", rel)
		}
		mods = append(mods, Module{
			Path:      f.Module.Mod.Path,
			Dir:       dir,
			Published: dir != "examples" && !strings.HasPrefix(dir, "examples/"),
			File:      f,
		})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Dir < mods[j].Dir })
	return mods, nil
}

// Sibling reports whether path is one of bulwark's own modules.
func Sibling(mods []Module, path string) bool {
	for _, m := range mods {
		if m.Path == path {
			return true
		}
	}
	return false
}

// Problems lists what keeps the modules from installing from a proxy: a
// replace directive in a published go.mod, and requirements on sibling
// modules that disagree on the version. It returns the one version the
// siblings are required at ("" when no module requires another).
func Problems(mods []Module) (version string, problems []string) {
	versions := map[string][]string{}
	for _, m := range mods {
		if m.Published {
			for _, r := range m.File.Replace {
				problems = append(problems, fmt.Sprintf("%s/go.mod: replace %s: a published module must not replace (the workspace, go.work, wires the folders)", m.Dir, r.Old.Path))
			}
		}
		if m.Dir == "sdk" || m.Dir == "core" {
			for _, r := range m.File.Require {
				if testProviderDep(r.Mod.Path) {
					problems = append(problems, fmt.Sprintf("%s/go.mod: requires %s: the test providers and their frameworks must not reach sdk or core (every provider and the CLI build on them)", m.Dir, r.Mod.Path))
				}
			}
		}
		// A sibling required only indirectly is fine when it comes through
		// another sibling required directly (backends needs sdk only
		// through core); a module whose every sibling is indirect is one
		// go mod tidy has not seen since it started importing them.
		direct := false
		for _, r := range m.File.Require {
			if Sibling(mods, r.Mod.Path) && !r.Indirect {
				direct = true
			}
		}
		for _, r := range m.File.Require {
			if Sibling(mods, r.Mod.Path) {
				versions[r.Mod.Version] = append(versions[r.Mod.Version], m.Dir+" requires "+r.Mod.Path)
				if !m.Published {
					continue
				}
				if r.Indirect && !direct {
					problems = append(problems, fmt.Sprintf("%s/go.mod: %s is marked // indirect", m.Dir, r.Mod.Path))
				}
			}
		}
	}
	var vs []string
	for v := range versions {
		vs = append(vs, v)
	}
	semver.Sort(vs)
	switch len(vs) {
	case 0:
		return "", problems
	case 1:
		if !semver.IsValid(vs[0]) {
			problems = append(problems, fmt.Sprintf("siblings are required at %q, which is no semantic version", vs[0]))
		}
		return vs[0], problems
	}
	for _, v := range vs {
		problems = append(problems, fmt.Sprintf("siblings required at %s: %s", v, strings.Join(versions[v], ", ")))
	}
	return vs[len(vs)-1], append(problems, "the modules must require each other at one version: run `make set-version VERSION=…`")
}

// testProviderDep reports whether path is the testproviders module or one
// of the Terraform provider frameworks it is written on.
func testProviderDep(path string) bool {
	return path == Prefix+"testproviders" ||
		strings.HasPrefix(path, "github.com/hashicorp/terraform-plugin-framework") ||
		strings.HasPrefix(path, "github.com/hashicorp/terraform-plugin-sdk")
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
