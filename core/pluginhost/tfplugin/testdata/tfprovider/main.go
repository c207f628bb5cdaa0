// Command tfprovider is a minimal Terraform provider on terraform-plugin-go,
// for the tests of core/pluginhost/tfplugin: it speaks protocol 5 or 6 (as
// TFTEST_PROTOCOL says) and keeps its world in memory, one resource type
// (tftest_thing) and one data source (tftest_echo; the input "defer" is
// answered deferred). It is a module of its own under testdata, so that
// core requires nothing of terraform-plugin-go: the tests build it with go
// build.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5/tf5server"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
)

const address = "registry.terraform.io/bulwark-test/tftest"

func main() {
	p := newProvider()
	var err error
	switch os.Getenv("TFTEST_PROTOCOL") {
	case "5":
		err = tf5server.Serve(address, func() tfprotov5.ProviderServer { return &server5{p: p} })
	default:
		err = tf6server.Serve(address, func() tfprotov6.ProviderServer { return &server6{p: p} })
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
