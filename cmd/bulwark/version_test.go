package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestMakeBuildVersionFromGitDescribe proves that `make build` stamps the
// version git describe gives (not devel): the Makefile's command for
// bin/bulwark (make -n) carries it, and a bulwark built with that command's
// flags reports it, with the commit, in `bulwark version --json`.
func TestMakeBuildVersionFromGitDescribe(t *testing.T) {
	for _, tool := range []string{"make", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: %v", tool, err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Skipf("git %s: %v (not a git checkout?)", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	want := strings.TrimPrefix(git("describe", "--tags", "--always", "--dirty", "--match", "cmd/bulwark/v*"), "cmd/bulwark/")
	commit := git("rev-parse", "HEAD")

	// What make would run, without running it; the environment of a make
	// that runs this test (make test) is not passed on.
	mk := exec.Command("make", "-n", "build-demo")
	mk.Dir = root
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			mk.Env = append(mk.Env, kv)
		}
	}
	out, err := mk.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build-demo: %v\n%s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), "-o bin/bulwark ./cmd/bulwark") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("make -n build-demo builds no bin/bulwark:\n%s", out)
	}
	m := regexp.MustCompile(`-ldflags "([^"]*)"`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("make builds bulwark without -ldflags: %s", line)
	}
	ldflags := m[1]
	if !strings.Contains(ldflags, "-X main.version="+want) || !strings.Contains(ldflags, "-X main.commit="+commit) {
		t.Fatalf("make builds bulwark with -ldflags %q, want -X main.version=%s and -X main.commit=%s", ldflags, want, commit)
	}

	bin := filepath.Join(t.TempDir(), "bulwark")
	// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err = exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("bulwark version --json: %v", err)
	}
	var v struct{ Version, Commit string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Version != want || v.Version == "devel" || v.Commit != commit {
		t.Errorf("bulwark version: version %q commit %q, want %q and %q", v.Version, v.Commit, want, commit)
	}
	out, err = exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("bulwark version: %v", err)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); first != "bulwark "+want {
		t.Errorf("bulwark version prints %q, want %q", first, "bulwark "+want)
	}
}
