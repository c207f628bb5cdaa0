// Command bulwark-provider-mock is the bulwark provider plugin "mock": a
// simulated cloud whose world persists in the data folder the host assigns,
// with fault injection for tests. See package mockprovider for what it
// guarantees. It must be started by the bulwark host.
package main

import (
	"fmt"
	"os"

	"github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

func main() {
	// BULWARK_MOCK_BATCH=off hides the batch calls (mockprovider.EnvBatch).
	p, err := mockprovider.FromEnv(mockprovider.New(), os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bulwark-provider-mock: %v\n", err)
		os.Exit(2)
	}
	sdk.Serve(p)
}
