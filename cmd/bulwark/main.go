// Command bulwark provisions a stack of resources from a declarative YAML
// spec through provider plugins. See the README for a tour and DESIGN.md for
// the contract.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
