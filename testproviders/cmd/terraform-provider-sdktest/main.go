// Command terraform-provider-sdktest is the sdktest provider
// (registry.terraform.io/bulwark/sdktest): see testproviders/README.md.
package main

import (
	"github.com/bulwark-iac/bulwark/testproviders/internal/cpuprofile"
	"github.com/bulwark-iac/bulwark/testproviders/sdktest"
)

// version is the provider's version, what its mirror folder is named by;
// -ldflags "-X main.version=…" sets another.
var version = "0.1.0"

func main() {
	stop := cpuprofile.Start()
	defer stop()
	sdktest.Serve(version)
}
