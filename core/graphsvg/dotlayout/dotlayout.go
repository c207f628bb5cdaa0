// Package dotlayout lays DOT out as SVG with Graphviz's own dot engine,
// compiled to WebAssembly (github.com/goccy/go-graphviz, run by wazero:
// pure Go, no cgo, no graphviz on the machine). Only the bulwark-graphviz
// program imports it.
//
// go-graphviz compiles and instantiates its WebAssembly module in a package
// init, before main, in every process that links it: about 75 ms and 3,200
// page faults (12 MB touched) on this project's CI machines, more than
// the rest of a `bulwark version`. So bulwark itself does not link it:
// core/graphsvg writes the DOT and runs bulwark-graphviz, the program beside
// bulwark that imports this package, once per drawing (graphsvg.Renderer).
package dotlayout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/goccy/go-graphviz"

	"github.com/bulwark-iac/bulwark/core/graphsvg/internal/wasmcache"
)

// go-graphviz's init, which compiled Graphviz's module with its cache in
// the private folder wasmcache's init chose, has run (this package imports
// go-graphviz, so the spec runs this init after it): the environment goes
// back to what it was, for main. An error (a temporary folder of our own,
// 0700, left behind) cannot be reported from an init and changes nothing
// else.
func init() {
	_ = wasmcache.Restore()
}

// MaxDOT is the most DOT Main reads: a stack of 10,000 resources drawn in
// full writes about 1.5 MB.
const MaxDOT = 64 << 20

// SVG lays the DOT text out and returns the SVG.
func SVG(ctx context.Context, dot []byte) ([]byte, error) {
	gv, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("start graphviz: %w", err)
	}
	defer gv.Close()
	graph, err := graphviz.ParseBytes(dot)
	if err != nil {
		return nil, fmt.Errorf("parse dot: %w", err)
	}
	defer graph.Close()
	var buf bytes.Buffer
	if err := gv.Render(ctx, graph, graphviz.SVG, &buf); err != nil {
		return nil, fmt.Errorf("lay out graph: %w", err)
	}
	return buf.Bytes(), nil
}

// Main is bulwark-graphviz: the DOT on stdin (at most MaxDOT bytes), the
// SVG on stdout. An error is one line on stderr and exit status 1, the
// contract graphsvg.Renderer reads.
func Main(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	dot, err := io.ReadAll(io.LimitReader(stdin, MaxDOT+1))
	if err == nil && len(dot) > MaxDOT {
		err = errors.New("the graph is larger than 64 MiB of DOT")
	}
	var svg []byte
	if err == nil {
		svg, err = SVG(ctx, dot)
	}
	if err == nil {
		_, err = stdout.Write(svg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bulwark-graphviz: %v\n", err)
		return 1
	}
	return 0
}
