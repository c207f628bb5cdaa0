package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

// conformanceConfig names one resource of several types, with an in-place
// Update where the type has an updatable attribute.
var conformanceConfig = providertest.Config{
	Resources: []providertest.Resource{
		{Type: "s3_bucket", Name: "storage",
			Config: map[string]any{"bucket": "conformance", "size": 2},
			Update: map[string]any{"bucket": "conformance", "size": 3},
			// The lookup data source finds it by type and name.
			Data: []providertest.Data{{Type: "lookup",
				Config: func(string, map[string]any) map[string]any {
					return map[string]any{"type": "s3_bucket", "name": "storage"}
				},
				Want: func(id string, attrs map[string]any) map[string]any {
					return map[string]any{"id": id, "arn": attrs["arn"], "size": 2.0}
				}}}},
		// Another zone: the mock says the replacement can exist beside
		// the first (its identity is type, name and zone), and the suite
		// checks it can.
		{Type: "dynamodb_table", Name: "database",
			Config:      map[string]any{"table": "t", "hash_key": "id", "zone": "z1"},
			Replacement: map[string]any{"table": "t", "hash_key": "id", "zone": "z2"}},
		{Type: "compute", Name: "compute",
			Config:      map[string]any{"size": 1, "zone": "z1"},
			Update:      map[string]any{"size": 4, "zone": "z1"},
			Replacement: map[string]any{"size": 1, "zone": "z2"}},
		{Type: "network", Name: "network"},
	},
}

func newMock(*testing.T) sdk.Provider { return mockprovider.New() }

// The provider called directly: what sdk.Serve adds is not in the path.
func TestConformanceInProcess(t *testing.T) {
	providertest.Run(t, newMock, conformanceConfig)
}

// The provider behind the SDK's gRPC server, in this process.
func TestConformanceGRPC(t *testing.T) {
	providertest.RunGRPC(t, newMock, conformanceConfig)
}

// The real executable, started as the host starts it.
func TestConformanceExecutable(t *testing.T) {
	// make test names bin/ in BULWARK_TEST_BIN_DIR after make build-demo
	// built bin/plugins/bulwark-provider-mock (cmd/bulwark-provider-mock, the
	// same program as this package under the name the host looks for): run
	// that build, made once for the whole run, instead of building again.
	if dir := os.Getenv("BULWARK_TEST_BIN_DIR"); dir != "" {
		providertest.RunExecutable(t, filepath.Join(dir, "plugins", "bulwark-provider-mock"), conformanceConfig)
		return
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the plugin with")
	}
	bin := filepath.Join(t.TempDir(), "bulwark-provider-mock")
	// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
	if out, err := exec.Command(goBin, "build", "-trimpath", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	providertest.RunExecutable(t, bin, conformanceConfig)
}

// With its world in a folder of its own (world: DIR, a share), the mock
// keeps nothing it needs in its data folder: another machine, with another
// data folder, resumes what one left (Config.Elsewhere).
func TestConformanceSharedWorld(t *testing.T) {
	cfg := conformanceConfig
	cfg.ProviderConfig = map[string]any{"world": filepath.Join(t.TempDir(), "world")}
	cfg.Elsewhere = true
	providertest.RunGRPC(t, newMock, cfg)
}
