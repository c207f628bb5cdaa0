package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// Tidy runs `go mod tidy` on module m as if the workspace were in force and
// reports what it would change (a unified diff; "" when m is tidy). With
// fix, it writes the tidied go.mod and go.sum back instead.
//
// `go mod tidy` ignores go.work (Go 1.26 still tidies the one module and
// resolves every requirement, the siblings' too, from GOPROXY), and the
// siblings' versions are not published until a release. So the tidy runs on
// a copy of go.mod and go.sum (-modfile) to which a replace directive per
// sibling, pointing at its folder, is added: the same graph the workspace
// builds, with no checksum for the siblings (a folder has none, and a
// checksum of the working tree would change with every commit). The
// replacements are dropped again before comparing or writing back.
//
// env is the environment of the go command (GOFLAGS and GOWORK are set
// here); pass GOPROXY=off in it to run offline from the module cache.
func Tidy(ctx context.Context, root string, mods []Module, m Module, env []string, fix bool) (string, error) {
	dir := filepath.Join(root, filepath.FromSlash(m.Dir))
	tmp, err := os.MkdirTemp("", "bulwark-tidy-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	modPath, sumPath := filepath.Join(tmp, "go.mod"), filepath.Join(tmp, "go.sum")

	origMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	origSum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	f, err := modfile.Parse(modPath, origMod, nil)
	if err != nil {
		return "", err
	}
	replaced := map[string]bool{}
	for _, r := range f.Replace {
		replaced[r.Old.Path] = true
	}
	var added []string
	for _, s := range mods {
		if s.Path == m.Path || replaced[s.Path] {
			continue
		}
		if err := f.AddReplace(s.Path, "", filepath.Join(root, filepath.FromSlash(s.Dir)), ""); err != nil {
			return "", err
		}
		added = append(added, s.Path)
	}
	withReplace, err := f.Format()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(modPath, withReplace, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(sumPath, origSum, 0o644); err != nil {
		return "", err
	}

	cmd := exec.CommandContext(ctx, "go", "mod", "tidy", "-modfile="+modPath)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), env...), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: go mod tidy: %w\n%s", m.Dir, err, out)
	}

	tidied, err := os.ReadFile(modPath)
	if err != nil {
		return "", err
	}
	g, err := modfile.Parse(modPath, tidied, nil)
	if err != nil {
		return "", err
	}
	for _, p := range added {
		if err := g.DropReplace(p, ""); err != nil {
			return "", err
		}
	}
	g.Cleanup()
	newMod, err := g.Format()
	if err != nil {
		return "", err
	}
	newSum, err := os.ReadFile(sumPath)
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	if fix {
		if !bytes.Equal(newMod, origMod) {
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), newMod, 0o644); err != nil {
				return "", err
			}
		}
		if !bytes.Equal(newSum, origSum) {
			if err := os.WriteFile(filepath.Join(dir, "go.sum"), newSum, 0o644); err != nil {
				return "", err
			}
		}
		return "", nil
	}
	var diff strings.Builder
	for _, d := range []struct {
		name      string
		old, new_ []byte
	}{{"go.mod", origMod, newMod}, {"go.sum", origSum, newSum}} {
		if bytes.Equal(d.old, d.new_) {
			continue
		}
		name := m.Dir + "/" + d.name
		diff.WriteString(lineDiff(name, d.old, d.new_))
	}
	return diff.String(), nil
}

// lineDiff is a small diff: the lines only in old (-) and only in new (+),
// in order. go.mod and go.sum changes read well that way and no diff tool
// is needed.
func lineDiff(name string, old, new_ []byte) string {
	a, b := strings.SplitAfter(string(old), "\n"), strings.SplitAfter(string(new_), "\n")
	// Longest common subsequence, on lines; the files are small.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s\n+++ %s (tidy)\n", name, name)
	line := func(prefix, l string) {
		if l == "" {
			return
		}
		s.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			line("-", a[i])
			i++
		default:
			line("+", b[j])
			j++
		}
	}
	return s.String()
}
