//go:build unix

package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// openDir opens the stack folder itself, refusing a symbolic link.
func openDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err := nofollow.CheckDir(dir); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// tryLock takes the flock of the open stack folder d without waiting: ok is
// false when another holder has it. unlock releases it.
func tryLock(d *os.File, _ string) (unlock func() error, ok bool, err error) {
	for {
		err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return func() error { return unix.Flock(int(d.Fd()), unix.LOCK_UN) }, true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return nil, false, nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		return nil, false, err
	}
}

// folderID is a folder's device and inode.
type folderID struct{ dev, ino uint64 }

// idOf is what the open folder d is.
func idOf(d *os.File) (folderID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return folderID{}, err
	}
	return folderID{uint64(st.Dev), uint64(st.Ino)}, nil
}

// at reports whether path (not followed) names the folder id is, with the
// one syscall and no allocation: it is asked before every journal write.
func (id folderID) at(path string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return uint64(st.Dev) == id.dev && uint64(st.Ino) == id.ino, nil
}

// samePath checks that the open folder d is still the folder at path.
func samePath(d *os.File, path string) error {
	var open, now unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &open); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Lstat(path, &now); err != nil {
		return fmt.Errorf("lock %s: the stack folder went away while it was being locked: %w", path, err)
	}
	if open.Dev != now.Dev || open.Ino != now.Ino || now.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fmt.Errorf("lock %s: the stack folder was replaced while it was being locked: refusing", path)
	}
	return nil
}
