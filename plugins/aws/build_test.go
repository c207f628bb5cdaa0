package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// envTestBinDir names a folder make build-demo filled (make test sets it):
// bulwark and plugins/bulwark-provider-mock are taken from there instead of
// being built again.
const envTestBinDir = "BULWARK_TEST_BIN_DIR"

// prebuiltIn is where, under $BULWARK_TEST_BIN_DIR, make build-demo puts
// the program of each package goBuild is asked for.
var prebuiltIn = map[string]string{
	"github.com/bulwark-iac/bulwark/cmd/bulwark": "bulwark",
	"./plugins/mock": "plugins/bulwark-provider-mock",
}

// program is one package's executable, made once for this test binary.
type program struct {
	once sync.Once
	path string
	err  error
}

// programs holds them, and the folder they are built in (removed by
// TestMain). A link of bulwark alone costs 3-4 CPU-seconds, and a dozen
// tests each asked for two or three programs.
var programs = struct {
	sync.Mutex
	dir   string
	byPkg map[string]*program
}{byPkg: map[string]*program{}}

func TestMain(m *testing.M) {
	code := m.Run()
	programs.Lock()
	if programs.dir != "" {
		os.RemoveAll(programs.dir)
	}
	programs.Unlock()
	os.Exit(code)
}

// goBuild puts pkg's executable (pkg a path from the workspace root) at
// out: a copy of the one this test binary built (or took from
// $BULWARK_TEST_BIN_DIR) the first time any test asked for pkg, so each test
// still has a folder of its own.
func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	programs.Lock()
	p := programs.byPkg[pkg]
	if p == nil {
		p = &program{}
		programs.byPkg[pkg] = p
	}
	if programs.dir == "" {
		dir, err := os.MkdirTemp("", "bulwark-aws-test-bin-")
		if err != nil {
			programs.Unlock()
			t.Fatal(err)
		}
		programs.dir = dir
	}
	dir := programs.dir
	programs.Unlock()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build with")
	}
	p.once.Do(func() { p.path, p.err = buildOnce(dir, repoRoot(t), pkg) })
	if p.err != nil {
		t.Fatal(p.err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := linkOrCopy(p.path, out); err != nil {
		t.Fatal(err)
	}
}

// buildOnce makes pkg's executable in dir: $BULWARK_TEST_BIN_DIR's when
// make build-demo made it, else go build's from root (the workspace's).
func buildOnce(dir, root, pkg string) (string, error) {
	out := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(pkg))
	if rel, ok := prebuiltIn[pkg]; ok {
		if bin := os.Getenv(envTestBinDir); bin != "" {
			src := filepath.Join(bin, filepath.FromSlash(rel))
			if _, err := os.Stat(src); err != nil {
				return "", fmt.Errorf("%s=%s: %w (run make build-demo, or unset it to build here)", envTestBinDir, bin, err)
			}
			return src, nil
		}
	}
	// -trimpath, as make builds: the packages compile once a run, shared in the build cache with make vet's and build-demo's.
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// linkOrCopy makes dst the executable src: a hard link, or a copy where
// one cannot be made (another file system).
func linkOrCopy(src, dst string) (err error) {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(f, in)
	return err
}
