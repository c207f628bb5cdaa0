package release

import (
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
		{"two versions", map[string]string{
			"sdk":          sdk,
			"core":         "module github.com/bulwark-iac/bulwark/core\nrequire github.com/bulwark-iac/bulwark/sdk v0.1.0\n",
			"plugins/mock": "module github.com/bulwark-iac/bulwark/plugins/mock\nrequire github.com/bulwark-iac/bulwark/sdk v0.2.0\n",
		}, "v0.2.0", []string{"siblings required at v0.1.0: core requires", "siblings required at v0.2.0: plugins/mock requires", "make set-version"}},
		{"no sibling required", map[string]string{"sdk": sdk}, "", nil},
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
