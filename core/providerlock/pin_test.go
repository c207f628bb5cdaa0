package providerlock

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// isolate keeps a test's package search to its own folders: no mirror,
// cache or provider folder of the machine's.
func isolate(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("plugins are .exe files there")
	}
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("XDG_DATA_DIRS", filepath.Join(dir, "xdgdirs"))
	t.Setenv(tfinstall.EnvPluginCache, "")
	t.Setenv(tfinstall.EnvMirror, "")
	t.Setenv(tfinstall.EnvProviderDir, filepath.Join(dir, "providers"))
	t.Setenv(tfinstall.EnvTrustedKey, "")
	t.Chdir(dir)
	return dir
}

func writeExe(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n# "+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func loadSpec(t *testing.T, file, text string) *spec.Spec {
	t.Helper()
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// Lock pins the plugins a spec uses beside it, keeps what the lock already
// pinned, and reports each pin.
func TestLockPinsPluginsKeepingOtherEntries(t *testing.T) {
	dir := isolate(t)
	plugins := filepath.Join(dir, "plugins")
	writeExe(t, filepath.Join(plugins, "bulwark-provider-mock"), "mock")
	sp := loadSpec(t, filepath.Join(dir, "stack.yaml"), "version: 1\nstack: s\nproviders:\n  mock: {}\nresources:\n  - name: a\n    type: generic\n")
	other := Entry{SHA256: string(bytes.Repeat([]byte("a"), 64))}
	if err := Write(PathFor(sp.File), &File{Providers: map[string]Entry{"local": other}}); err != nil {
		t.Fatal(err)
	}
	var told []Pin
	path, err := Lock(context.Background(), sp, LockOptions{PluginDirs: []string{plugins}, UnpackDir: filepath.Join(dir, "unpacked"), Pinned: func(p Pin) { told = append(told, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, FileName) {
		t.Errorf("lock written at %s", path)
	}
	lf, err := Read(path)
	if err != nil || lf == nil {
		t.Fatalf("read back: %v %v", lf, err)
	}
	if lf.Providers["local"] != other {
		t.Errorf("the entry already pinned was not kept: %+v", lf.Providers)
	}
	if len(told) != 1 || told[0].Source != "mock" || told[0].SHA256 != lf.Providers["mock"].SHA256 || len(told[0].SHA256) != 64 {
		t.Errorf("reported %+v, lock %+v", told, lf.Providers)
	}
}

// Install --local pins the Terraform package found; the same version with
// other bytes is refused, naming both hashes, and the lock is not touched.
func TestInstallLocalRefusesOtherBytesAtALockedVersion(t *testing.T) {
	dir := isolate(t)
	plugins := filepath.Join(dir, "plugins")
	exe := filepath.Join(plugins, "terraform-provider-widget_v1.2.0")
	writeExe(t, exe, "widget 1.2.0")
	lockPath := filepath.Join(dir, "bulwark.lock")
	var told []Pin
	o := InstallOptions{LockPath: lockPath, Local: true, PluginDirs: []string{plugins}, Pinned: func(p Pin) { told = append(told, p) }}
	if err := InstallSources(context.Background(), []string{"acme/widget@~> 1.0"}, o); err != nil {
		t.Fatal(err)
	}
	lf, err := Read(lockPath)
	if err != nil || lf == nil {
		t.Fatalf("read back: %v %v", lf, err)
	}
	e, ok := lf.Terraform["registry.terraform.io/acme/widget"]
	if !ok || e.Version != "1.2.0" || e.Constraints != "~> 1.0" || len(e.Hashes) == 0 {
		t.Fatalf("lock entry %+v (%v)", e, lf.Terraform)
	}
	if len(told) != 1 || told[0].Version != "1.2.0" || told[0].Trust == "" {
		t.Errorf("reported %+v", told)
	}
	before, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}

	writeExe(t, exe, "other bytes under the same version")
	err = InstallSources(context.Background(), []string{"acme/widget"}, o)
	var me *HashMismatchError
	if !errors.As(err, &me) || me.Version != "1.2.0" || len(me.Locked) == 0 || len(me.Found) == 0 {
		t.Fatalf("other bytes at a locked version: %v", err)
	}
	after, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the lock changed on a refused pin:\n%s\nwas\n%s", after, before)
	}
}

// From a spec, a version the lock pins that the constraint does not allow
// is said, and a version it allows pinned in its place; a spec without
// Terraform providers installs nothing.
func TestInstallSpecRepinsOutsideConstraint(t *testing.T) {
	dir := isolate(t)
	plugins := filepath.Join(dir, "plugins")
	writeExe(t, filepath.Join(plugins, "terraform-provider-widget_v1.2.0"), "widget 1.2.0")
	sp := loadSpec(t, filepath.Join(dir, "stack.yaml"), "version: 1\nstack: s\nproviders:\n  w:\n    source: acme/widget\n    version: \"~> 1.0\"\nresources: []\n")
	lockPath := PathFor(sp.File)
	if err := Write(lockPath, &File{Providers: map[string]Entry{}, Terraform: map[string]TerraformEntry{
		"registry.terraform.io/acme/widget": {Version: "2.0.0", Hashes: []string{"h1:AAAA"}},
	}}); err != nil {
		t.Fatal(err)
	}
	var outside []*PinOutsideConstraintError
	o := InstallOptions{LockPath: lockPath, Local: true, PluginDirs: []string{plugins}, Repinning: func(e *PinOutsideConstraintError) { outside = append(outside, e) }}
	if err := InstallSpec(context.Background(), sp, o); err != nil {
		t.Fatal(err)
	}
	if len(outside) != 1 || outside[0].Pinned != "2.0.0" || outside[0].Provider != "w" {
		t.Errorf("told of %+v", outside)
	}
	lf, err := Read(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if v := lf.Terraform["registry.terraform.io/acme/widget"].Version; v != "1.2.0" {
		t.Errorf("pinned %s, want 1.2.0", v)
	}

	own := loadSpec(t, filepath.Join(dir, "own.yaml"), "version: 1\nstack: s\nproviders:\n  mock: {}\nresources: []\n")
	if err := InstallSpec(context.Background(), own, o); err == nil {
		t.Error("a spec without Terraform providers installed something")
	}
}
