// bulwark-graphviz lays a dependency graph out for bulwark: DOT on stdin,
// SVG on stdout (core/graphsvg/dotlayout). bulwark runs it from the folder
// it is in itself, for `graph --format svg` and the web view's graph page;
// nothing else needs it. It is a program of its own so that Graphviz's
// WebAssembly module, which its library compiles before main in every
// process that links it, is compiled only when a graph is drawn.
//
// Install it beside bulwark: make install does, and so does
//
//	go install github.com/bulwark-iac/bulwark/cmd/bulwark/cmd/bulwark-graphviz@VERSION
//
// with the same GOBIN as bulwark's.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/bulwark-iac/bulwark/core/graphsvg/dotlayout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := dotlayout.Main(ctx, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
