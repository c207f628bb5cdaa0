// Package atomicfile writes files so that a reader, or a process that comes
// back after a crash or a kill -9 at any instant, sees either the old content
// or the new one, never a mix or a truncated file.
//
// Write does: create a temporary file in the same folder, write, fsync, set
// the mode, rename over the target, fsync the folder. The temporary file is
// removed on every failure path.
//
// It lives in the sdk because providers that keep their world in the data
// folder the host assigns need exactly this (the mock, local and aws
// providers use it), and so does the host for its state.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces name with data atomically and durably, with mode perm.
func Write(name string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", name, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = os.Rename(tmp, name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return SyncDir(dir)
}

// SyncDir makes the folder's entries (a rename, a new file) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
