//go:build windows

package localprovider

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile opens (creating it) the file at path without following a link
// (FILE_FLAG_OPEN_REPARSE_POINT opens a link itself, which is then
// refused), and waits for an exclusive LockFileEx lock on its first byte,
// which closing the file, or the process's end, releases.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%v): refusing it", path, fi.Mode().Type()&fs.ModeType)
	}
	if err == nil {
		err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
