//go:build unix

package wasmcache

import (
	"os"
	"path/filepath"
	"syscall"
)

// tempEnv is what os.TempDir reads.
func tempEnv() []string { return []string{"TMPDIR"} }

// errUnsafe says a folder fails a check.
type errUnsafe struct{ path, why string }

func (e *errUnsafe) Error() string { return "graphviz cache folder " + e.path + ": " + e.why }

// checkPrivate accepts a real folder (not a symlink) owned by this user
// that neither group nor others can write to.
func checkPrivate(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return &errUnsafe{p, "not a folder (a symlink or a file)"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Getuid() {
		return &errUnsafe{p, "not owned by this user"}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return &errUnsafe{p, "group or others can write to it"}
	}
	return nil
}

// checkRoot accepts the user cache folder when nobody else can replace
// what is in it or in any folder above it: each, symlinks resolved, is
// owned by this user or root and not writable by group or others unless
// sticky (as /tmp: then others cannot rename what is not theirs).
func checkRoot(root string) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	uid := os.Getuid()
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || (int(st.Uid) != uid && st.Uid != 0) {
			return &errUnsafe{p, "a folder on its path is owned by another user"}
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return &errUnsafe{p, "a folder on its path is writable by group or others"}
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}
