package lock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// markHeld puts an open-file-description write lock on the holder's record,
// which Inspect can see without taking anything. It lives as long as f is
// open and dies with the process.
func markHeld(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// isHeld asks the kernel whether someone holds the record's mark. F_OFD_GETLK
// only tests: it takes nothing, so no Acquire can fail because of it.
func isHeld(f *os.File, _ *Holder) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		return lk.Type != unix.F_UNLCK, nil
	}
}
