// Package mirror builds the test providers (fwtest, sdktest) into a
// Terraform filesystem mirror, unpacked layout:
//
//	DIR/registry.terraform.io/bulwark/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION
//
// which Terraform, OpenTofu and bulwark all find offline. It imports only
// the standard library, so a test elsewhere in the repository (bulwark's
// end-to-end scripts) can use it without the providers' frameworks entering
// its module's build.
package mirror

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
)

const (
	// Host and Namespace are the first parts of the providers' source
	// addresses.
	Host      = "registry.terraform.io"
	Namespace = "bulwark"
	// Version is the version the providers are built at by default.
	Version = "0.1.0"
)

// Provider is one of the test providers.
type Provider struct {
	Type     string // fwtest, sdktest
	Package  string // the Go package of its executable
	Protocol int    // the plugin protocol it speaks
}

// Source is the provider's source address, e.g. registry.terraform.io/bulwark/fwtest.
func (p Provider) Source() string { return Host + "/" + Namespace + "/" + p.Type }

// Providers returns the test providers.
func Providers() []Provider {
	const pkg = "github.com/bulwark-iac/bulwark/testproviders/cmd/terraform-provider-"
	return []Provider{
		{Type: "fwtest", Package: pkg + "fwtest", Protocol: 6},
		{Type: "sdktest", Package: pkg + "sdktest", Protocol: 5},
	}
}

// BinaryPath is where the mirror in dir holds provider p at version for
// this machine's OS and architecture.
func BinaryPath(dir string, p Provider, version string) string {
	return filepath.Join(dir, Host, Namespace, p.Type, version, runtime.GOOS+"_"+runtime.GOARCH,
		"terraform-provider-"+p.Type+"_v"+version)
}

// Build builds every test provider at Version into a mirror in dir and
// returns dir's absolute path. See BuildVersion.
func Build(ctx context.Context, dir string) (string, error) {
	return BuildVersion(ctx, dir, Version)
}

// BuildVersion builds every test provider into a mirror in dir, stamped
// with version (its folder and main.version), and returns dir's absolute
// path. It runs `go build` in the current folder, so the caller must be in
// a module that can see the testproviders module: anywhere in bulwark's
// workspace (go.work), or a module that requires it.
func BuildVersion(ctx context.Context, dir, version string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build test providers: %w", err)
	}
	for _, p := range Providers() {
		out := BinaryPath(abs, p, version)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return "", err
		}
		// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
		cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath",
			"-ldflags", "-X main.version="+version, "-o", out, p.Package)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("go build %s: %w\n%s", p.Package, err, stderr.Bytes())
		}
	}
	return abs, nil
}

// CLIConfig is a Terraform CLI configuration (the file TF_CLI_CONFIG_FILE
// names) that installs every provider from the mirror in dir and nothing
// from the network.
func CLIConfig(dir string) string {
	return "provider_installation {\n  filesystem_mirror {\n    path = " + strconv.Quote(dir) + "\n  }\n}\n"
}

// ShortSource is the short source address Terraform configurations name the
// provider by, e.g. bulwark/fwtest.
func (p Provider) ShortSource() string { return Namespace + "/" + p.Type }
