// Command bulwark-provider-aws is the bulwark provider plugin "aws": real S3
// buckets and DynamoDB tables through aws-sdk-go-v2, with credentials from
// the SDK's standard chain. See package awsprovider for what it guarantees
// and README.md for running it against AWS or the emulators. It must be
// started by the bulwark host.
package main

import (
	"github.com/bulwark-iac/bulwark/plugins/aws/awsprovider"
	"github.com/bulwark-iac/bulwark/sdk"
)

func main() { sdk.Serve(awsprovider.New()) }
