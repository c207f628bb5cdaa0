package providerlock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// Describe says of each Terraform provider whether the lock pins the
// bytes found, and returns as its error what a run would refuse.
func TestDescribeLockStates(t *testing.T) {
	dir := isolate(t)
	plugins := filepath.Join(dir, "plugins")
	exe := filepath.Join(plugins, "terraform-provider-widget_v1.2.0")
	writeExe(t, exe, "widget 1.2.0")
	sp := loadSpec(t, filepath.Join(dir, "stack.yaml"), "version: 1\nstack: s\nproviders:\n  w:\n    source: acme/widget\n    version: \"~> 1.0\"\n  mock: {}\nresources: []\n")
	lockPath := PathFor(sp.File)
	ctx := context.Background()
	describe := func() (Status, error) {
		t.Helper()
		lf, err := Read(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Describe(ctx, sp, DescribeOptions{Lock: lf, LockPath: lockPath, PluginDirs: []string{plugins}, UnpackDir: filepath.Join(dir, "unpacked")})
		if len(got) != 1 || got[0].Name != "w" || got[0].Source != "registry.terraform.io/acme/widget" {
			t.Fatalf("described %+v", got)
		}
		return got[0], err
	}

	if st, err := describe(); err != nil || st.Lock != StatusNotLocked || st.Version != "1.2.0" || st.Path != exe {
		t.Errorf("without a lock: %+v, %v", st, err)
	}
	if err := InstallSpec(ctx, sp, InstallOptions{LockPath: lockPath, Local: true, PluginDirs: []string{plugins}}); err != nil {
		t.Fatal(err)
	}
	if st, err := describe(); err != nil || st.Lock != StatusLocked || st.LockVersion != "1.2.0" {
		t.Errorf("pinned: %+v, %v", st, err)
	}

	writeExe(t, exe, "other bytes under the same version")
	st, err := describe()
	var ie *tfinstall.IntegrityError
	if st.Lock != StatusMismatch || !errors.As(err, &ie) || st.Err == nil {
		t.Errorf("other bytes: %+v, %v", st, err)
	}

	if err := Write(lockPath, &File{Providers: map[string]Entry{}, Terraform: map[string]TerraformEntry{
		"registry.terraform.io/acme/widget": {Version: "2.0.0", Hashes: []string{"h1:AAAA"}},
	}}); err != nil {
		t.Fatal(err)
	}
	st, err = describe()
	var pe *PinOutsideConstraintError
	if st.Lock != StatusOutsideConstraint || !errors.As(err, &pe) || st.LockVersion != "2.0.0" {
		t.Errorf("pinned outside the constraint: %+v, %v", st, err)
	}
}
