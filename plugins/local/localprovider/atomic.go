package localprovider

import (
	"fmt"
	"os"
	"path/filepath"
)

// File and folder modes of everything this provider writes.
const (
	fileMode os.FileMode = 0o600
	dirMode  os.FileMode = 0o700
)

// writeFileAtomic replaces name with data so that a reader, or a process
// that comes back after a crash, sees the old content or the new one, never
// a mix: temporary file in the same folder, write, fsync, rename, fsync the
// folder. The file's mode is 0600.
func writeFileAtomic(name string, data []byte) (err error) {
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
	if err = f.Chmod(fileMode); err != nil {
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
	return syncDir(dir)
}

// syncDir makes a folder's entries (a rename, a new file) durable.
func syncDir(dir string) error {
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
