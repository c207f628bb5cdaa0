package release

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

func mod(t *testing.T, dir, text string) Module {
	t.Helper()
	f, err := modfile.Parse(dir+"/go.mod", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return Module{Path: f.Module.Mod.Path, Dir: dir, Published: !strings.HasPrefix(dir, "examples/"), File: f}
}

func TestProblems(t *testing.T) {
	sdk := "module github.com/bulwark-iac/bulwark/sdk\n"
	cases := []struct {
		name    string
		mods    map[string]string
		version string
		want    []string // substrings, one per problem, in order
	}{
		{"one version", map[string]string{
			"sdk":          sdk,
			"plugins/mock": "module github.com/bulwark-iac/bulwark/plugins/mock\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\n",
		}, "v0.1.0", nil},
		{"replace in a published module", map[string]string{
			"sdk":          sdk,
			"plugins/mock": "module github.com/bulwark-iac/bulwark/plugins/mock\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\nreplace github.com/bulwark-iac/bulwark/sdk => ../../sdk\n",
		}, "v0.1.0", []string{"plugins/mock/go.mod: replace github.com/bulwark-iac/bulwark/sdk"}},
		{"an example may replace", map[string]string{
			"sdk":                     sdk,
			"examples/provider-hello": "module github.com/bulwark-iac/bulwark/examples/provider-hello\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\nreplace github.com/bulwark-iac/bulwark/sdk => ../../sdk\n",
		}, "v0.1.0", nil},
		{"indirect sibling", map[string]string{
			"sdk":          sdk,
			"plugins/mock": "module github.com/bulwark-iac/bulwark/plugins/mock\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0 // indirect\n",
		}, "v0.1.0", []string{"marked // indirect"}},
		{"indirect sibling through a direct one", map[string]string{
			"sdk":      sdk,
			"core":     "module github.com/bulwark-iac/bulwark/core\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\n",
			"backends": "module github.com/bulwark-iac/bulwark/backends\nrequire github.com/bulwark-iac/bulwark/core v0.1.0\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0 // indirect\n",
		}, "v0.1.0", nil},
		{"two versions", map[string]string{
			"sdk":          sdk,
			"core":         "module github.com/bulwark-iac/bulwark/core\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\n",
			"plugins/mock": "module github.com/bulwark-iac/bulwark/plugins/mock\nrequire github.com/bulwark-iac/bulwark/sdk v0.2.0\n",
		}, "v0.2.0", []string{"siblings required at v0.1.0: core requires", "siblings required at v0.2.0: plugins/mock requires", "make set-version"}},
		{"no sibling required", map[string]string{"sdk": sdk}, "", nil},
		{"a framework in core", map[string]string{
			"sdk":  sdk,
			"core": "module github.com/bulwark-iac/bulwark/core\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\nrequire github.com/hashicorp/terraform-plugin-sdk/v2 v2.40.1 // indirect\n",
		}, "v0.1.0", []string{"core/go.mod: requires github.com/hashicorp/terraform-plugin-sdk/v2: the test providers"}},
		{"the frameworks in testproviders", map[string]string{
			"sdk":           sdk,
			"testproviders": "module github.com/bulwark-iac/bulwark/testproviders\nrequire github.com/hashicorp/terraform-plugin-framework v1.19.0\n",
		}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mods []Module
			for dir, text := range c.mods {
				mods = append(mods, mod(t, dir, text))
			}
			version, problems := Problems(mods)
			if version != c.version {
				t.Errorf("version %q, want %q", version, c.version)
			}
			if len(problems) != len(c.want) {
				t.Fatalf("problems %q, want %d like %q", problems, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %d %q, want it to say %q", i, problems[i], w)
				}
			}
		})
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("m/go.mod", []byte("a\nb\nc\n"), []byte("a\nc\nd\n"))
	want := "--- m/go.mod\n+++ m/go.mod (tidy)\n-b\n+d\n"
	if got != want {
		t.Errorf("lineDiff:\n%s\nwant:\n%s", got, want)
	}
}

func TestSetVersion(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"sdk/go.mod":         "module github.com/bulwark-iac/bulwark/sdk\n\ngo 1.26.0\n",
		"core/go.mod":        "module github.com/bulwark-iac/bulwark/core\n\ngo 1.26.0\n\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\n",
		"cmd/bulwark/go.mod": "module github.com/bulwark-iac/bulwark/cmd/bulwark\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/bulwark-iac/bulwark/core v0.1.0\n\tgithub.com/bulwark-iac/bulwark/sdk v0.1.0\n\tgolang.org/x/term v0.46.0\n)\n",
		"go.work":            "go 1.26.0\n\nuse (\n\t./cmd/bulwark\n\t./core\n\t./sdk\n)\n\n// kept\nreplace (\n\tgithub.com/bulwark-iac/bulwark/sdk v0.1.0 => ./sdk\n)\n",
		"examples/x/go.mod":  "module github.com/bulwark-iac/bulwark/examples/x\n\ngo 1.26.0\n\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\n\nreplace github.com/bulwark-iac/bulwark/sdk => ../../sdk\n",
	}
	var mods []Module
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if name != "go.work" {
			mods = append(mods, mod(t, path.Dir(name), text))
		}
	}
	if err := SetVersion(root, mods, "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"core/go.mod":        "require github.com/bulwark-iac/bulwark/sdk v0.2.0\n",
		"cmd/bulwark/go.mod": "\tgithub.com/bulwark-iac/bulwark/core v0.2.0\n\tgithub.com/bulwark-iac/bulwark/sdk v0.2.0\n\tgolang.org/x/term v0.46.0\n",
		"go.work":            "// kept\n",
		"examples/x/go.mod":  "require github.com/bulwark-iac/bulwark/sdk v0.2.0\n\nreplace github.com/bulwark-iac/bulwark/sdk => ../../sdk\n",
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), w) {
			t.Errorf("%s:\n%s\nwant it to hold:\n%s", name, got, w)
		}
	}
	work, _ := os.ReadFile(filepath.Join(root, "go.work"))
	for _, w := range []string{"github.com/bulwark-iac/bulwark/sdk v0.2.0 => ./sdk", "github.com/bulwark-iac/bulwark/core v0.2.0 => ./core"} {
		if !strings.Contains(string(work), w) || strings.Contains(string(work), "v0.1.0") {
			t.Errorf("go.work:\n%s\nwant %q and no v0.1.0", work, w)
		}
	}
	if err := SetVersion(root, mods, "0.2"); err == nil {
		t.Error("SetVersion accepted 0.2")
	}
}
