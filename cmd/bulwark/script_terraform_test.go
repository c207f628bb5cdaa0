package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// TestScriptsTerraform runs the scripts of testdata/terraform: providers
// built for Terraform (testproviders: fwtest on terraform-plugin-framework,
// protocol 6; sdktest on terraform-plugin-sdk/v2, protocol 5) driven by the
// real bulwark binary, found in a filesystem mirror ($TF_MIRROR, Terraform's
// unpacked layout) given as --plugin-dir.
func TestScriptsTerraform(t *testing.T) {
	runScripts(t, "testdata/terraform", fileScripts)
}

var (
	tfMirrorOnce sync.Once
	tfMirrorDir  string
	tfMirrorErr  error
)

// tfMirrorVersion is the version the test providers are built at.
const tfMirrorVersion = "0.1.0"

// buildTerraformMirror builds the test providers once into a mirror folder
// (registry.terraform.io/bulwark/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION)
// and returns it. They are built by package path from the workspace, so
// this module does not require the providers' frameworks.
func buildTerraformMirror(t *testing.T) string {
	tfMirrorOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bulwark-e2e-tfmirror-")
		if err != nil {
			tfMirrorErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		for _, typ := range []string{"fwtest", "sdktest"} {
			exe := filepath.Join(dir, "registry.terraform.io", "bulwark", typ, tfMirrorVersion, runtime.GOOS+"_"+runtime.GOARCH,
				"terraform-provider-"+typ+"_v"+tfMirrorVersion)
			// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
			cmd := exec.Command("go", "build", "-trimpath", "-o", exe, "github.com/bulwark-iac/bulwark/testproviders/cmd/terraform-provider-"+typ)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				tfMirrorErr = fmt.Errorf("build terraform-provider-%s: %v\n%s", typ, err, out)
				return
			}
		}
		tfMirrorDir = dir
	})
	if tfMirrorErr != nil {
		t.Fatal(tfMirrorErr)
	}
	return tfMirrorDir
}
