package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/graphsvg"
)

// bulwark-graphviz, the program bulwark runs to draw a graph as SVG
// (core/graphsvg, core/graphsvg/dotlayout), compiles graphviz's WebAssembly
// module when it starts (go-graphviz's package init, run by wazero), unless
// the user cache folder holds the compiled module from an earlier run
// ($XDG_CACHE_HOME/bulwark/graphviz-cache, core/graphsvg/internal/wasmcache).
// A script's environment has no XDG_CACHE_HOME and HOME=/no-home, so every
// drawing of a script would compile it again: 0.75 CPU-s, against 0.02 once
// it is there. The scripts share one XDG_CACHE_HOME instead, a folder of
// this test run (0700, as MkdirTemp makes it), where bulwark-graphviz
// compiled the module once: wazero adds a module by a rename and never
// rewrites one, so scripts running at once only read it.

var (
	graphvizOnce sync.Once
	graphvizDir  string // the scripts' XDG_CACHE_HOME, removed by TestMain
	graphvizErr  error
)

// removeGraphvizCache removes what graphvizCache made, once the tests ran.
func removeGraphvizCache() {
	if graphvizDir != "" {
		_ = os.RemoveAll(graphvizDir)
	}
}

// graphvizCache returns the XDG_CACHE_HOME the scripts share, where
// bulwark-graphviz has compiled graphviz's module.
func graphvizCache(t *testing.T) string {
	graphvizOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bulwark-e2e-graphviz-")
		if err != nil {
			graphvizErr = err
			return
		}
		graphvizDir = dir
		cmd := exec.Command(filepath.Join(filepath.Dir(builtBulwark(t)), graphsvg.ProgramName()))
		cmd.Stdin = strings.NewReader("digraph { a }")
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			graphvizErr = fmt.Errorf("bulwark-graphviz, to compile graphviz's module once: %w\n%s", err, out)
			return
		}
		if _, err := os.Stat(filepath.Join(dir, "bulwark", "graphviz-cache")); err != nil {
			graphvizErr = fmt.Errorf("bulwark-graphviz kept no graphviz cache in XDG_CACHE_HOME: %w", err)
		}
	})
	if graphvizErr != nil {
		t.Fatal(graphvizErr)
	}
	return graphvizDir
}
