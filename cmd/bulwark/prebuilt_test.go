package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// envTestBinDir names a folder of binaries built once for a whole run of
// the tests, in the layout `make build-demo` writes (bulwark, and
// plugins/bulwark-provider-mock and -local beside it): make test sets it to
// bin/ after building them, so this package's tests do not build the same
// programs again (builtBulwark, buildPlugins). Unset, the tests build them
// as before. They are the same build either way: a plain `go build` with
// the same flags (the race detector only covers the test binary itself; see
// raceScripts). The providers in bin/plugins come from
// plugins/NAME/cmd/bulwark-provider-NAME, the module root's program under
// the name the host looks for (the same main.go), the build make install
// installs. Set the variable by hand only to binaries built from the code
// under test: the tests run what the folder holds.
const envTestBinDir = "BULWARK_TEST_BIN_DIR"

// prebuilt places the binary rel of $BULWARK_TEST_BIN_DIR at dst (a hard
// link, else a copy), and reports whether the variable is set. The tests
// keep their own folders, as when they build: a folder of their own on the
// scripts' PATH, and a plugin folder holding exactly the mock and local
// providers (bin/plugins may hold the aws provider too).
func prebuilt(rel, dst string) (bool, error) {
	dir := os.Getenv(envTestBinDir)
	if dir == "" {
		return false, nil
	}
	src := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(src); err != nil {
		return true, fmt.Errorf("%s=%s: %w (run make build-demo, or unset it to build here)", envTestBinDir, dir, err)
	}
	if err := os.Link(src, dst); err == nil {
		return true, nil
	}
	return true, copyExecutable(src, dst)
}

// copyExecutable copies src to a new executable file dst.
func copyExecutable(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
