package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tidy on two small modules, offline: a plugin that imports the sdk, whose
// require of it is missing or marked // indirect, is reported and fixed,
// with the sdk resolved from its folder (no checksum of it in go.sum).
func TestTidy(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	// Each case on a tree of its own, so the cases (each a few go mod
	// tidy runs) run side by side.
	tree := func(t *testing.T) (root string, write func(name, text string)) {
		root = t.TempDir()
		write = func(name, text string) {
			t.Helper()
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("sdk/go.mod", "module github.com/bulwark-iac/bulwark/sdk\n\ngo 1.26.0\n")
		write("sdk/sdk.go", "package sdk\n\nconst Name = \"sdk\"\n")
		write("plugins/p/main.go", "package main\n\nimport \"github.com/bulwark-iac/bulwark/sdk\"\n\nfunc main() { println(sdk.Name) }\n")
		return root, write
	}
	env := append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=")
	ctx := context.Background()

	cases := []struct {
		name, gomod, wantDiff string
	}{
		{"tidy", "module github.com/bulwark-iac/bulwark/plugins/p\n\ngo 1.26.0\n\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\n", ""},
		{"indirect", "module github.com/bulwark-iac/bulwark/plugins/p\n\ngo 1.26.0\n\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0 // indirect\n",
			"-require github.com/bulwark-iac/bulwark/sdk v0.1.0 // indirect\n+require github.com/bulwark-iac/bulwark/sdk v0.1.0\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root, write := tree(t)
			write("plugins/p/go.mod", c.gomod)
			mods := []Module{mod(t, "sdk", "module github.com/bulwark-iac/bulwark/sdk\n"), mod(t, "plugins/p", c.gomod)}
			diff, err := Tidy(ctx, root, mods, mods[1], env, false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(diff, c.wantDiff) || (c.wantDiff == "") != (diff == "") {
				t.Fatalf("diff:\n%s\nwant:\n%s", diff, c.wantDiff)
			}
			if _, err := Tidy(ctx, root, mods, mods[1], env, true); err != nil {
				t.Fatal(err)
			}
			if diff, err := Tidy(ctx, root, mods, mods[1], env, false); err != nil || diff != "" {
				t.Fatalf("after the fix: %v\n%s", err, diff)
			}
			got, _ := os.ReadFile(filepath.Join(root, "plugins", "p", "go.mod"))
			if strings.Contains(string(got), "replace") || strings.Contains(string(got), "indirect") {
				t.Errorf("fixed go.mod:\n%s", got)
			}
			if sum, err := os.ReadFile(filepath.Join(root, "plugins", "p", "go.sum")); err == nil && strings.Contains(string(sum), "bulwark-iac") {
				t.Errorf("go.sum holds a checksum of a sibling:\n%s", sum)
			}
		})
	}
}
