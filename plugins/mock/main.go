// Command bulwark-provider-mock is the bulwark provider plugin "mock": a
// simulated cloud whose world persists in the data folder the host assigns,
// with fault injection for tests. See package mockprovider for what it
// guarantees. It must be started by the bulwark host.
package main

import "github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"

// BULWARK_MOCK_BATCH=off hides the batch calls (mockprovider.EnvBatch);
// BULWARK_MOCK_VALIDATE=schema drops its own validation (EnvValidate).
func main() { mockprovider.Main() }
