package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

// conformanceConfig names one resource of several types (one in a folder
// of its own choosing), with an in-place Update where the type has an
// updatable attribute. The root is the data folder.
var conformanceConfig = providertest.Config{
	Resources: []providertest.Resource{
		{Type: "s3_bucket", Name: "storage",
			Config: map[string]any{"bucket": "conformance", "size": 2},
			Update: map[string]any{"bucket": "conformance", "size": 3},
			// The file data source reads the object it was seeded with.
			Data: []providertest.Data{{Type: "file",
				Config: func(string, map[string]any) map[string]any {
					return map[string]any{"path": "s3_bucket/storage/objects/seed.txt"}
				},
				Want: func(string, map[string]any) map[string]any {
					return map[string]any{"path": "s3_bucket/storage/objects/seed.txt"}
				}}}},
		{Type: "dynamodb_table", Name: "database",
			Config: map[string]any{"table": "t", "hash_key": "id"}},
		{Type: "generic", Name: "placed",
			Config: map[string]any{"path": "custom/place", "size": 1, "zone": "z1"},
			Update: map[string]any{"path": "custom/place", "size": 5, "zone": "z1"}},
		{Type: "network", Name: "network"},
	},
}

func newLocal(*testing.T) sdk.Provider { return localprovider.New() }

// The provider called directly: what sdk.Serve adds is not in the path.
func TestConformanceInProcess(t *testing.T) {
	providertest.Run(t, newLocal, conformanceConfig)
}

// The provider behind the SDK's gRPC server, in this process.
func TestConformanceGRPC(t *testing.T) {
	providertest.RunGRPC(t, newLocal, conformanceConfig)
}

// With an explicit root instead of the data folder.
func TestConformanceGRPCWithRoot(t *testing.T) {
	cfg := conformanceConfig
	cfg.ProviderConfig = map[string]any{"root": filepath.Join(t.TempDir(), "root")}
	providertest.RunGRPC(t, newLocal, cfg)
}

// The real executable, started as the host starts it.
func TestConformanceExecutable(t *testing.T) {
	// make test names bin/ in BULWARK_TEST_BIN_DIR after make build-demo
	// built bin/plugins/bulwark-provider-local (cmd/bulwark-provider-local, the
	// same program as this package under the name the host looks for): run
	// that build, made once for the whole run, instead of building again.
	if dir := os.Getenv("BULWARK_TEST_BIN_DIR"); dir != "" {
		providertest.RunExecutable(t, filepath.Join(dir, "plugins", "bulwark-provider-local"), conformanceConfig)
		return
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the plugin with")
	}
	bin := filepath.Join(t.TempDir(), "bulwark-provider-local")
	// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
	if out, err := exec.Command(goBin, "build", "-trimpath", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	providertest.RunExecutable(t, bin, conformanceConfig)
}

// With a root of its own (a share), the local provider keeps nothing it
// needs in its data folder (its pending record is in the root): another
// machine, with another data folder, resumes what one left
// (Config.Elsewhere).
func TestConformanceSharedRoot(t *testing.T) {
	cfg := conformanceConfig
	cfg.ProviderConfig = map[string]any{"root": filepath.Join(t.TempDir(), "root")}
	cfg.Elsewhere = true
	providertest.RunGRPC(t, newLocal, cfg)
}
