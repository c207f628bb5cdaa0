package graphsvg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// graphsvg's init gave back the TMPDIR wasmcache's init had pointed at the
// graphviz cache (go-graphviz's init ran in between: the Renderer works).
// cmd/bulwark's graphviz_tmpdir_test.go checks the same of the binary,
// with what a plugin sees.
func TestInitGaveTheTemporaryFolderBack(t *testing.T) {
	tmp := os.TempDir()
	if strings.HasSuffix(tmp, filepath.Join("bulwark", "graphviz-cache")) || strings.HasPrefix(filepath.Base(tmp), "bulwark-graphviz-") {
		t.Fatalf("os.TempDir() is still graphviz's cache folder: %s", tmp)
	}
}
