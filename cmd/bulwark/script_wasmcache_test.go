package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Every bulwark process compiles graphviz's WebAssembly module when it
// starts (go-graphviz's package init, run by wazero, core/graphsvg), unless
// $TMPDIR/go-graphviz holds the compiled module from an earlier run. A
// script's TMPDIR is a fresh $WORK/.tmp, so the first bulwark of every
// script compiled it again: 0.75 CPU-s for the plain build, 8.5 CPU-s (20 s
// at load 8) for this race-built test binary as the bulwark of raceScripts
// or the strict provider, against 0.02 and 0.16 CPU-s once it is there.
// Each script's TMPDIR now starts with that cache, made once per test run
// by the plain bulwark and hard-linked in: what every script's first
// command found there before, as its own files (wazero adds a module by a
// rename and never rewrites one, so the links are never written through).

var (
	graphvizOnce sync.Once
	graphvizTmp  string // the TMPDIR of the run that made it, removed by TestMain
	graphvizDir  string // graphvizTmp/go-graphviz; "" if none was made
	graphvizErr  error
)

// removeGraphvizCache removes what graphvizCache made, once the tests ran.
func removeGraphvizCache() {
	if graphvizTmp != "" {
		_ = os.RemoveAll(graphvizTmp)
	}
}

// graphvizCache runs bulwark version once with a temporary folder of its
// own as TMPDIR and returns the go-graphviz cache it left there ("" when it
// left none: nothing to share).
func graphvizCache(t *testing.T) string {
	graphvizOnce.Do(func() {
		tmp, err := os.MkdirTemp("", "bulwark-e2e-graphviz-")
		if err != nil {
			graphvizErr = err
			return
		}
		graphvizTmp = tmp
		cmd := exec.Command(builtBulwark(t), "version")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if out, err := cmd.CombinedOutput(); err != nil {
			graphvizErr = fmt.Errorf("bulwark version, to compile graphviz's module once: %w\n%s", err, out)
			return
		}
		if dir := filepath.Join(tmp, "go-graphviz"); dirExists(dir) {
			graphvizDir = dir
		}
	})
	if graphvizErr != nil {
		t.Fatal(graphvizErr)
	}
	return graphvizDir
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// linkTree recreates the folders of src under dst and hard-links each file
// (a copy where a link cannot be made).
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if err := os.Link(p, to); err == nil {
			return nil
		}
		return copyExecutable(p, to)
	})
}
