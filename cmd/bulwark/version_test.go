package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadVersion(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	cases := []struct {
		name                 string
		bi                   *debug.BuildInfo
		ldVersion, ldCommit  string
		version, commit      string
		modified             bool
		goVersion, platform_ string
	}{
		{
			name:    "go install from a proxy: the module version, no commit",
			bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/bulwark-iac/bulwark/cmd/bulwark", Version: "v0.1.0"}, Settings: settings("GOOS", "darwin", "GOARCH", "arm64")},
			version: "v0.1.0", goVersion: "go1.26.8", platform_: "darwin/arm64",
		},
		{
			name:    "go install of a commit: the pseudo-version names the revision",
			bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20261201092755-815311207daa"}},
			version: "v0.1.1-0.20261201092755-815311207daa", commit: "815311207daa", goVersion: "go1.26.8", platform_: platform,
		},
		{
			name: "built in a checkout: devel, the VCS revision and time",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: settings("vcs", "git", "vcs.revision", "815311207daa75c85a6f72e25be06fc824b2963b", "vcs.time", "2026-12-01T09:27:55Z", "vcs.modified", "false", "GOOS", "linux", "GOARCH", "amd64")},
			version: "devel", commit: "815311207daa75c85a6f72e25be06fc824b2963b", goVersion: "go1.26.8", platform_: "linux/amd64",
		},
		{
			name: "built in a checkout with edits: modified",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201092755-815311207daa+dirty"},
				Settings: settings("vcs.revision", "815311207daa75c85a6f72e25be06fc824b2963b", "vcs.modified", "true")},
			version: "v0.0.0-20261201092755-815311207daa+dirty", commit: "815311207daa75c85a6f72e25be06fc824b2963b", modified: true, goVersion: "go1.26.8", platform_: platform,
		},
		{
			name:    "no VCS information (-buildvcs=false, a test binary)",
			bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			version: "devel", goVersion: "go1.26.8", platform_: platform,
		},
		{
			name:    "no build information at all",
			version: "devel", goVersion: runtime.Version(), platform_: platform,
		},
		{
			name: "release archive: the link-time values win",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: settings("vcs.revision", "815311207daa75c85a6f72e25be06fc824b2963b", "GOOS", "darwin", "GOARCH", "amd64")},
			ldVersion: "v0.1.0", ldCommit: "0123456789abcdef0123456789abcdef01234567",
			version: "v0.1.0", commit: "0123456789abcdef0123456789abcdef01234567", goVersion: "go1.26.8", platform_: "darwin/amd64",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := readVersion(c.bi, c.ldVersion, c.ldCommit)
			if v.Version != c.version || v.Commit != c.commit || v.Modified != c.modified || v.GoVersion != c.goVersion || v.Platform != c.platform_ {
				t.Errorf("readVersion = %+v\nwant version %q commit %q modified %v go %q platform %q", v, c.version, c.commit, c.modified, c.goVersion, c.platform_)
			}
			if v.FormatVersion != "1.0" || len(v.ProviderProtocols) == 0 {
				t.Errorf("format_version %q, protocols %v", v.FormatVersion, v.ProviderProtocols)
			}
		})
	}
}

func TestVersionOutput(t *testing.T) {
	v := buildVersion{FormatVersion: "1.0", Version: "v0.1.0", Commit: "815311207daa", CommitTime: "2026-12-01T09:27:55Z",
		Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64", ProviderProtocols: []int{1}}
	var text bytes.Buffer
	if err := v.writeText(&text); err != nil {
		t.Fatal(err)
	}
	want := "bulwark v0.1.0\n" +
		"  commit:            815311207daa (2026-12-01T09:27:55Z, modified)\n" +
		"  go:                go1.26.8 linux/amd64\n" +
		"  provider protocol: 1\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	text.Reset()
	if err := (buildVersion{Version: "devel", GoVersion: "go1.26.8", Platform: "linux/amd64", ProviderProtocols: []int{1}}).writeText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "commit:            unknown\n") {
		t.Errorf("no commit should read unknown:\n%s", text.String())
	}

	var out bytes.Buffer
	if err := v.writeJSON(&out); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	wantKeys := []string{"format_version", "version", "commit", "commit_time", "modified", "go_version", "platform", "provider_protocols"}
	if len(got) != len(wantKeys) {
		t.Errorf("keys %v, want %v", got, wantKeys)
	}
	for _, k := range wantKeys {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, out.String())
		}
	}
	if got["version"] != "v0.1.0" || got["modified"] != true || got["format_version"] != "1.0" {
		t.Errorf("values: %s", out.String())
	}
}
