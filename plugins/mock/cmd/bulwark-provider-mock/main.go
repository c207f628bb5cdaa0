// Command bulwark-provider-mock is the mock provider under the name the
// bulwark host looks for, so that
//
//	GOBIN="$(dirname "$(command -v bulwark)")/plugins" go install github.com/bulwark-iac/bulwark/plugins/mock/cmd/bulwark-provider-mock@VERSION
//
// installs it where bulwark finds it (`go install …/plugins/mock@VERSION`
// would name the binary "mock"). Same program as the module's root package.
package main

import "github.com/bulwark-iac/bulwark/plugins/mock/mockprovider"

// BULWARK_MOCK_BATCH=off hides the batch calls (mockprovider.EnvBatch);
// BULWARK_MOCK_VALIDATE=schema drops its own validation (EnvValidate).
func main() { mockprovider.Main() }
