//go:build windows

package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"

	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// heldFile is the file in the stack folder whose first byte the holder locks
// with LockFileEx on Windows, where a folder cannot be locked. It is opened
// without FILE_SHARE_DELETE, so while anyone has it open it cannot be
// deleted, renamed or replaced: the name cannot come to mean another file
// under a live holder, which is what locking the folder itself guarantees
// on unix.
const heldFile = FileName + ".held"

// openDir opens the stack folder itself without following a link or a
// junction (FILE_FLAG_OPEN_REPARSE_POINT, then the handle's attributes), and
// without FILE_SHARE_DELETE: while the holder keeps it open, the folder
// cannot be renamed or removed from under it.
func openDir(dir string) (*os.File, error) {
	name, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		if err := nofollow.CheckDir(dir); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	switch {
	case info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		windows.CloseHandle(h)
		return nil, fmt.Errorf("lock: %w", &nofollow.LinkError{Path: dir})
	case info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY == 0:
		windows.CloseHandle(h)
		return nil, fmt.Errorf("lock: %w", &nofollow.KindError{Path: dir, Want: "a folder", Got: "a file"})
	}
	return os.NewFile(uintptr(h), dir), nil
}

// tryLock takes, without waiting, an exclusive LockFileEx lock on the first
// byte of the stack folder's heldFile: ok is false when another holder has
// it. Windows releases the lock when the holder's handle is closed or its
// process ends, however it ends. unlock releases it and closes the file.
func tryLock(_ *os.File, dir string) (unlock func() error, ok bool, err error) {
	path := filepath.Join(dir, heldFile)
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, false, err
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil,
		windows.OPEN_ALWAYS, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	switch {
	case info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		windows.CloseHandle(h)
		return nil, false, &nofollow.LinkError{Path: path}
	case info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
		windows.CloseHandle(h)
		return nil, false, &nofollow.KindError{Path: path, Want: "a regular file", Got: "a folder"}
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	switch {
	case err == nil:
		return func() error {
			uerr := windows.UnlockFileEx(h, 0, 1, 0, new(windows.Overlapped))
			if cerr := windows.CloseHandle(h); uerr == nil {
				uerr = cerr
			}
			return uerr
		}, true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		windows.CloseHandle(h)
		return nil, false, nil
	}
	windows.CloseHandle(h)
	return nil, false, err
}

// folderID is what an open folder is, as os.SameFile compares it.
type folderID struct{ fi os.FileInfo }

// idOf is what the open folder d is.
func idOf(d *os.File) (folderID, error) {
	fi, err := d.Stat()
	return folderID{fi}, err
}

// at reports whether path (not followed) names the folder id is.
func (id folderID) at(path string) (bool, error) {
	now, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(id.fi, now), nil
}

// samePath checks that the open folder d is still the folder at path.
func samePath(d *os.File, path string) error {
	open, err := d.Stat()
	if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	now, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("lock %s: the stack folder went away while it was being locked: %w", path, err)
	}
	if !now.IsDir() || !os.SameFile(open, now) {
		return fmt.Errorf("lock %s: the stack folder was replaced while it was being locked: refusing", path)
	}
	return nil
}
