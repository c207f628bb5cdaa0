//go:build unix

package mockprovider

import (
	"fmt"
	"syscall"
)

// worldLock is the exclusive flock on the world folder itself (opened
// read-only, so taking it writes nothing). Two processes sharing a world
// (config world) then never interleave their read-modify-write cycles.
// The folder is opened once and each change takes and releases the lock on
// that descriptor (opening it for every change cost ten system calls; this
// costs three). The provider's mutex guards it.
type worldLock struct {
	dir string
	fd  int // the open folder, when ok
	ino uint64
	dev uint64
	ok  bool // fd is open on dir
}

// lock takes the lock on dir and returns its release. A folder replaced
// since it was opened (another inode at the path) is opened again: the
// lock is always on the folder the path names now.
func (l *worldLock) lock(dir string) (unlock func(), err error) {
	for attempt := 0; ; attempt++ {
		if !l.ok || l.dir != dir {
			if err := l.open(dir); err != nil {
				return nil, err
			}
		}
		for {
			err = syscall.Flock(l.fd, syscall.LOCK_EX)
			if err != syscall.EINTR {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("lock the mock world %s: %w", dir, err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err == nil && uint64(st.Ino) == l.ino && uint64(st.Dev) == l.dev {
			fd := l.fd
			return func() { _ = syscall.Flock(fd, syscall.LOCK_UN) }, nil
		}
		_ = syscall.Flock(l.fd, syscall.LOCK_UN)
		l.close()
		if attempt == 100 {
			return nil, fmt.Errorf("lock the mock world %s: the folder keeps being replaced", dir)
		}
	}
}

func (l *worldLock) open(dir string) error {
	l.close()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lock the mock world %s: %w", dir, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("lock the mock world %s: %w", dir, err)
	}
	l.dir, l.fd, l.ino, l.dev, l.ok = dir, fd, uint64(st.Ino), uint64(st.Dev), true
	return nil
}

// close closes the folder, if open.
func (l *worldLock) close() {
	if l.ok {
		syscall.Close(l.fd)
		l.ok = false
	}
}
