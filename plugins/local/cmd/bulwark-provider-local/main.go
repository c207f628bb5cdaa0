// Command bulwark-provider-local is the local provider under the name the
// bulwark host looks for, so that
//
//	GOBIN="$(dirname "$(command -v bulwark)")/plugins" go install github.com/bulwark-iac/bulwark/plugins/local/cmd/bulwark-provider-local@VERSION
//
// installs it where bulwark finds it (`go install …/plugins/local@VERSION`
// would name the binary "local"). Same program as the module's root package.
package main

import (
	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

func main() { sdk.Serve(localprovider.New()) }
