// Not under the race detector (make test's): a race-built binary that links
// go-graphviz spends seconds of CPU compiling Graphviz's WebAssembly module
// in its init, 25-38 s of CI for this package alone. The package runs no
// goroutines of its own; make test still runs it, plain built, as the
// bulwark-graphviz that core/graphsvg's, core/webview's and cmd/bulwark's
// tests draw with, and runs these tests without -race beside the others.

//go:build !race

package dotlayout

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// This package's init gave back the TMPDIR wasmcache's init had pointed at
// the graphviz cache (go-graphviz's init ran in between: SVG works).
// cmd/bulwark's graphviz_tmpdir_test.go checks the same of the program,
// run as bulwark runs it.
func TestInitGaveTheTemporaryFolderBack(t *testing.T) {
	tmp := os.TempDir()
	if strings.HasSuffix(tmp, filepath.Join("bulwark", "graphviz-cache")) || strings.HasPrefix(filepath.Base(tmp), "bulwark-graphviz-") {
		t.Fatalf("os.TempDir() is still graphviz's cache folder: %s", tmp)
	}
}

func TestMain_(t *testing.T) {
	tests := []struct {
		name, in   string
		code       int
		out, errIn string
	}{
		{"a graph", `digraph { "a" -> "b" }`, 0, "<title>a&#45;&gt;b</title>", ""},
		{"broken DOT", "digraph { a -> ", 1, "", "bulwark-graphviz: parse dot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(context.Background(), strings.NewReader(tt.in), &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errIn) {
				t.Fatalf("Main = %d, stdout %q, stderr %q; want %d, stdout with %q, stderr with %q", code, out.String(), errOut.String(), tt.code, tt.out, tt.errIn)
			}
		})
	}
}

func TestMainRefusesTooMuchDOT(t *testing.T) {
	var out, errOut bytes.Buffer
	big := strings.NewReader(strings.Repeat(" ", MaxDOT+1))
	if code := Main(context.Background(), big, &out, &errOut); code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "larger than 64 MiB") {
		t.Fatalf("Main of %d bytes = %d, %q, %q", MaxDOT+1, code, out.String(), errOut.String())
	}
}
