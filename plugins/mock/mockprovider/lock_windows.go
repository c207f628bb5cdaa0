//go:build windows

package mockprovider

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// worldLockFile is the file in the world folder whose first byte the
// world lock locks on Windows, where a folder cannot be locked.
const worldLockFile = ".world.lock"

// worldLock is, on Windows, an exclusive LockFileEx lock on the first byte
// of the world folder's worldLockFile: two processes sharing a world never
// interleave their read-modify-write cycles, and Windows releases the lock
// when the holder's process ends. The file is opened once per folder,
// without following a link (FILE_FLAG_OPEN_REPARSE_POINT; a reparse point
// is refused) and without FILE_SHARE_DELETE, so it cannot be replaced
// while it is open. The provider's mutex guards it.
type worldLock struct {
	dir string
	f   *os.File // the open lock file, when not nil
}

func (l *worldLock) lock(dir string) (unlock func(), err error) {
	if l.f == nil || l.dir != dir {
		l.close()
		f, err := os.OpenFile(filepath.Join(dir, worldLockFile), os.O_RDWR|os.O_CREATE|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock the mock world %s: %w", dir, err)
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("lock the mock world %s: %s is not a regular file: refusing it", dir, worldLockFile)
		}
		l.dir, l.f = dir, f
	}
	h := windows.Handle(l.f.Fd())
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped)); err != nil {
		return nil, fmt.Errorf("lock the mock world %s: %w", dir, err)
	}
	return func() { _ = windows.UnlockFileEx(h, 0, 1, 0, new(windows.Overlapped)) }, nil
}

// close closes the lock file, if open.
func (l *worldLock) close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
