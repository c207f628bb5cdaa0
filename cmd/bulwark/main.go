// Command bulwark provisions a stack of resources from a declarative YAML
// spec through provider plugins. See the README for a tour and
// docs/architecture.md for the map of the code and the rules it keeps.
//
// The layout, after Terraform's internal/command: cli.go wires cobra and maps
// what a command returns to the exit code (a command returns its exit code
// with its error: withExit); command_NAME.go is one command (or group): its
// flags, the core call, and the view it renders through; args.go turns the
// shared flags into core's options; views.go and view_*.go hold each
// command's view, a human and a JSON implementation behind one interface
// (ViewType); internal/jsonview holds every --json document's wire types
// under one format_version (docs/json.md).
package main

import (
	"os"

	"github.com/bulwark-iac/bulwark/core/gcpace"
)

func main() {
	gcpace.Start() // core/gcpace says why
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
