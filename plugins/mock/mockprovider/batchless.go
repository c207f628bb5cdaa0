package mockprovider

import (
	"fmt"
	"os"

	"github.com/bulwark-iac/bulwark/sdk"
)

// EnvBatch is the environment variable the mock's executables read at
// start: "off" serves the provider WithoutBatches returns; "on" or unset,
// the mock as New makes it. The host passes its environment to its
// plugins, so BULWARK_MOCK_BATCH=off bulwark apply … runs on the mock the
// way a real provider is.
const EnvBatch = "BULWARK_MOCK_BATCH"

// unbatchable is every interface of the mock's but the batch calls: what a
// real provider (aws, a Terraform provider) offers, and whether its
// validation is its schema.
type unbatchable interface {
	sdk.Provider
	sdk.Importer
	sdk.Releaser
	sdk.Closer
	sdk.DataReader
	sdk.SchemaValidator
}

// unbatched promotes only unbatchable's methods, so sdk.Serve finds no
// sdk.BatchReader, sdk.BatchValidator or sdk.BatchCreator on it and
// declares no ReadMany, ValidateMany or CreateMany: the host then makes one
// Read, ValidateResource and Create per resource.
type unbatched struct{ unbatchable }

// WithoutBatches returns the mock p (a provider New returned) with its
// batch calls hidden: the same provider, the same world and faults, but
// only sdk.Provider, sdk.Importer, sdk.Releaser, sdk.Closer and
// sdk.DataReader, as real providers are. The benchmark harness measures the engine on it, since
// the batch calls hide how many calls a step makes. It panics when p is
// not the mock: the wrapper must not claim interfaces p lacks.
func WithoutBatches(p sdk.Provider) sdk.Provider {
	u, ok := p.(unbatchable)
	if !ok {
		panic(fmt.Sprintf("mockprovider.WithoutBatches: %T is not the mock provider", p))
	}
	return unbatched{u}
}

// FromEnv returns p as EnvBatch's value asks, getenv reading it (os.Getenv
// in the executables): p itself for "on" or "", WithoutBatches(p) for
// "off"; any other value is an error, so a typo is not measured as the
// batching mock.
func FromEnv(p sdk.Provider, getenv func(string) string) (sdk.Provider, error) {
	switch v := getenv(EnvBatch); v {
	case "", "on":
		return p, nil
	case "off":
		return WithoutBatches(p), nil
	default:
		return nil, fmt.Errorf("%s=%q: want on or off", EnvBatch, v)
	}
}

// Main is the mock provider's executable (both main packages that build
// it): the mock, without its batch calls when EnvBatch says so, with no
// validation of its own when EnvValidate says so, logging its calls and
// holding those EnvCalls and EnvHold ask for, served to the host; a bad
// EnvBatch, EnvValidate, EnvCalls or EnvHold exits 2.
func Main() {
	opts, err := ValidationFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bulwark-provider-mock: %v\n", err)
		os.Exit(2)
	}
	logOpts, err := CallLogFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bulwark-provider-mock: %v\n", err)
		os.Exit(2)
	}
	holdOpts, err := HoldFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bulwark-provider-mock: %v\n", err)
		os.Exit(2)
	}
	opts = append(append(opts, logOpts...), holdOpts...)
	p, err := FromEnv(New(opts...), os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bulwark-provider-mock: %v\n", err)
		os.Exit(2)
	}
	sdk.Serve(p)
}

// EnvValidate is the environment variable the mock's executables read at
// start: "schema" makes the mock WithSchemaValidation (no validation of its
// own, declared, so the host makes no ValidateResource call); "own" or
// unset, the mock with its own tags check, which the host asks about once
// per distinct config. BULWARK_MOCK_VALIDATE=schema bulwark apply … is
// enough: the host passes its environment to its plugins.
const EnvValidate = "BULWARK_MOCK_VALIDATE"

// ValidationFromEnv returns the options EnvValidate's value asks for,
// getenv reading it; any value but "", "own" or "schema" is an error.
func ValidationFromEnv(getenv func(string) string) ([]Option, error) {
	switch v := getenv(EnvValidate); v {
	case "", "own":
		return nil, nil
	case "schema":
		return []Option{WithSchemaValidation()}, nil
	default:
		return nil, fmt.Errorf("%s=%q: want own or schema", EnvValidate, v)
	}
}
