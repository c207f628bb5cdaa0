// Command terraform-provider-fwtest is the fwtest provider
// (registry.terraform.io/bulwark/fwtest): see testproviders/README.md.
package main

import (
	"context"
	"log"

	"github.com/bulwark-iac/bulwark/testproviders/fwtest"
	"github.com/bulwark-iac/bulwark/testproviders/internal/cpuprofile"
)

// version is the provider's version, what its mirror folder is named by;
// -ldflags "-X main.version=…" sets another.
var version = "0.1.0"

func main() {
	stop := cpuprofile.Start()
	err := fwtest.Serve(context.Background(), version)
	stop()
	if err != nil {
		log.Fatal(err)
	}
}
