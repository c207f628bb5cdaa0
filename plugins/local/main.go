// Command bulwark-provider-local is the bulwark provider plugin "local": each
// resource is a folder under a root folder. See package localprovider for
// what it guarantees. It must be started by the bulwark host.
package main

import (
	"github.com/bulwark-iac/bulwark/plugins/local/localprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

func main() { sdk.Serve(localprovider.New()) }
