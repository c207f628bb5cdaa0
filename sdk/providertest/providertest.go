package providertest

import (
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Config says what the suite configures and creates.
type Config struct {
	// ProviderConfig is passed to Configure.
	ProviderConfig map[string]any
	// DataDir is the data folder passed to Configure (made if missing). ""
	// means a fresh t.TempDir() for each run of the suite; every provider
	// instance of one run (the restart check makes a second one) gets the
	// same folder, as the host gives it between runs.
	DataDir string
	// Resources are created, checked and deleted one at a time, in order. At
	// least one.
	Resources []Resource
	// Elsewhere says the provider keeps nothing it needs in its data folder
	// (what it manages lives elsewhere: a cloud, a shared `world: DIR`), so
	// another machine can resume what one left. The suite then checks that
	// an instance on another, empty data folder finds by idempotency key
	// what the Create made, and reads, updates and deletes it with nothing
	// but what the host keeps in its state (the id, the attributes and the
	// provider's private data).
	Elsewhere bool
}

// Resource is one resource the suite creates.
type Resource struct {
	Type, Name string
	// Config is the resource's configuration; it must be valid for the
	// provider's schema.
	Config map[string]any
	// Update, when set, is a configuration Update must accept in place (it
	// changes no force_new attribute). The update check is skipped when nil.
	Update map[string]any
	// Replacement, when set, is a configuration a replace of the resource
	// would make (it changes a force_new attribute). When the type's
	// sdk.Coexistence says an instance so configured can exist beside the
	// first, the suite checks that it really can: a Create of it under
	// another key succeeds while the first exists, and both stay readable,
	// each by its own id. A type that says they cannot is not checked (the
	// host then deletes first, always safe).
	Replacement map[string]any
	// Data are data source reads that must find the resource once it
	// exists (checked by read_data); none: not checked.
	Data []Data
}

// Data is one read of a data source (a provider that implements
// sdk.DataReader) that must find a resource the suite made.
type Data struct {
	// Type is the data source's type.
	Type string
	// Config is the data config, given the resource's id and attributes
	// as Create and Read returned them (a lookup by name, by id).
	Config func(id string, attrs map[string]any) map[string]any
	// Want are attributes the read must answer with these values (the
	// resource's id, its name); the read must answer every argument it
	// was given and every result its schema declares, whatever Want says.
	Want func(id string, attrs map[string]any) map[string]any
}

// Run checks a provider against the provider contract, calling it directly
// in the test's process. newProvider returns a fresh instance; the suite
// calls it once for the run and once more per Resource (the restart check
// uses a second instance on the same data folder), with the test that
// instance lives for. What sdk.Serve guarantees in front of a provider is
// not in the path: the checks that rely on it (rejecting an unknown
// attribute, refusing a protected Delete) are skipped with a log saying why.
// Use RunGRPC to check those too.
func Run(t *testing.T, newProvider func(t *testing.T) sdk.Provider, cfg Config) {
	t.Helper()
	run(t, cfg, false, func(t *testing.T) (sdk.Provider, sdk.Provider) {
		return instance(t, newProvider), nil
	})
}

// RunGRPC runs the suite in the test's process, through exactly what
// sdk.Serve serves: the provider is wrapped in the SDK's gRPC server (see
// ServeGRPC) and called over a real gRPC connection. It also checks that the
// schema survives the round trip.
func RunGRPC(t *testing.T, newProvider func(t *testing.T) sdk.Provider, cfg Config) {
	t.Helper()
	run(t, cfg, true, func(t *testing.T) (sdk.Provider, sdk.Provider) {
		p := instance(t, newProvider)
		return ServeGRPC(t, p), p
	})
}

// ServeGRPC serves p with the SDK's gRPC server (what sdk.Serve serves, so
// its guarantees apply) over a gRPC connection in this process, and returns
// the host side of the connection. Both are closed when t ends.
func ServeGRPC(t *testing.T, p sdk.Provider) sdk.Provider {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{sdk.PluginName: &sdk.GRPCProviderPlugin{Impl: p}})
	// Close asks the server, through go-plugin's controller, to stop.
	t.Cleanup(func() { client.Close() })
	return dispense(t, client)
}

// instance calls newProvider and refuses a nil provider.
func instance(t *testing.T, newProvider func(t *testing.T) sdk.Provider) sdk.Provider {
	t.Helper()
	p := newProvider(t)
	if p == nil {
		t.Fatal("providertest: newProvider returned nil")
	}
	return p
}

// dispense returns the provider a go-plugin client serves.
func dispense(t *testing.T, client plugin.ClientProtocol) sdk.Provider {
	t.Helper()
	raw, err := client.Dispense(sdk.PluginName)
	if err != nil {
		t.Fatalf("providertest: dispense %q: %v", sdk.PluginName, err)
	}
	p, ok := raw.(sdk.Provider)
	if !ok {
		t.Fatalf("providertest: dispensed %T, not an sdk.Provider", raw)
	}
	return p
}
