package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Every bulwark process compiles graphviz's WebAssembly module when it
// starts (go-graphviz's package init, run by wazero, core/graphsvg), unless
// the user cache folder holds the compiled module from an earlier run
// ($XDG_CACHE_HOME/bulwark/graphviz-cache, core/graphsvg/internal/wasmcache).
// A script's environment has no XDG_CACHE_HOME and HOME=/no-home, so every
// bulwark of a script would compile it again: 0.75 CPU-s for the plain
// build, 8.5 CPU-s (20 s at load 8) for this race-built test binary as the
// bulwark of raceScripts or the strict provider, against 0.02 and 0.16
// CPU-s once it is there. The scripts share one XDG_CACHE_HOME instead, a
// folder of this test run (0700, as MkdirTemp makes it), where the plain
// bulwark compiled the module once: wazero adds a module by a rename and
// never rewrites one, so scripts running at once only read it.

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

// graphvizCache returns the XDG_CACHE_HOME the scripts share, where bulwark
// version has compiled graphviz's module.
func graphvizCache(t *testing.T) string {
	graphvizOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bulwark-e2e-graphviz-")
		if err != nil {
			graphvizErr = err
			return
		}
		graphvizDir = dir
		cmd := exec.Command(builtBulwark(t), "version")
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			graphvizErr = fmt.Errorf("bulwark version, to compile graphviz's module once: %w\n%s", err, out)
			return
		}
		if _, err := os.Stat(filepath.Join(dir, "bulwark", "graphviz-cache")); err != nil {
			graphvizErr = fmt.Errorf("bulwark version kept no graphviz cache in XDG_CACHE_HOME: %w", err)
		}
	})
	if graphvizErr != nil {
		t.Fatal(graphvizErr)
	}
	return graphvizDir
}
