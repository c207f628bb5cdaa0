// Package layouttest gives core's tests the program that lays a graph out
// as SVG (bulwark-graphviz, core/graphsvg/dotlayout), built plain: the
// tests run under the race detector, and a race-built program spends
// seconds of CPU in Graphviz's init (go-graphviz compiles its WebAssembly
// module there) where the plain one spends about 75 ms.
package layouttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// envBinDir is the folder of binaries make test builds once for every
// package's tests (make build-demo: bin/, bulwark-graphviz in it).
const envBinDir = "BULWARK_TEST_BIN_DIR"

// Layout is the layout program of one test binary's run, built at most once.
type Layout struct {
	// Env is the environment the build runs in (nil: the process's when
	// Path is first called). Set it in TestMain when tests change HOME:
	// go build would otherwise find its cache in the test's HOME, empty,
	// and build everything again.
	Env []string

	once      sync.Once
	path, dir string
	err       error
}

// Path returns bulwark-graphviz: $BULWARK_TEST_BIN_DIR's when it holds
// one, else one built (plain, -trimpath as make builds) into a temporary
// folder that Close removes. It is also a Graphviz finder for the web
// view's options (webview.Options.Graphviz).
func (l *Layout) Path() (string, error) {
	l.once.Do(func() {
		name := "bulwark-graphviz"
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
		if dir := os.Getenv(envBinDir); dir != "" {
			if p := filepath.Join(dir, name); isFile(p) {
				l.path = p
				return
			}
		}
		if l.dir, l.err = os.MkdirTemp("", "bulwark-layouttest-"); l.err != nil {
			return
		}
		p := filepath.Join(l.dir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-o", p, "github.com/bulwark-iac/bulwark/cmd/bulwark/cmd/bulwark-graphviz")
		cmd.Env = l.Env
		if out, err := cmd.CombinedOutput(); err != nil {
			l.err = fmt.Errorf("build bulwark-graphviz: %v\n%s", err, out)
			return
		}
		l.path = p
	})
	return l.path, l.err
}

// Program is Path for a test, which it fails when there is no program.
func (l *Layout) Program(tb testing.TB) string {
	tb.Helper()
	p, err := l.Path()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Close removes what Path built.
func (l *Layout) Close() {
	if l.dir != "" {
		_ = os.RemoveAll(l.dir)
	}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
