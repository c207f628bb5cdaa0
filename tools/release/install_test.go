package release

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestInstallFromFileProxy shows that `go install` works from a module
// proxy, with no network: the working tree's modules are served by a
// proxy in a folder at the version they require each other at, the
// third-party modules by the module cache (itself a proxy layout), and
// `go install …@VERSION` runs outside any workspace with a fresh module
// cache, as on a user's machine. bulwark goes into GOBIN, the mock and local
// providers into GOBIN/plugins (the folder beside the executable that the
// plugin lookup searches); then the installed binaries run: version, the
// providers found, and an apply on mock.
//
// It takes a minute or more (the go command builds everything once with
// -trimpath; later runs reuse the build cache), so it runs when
// BULWARK_TEST_INSTALL=1 (make check-install, CI). BULWARK_TEST_INSTALL_AWS=1
// installs the aws provider too (its SDK takes minutes to compile).
func TestInstallFromFileProxy(t *testing.T) {
	if os.Getenv("BULWARK_TEST_INSTALL") != "1" {
		t.Skip("set BULWARK_TEST_INSTALL=1 (make check-install) to install bulwark from a proxy in a folder")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-15*time.Second))
	}
	defer cancel()

	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mods, err := Modules(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	version, problems := Problems(mods)
	if len(problems) > 0 {
		t.Fatalf("the modules cannot install from a proxy:\n%s", strings.Join(problems, "\n"))
	}
	// Registered before t.TempDir, so it runs after the folder's removal
	// (a module cache of its own: thousands of files).
	begin := time.Now()
	t.Cleanup(func() { t.Logf("in all, the temporary folder's removal included: %.1fs", time.Since(begin).Seconds()) })
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	start := time.Now()
	if err := BuildProxy(ctx, root, mods, version, proxy, time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Logf("the proxy in a folder: %.1fs", time.Since(start).Seconds())
	realCache := goEnv(t, goTool, "GOMODCACHE")
	buildCache := goEnv(t, goTool, "GOCACHE")

	gobin := filepath.Join(tmp, "bin")
	plugins := filepath.Join(gobin, "plugins")
	env := cleanEnv(
		"GOWORK=off",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(realCache, "cache", "download")),
		// bulwark's modules at this version exist only in the folder, and
		// the checksum database needs the network: off. (go install …@VERSION
		// reads no go.sum, so nothing is verified here; make check-tidy
		// checks every go.sum against the module cache.)
		"GONOSUMDB=github.com/bulwark-iac/bulwark",
		"GOSUMDB=off",
		"GOFLAGS=-mod=mod -modcacherw -trimpath",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOTOOLCHAIN=local",
		"GOCACHE="+buildCache, // shared: a second run compiles almost nothing
		"HOME="+filepath.Join(tmp, "home"),
		"BULWARK_SECRETS_KEY=zub5eUOVMYwrpGXCD8hakPTtVxeVeeIDOj2BZLb9pqg=",
	)
	install := func(bin, pkg string) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, goTool, "install", pkg+"@"+version)
		cmd.Dir = tmp // no go.mod, no go.work: as a user types it
		cmd.Env = append(append([]string(nil), env...), "GOBIN="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install %s@%s: %v\n%s", pkg, version, err, out)
		}
		t.Logf("go install %s@%s: %.1fs", pkg, version, time.Since(start).Seconds())
	}
	t.Logf("before the first install: %.1fs", time.Since(begin).Seconds())
	install(gobin, Prefix+"cmd/bulwark")
	install(gobin, Prefix+"cmd/bulwark/cmd/bulwark-graphviz")
	providers := []string{"mock", "local"}
	if os.Getenv("BULWARK_TEST_INSTALL_AWS") == "1" {
		providers = append(providers, "aws")
	}
	for _, p := range providers {
		install(plugins, Prefix+"plugins/"+p+"/cmd/bulwark-provider-"+p)
	}

	// The module's root package installs too, under the module's last
	// element (which the plugin lookup does not find: hence cmd/bulwark-provider-NAME).
	plain := filepath.Join(tmp, "plain")
	install(plain, Prefix+"plugins/mock")
	if _, err := os.Stat(filepath.Join(plain, "mock")); err != nil {
		t.Errorf("go install …/plugins/mock@%s: %v", version, err)
	}

	work := filepath.Join(tmp, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	bulwark := filepath.Join(gobin, "bulwark")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bulwark, args...)
		cmd.Dir = work
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bulwark %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
		Platform  string `json:"platform"`
	}
	if out := run("version", "--json"); json.Unmarshal([]byte(out), &v) != nil || v.Version != version ||
		v.GoVersion != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("bulwark version --json = %+v, want version %s, %s, %s/%s:\n%s", v, version, runtime.Version(), runtime.GOOS, runtime.GOARCH, out)
	}
	if out := run("version"); !strings.HasPrefix(out, "bulwark "+version+"\n") {
		t.Errorf("bulwark version:\n%s", out)
	}
	// No --plugin-dir: found in the plugins folder beside the executable.
	out := run("providers")
	for _, p := range providers {
		if !strings.Contains(out, filepath.Join(plugins, "bulwark-provider-"+p)) {
			t.Errorf("bulwark providers does not list %s from %s:\n%s", p, plugins, out)
		}
	}

	spec := filepath.Join(work, "stack.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nstack: installed\nproviders:\n  mock: {}\nresources:\n  - name: net\n    type: network\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(tmp, "state")
	run("--plugin-dir", plugins, "--state-dir", state, "apply", "--yes", spec)
	// Exit 0, not 2: the applied stack has nothing left to change.
	run("--plugin-dir", plugins, "--state-dir", state, "plan", spec, "--detailed-exitcode")
	// bulwark-graphviz, installed into the same GOBIN, lays the graph out.
	if svg := run("graph", spec, "--format", "svg"); !strings.Contains(svg, "<title>net</title>") {
		t.Errorf("bulwark graph --format svg, bulwark-graphviz beside it:\n%s", svg)
	}
}

func goEnv(t *testing.T, goTool, key string) string {
	t.Helper()
	out, err := exec.Command(goTool, "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

// cleanEnv is the environment without the go command's settings a
// developer may have, plus set.
func cleanEnv(set ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GO") || k == "HOME" || strings.HasPrefix(k, "BULWARK_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, set...)
}
