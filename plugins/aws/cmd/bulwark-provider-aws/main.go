// Command bulwark-provider-aws is the aws provider under the name the
// bulwark host looks for, so that
//
//	GOBIN="$(dirname "$(command -v bulwark)")/plugins" go install github.com/bulwark-iac/bulwark/plugins/aws/cmd/bulwark-provider-aws@VERSION
//
// installs it where bulwark finds it (`go install …/plugins/aws@VERSION`
// would name the binary "aws"). Same program as the module's root package.
package main

import (
	"github.com/bulwark-iac/bulwark/plugins/aws/awsprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

func main() { sdk.Serve(awsprovider.New()) }
