//go:build !unix

package wasmcache

import (
	"os"
	"runtime"
)

// tempEnv is what os.TempDir reads (Windows: GetTempPath2 reads TMP, then
// TEMP).
func tempEnv() []string {
	if runtime.GOOS == "windows" {
		return []string{"TMP", "TEMP"}
	}
	return []string{"TMPDIR"}
}

// checkPrivate accepts a real folder, not a symlink or a file. Windows'
// per-user cache folder (%LocalAppData%) is the user's own: it is taken as
// it is, without owner or mode checks.
func checkPrivate(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return &os.PathError{Op: "graphviz cache folder", Path: p, Err: os.ErrInvalid}
	}
	return nil
}

func checkRoot(string) error { return nil }
