package lock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bulwark-iac/bulwark/core/storage"
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
func isHeld(f *os.File, _ *storage.Holder) (bool, error) {
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

// folderHeld tells, from /proc/locks and without taking anything, whether
// someone holds the flock on the stack folder dir: what Inspect falls back
// on when the holder's record was removed or replaced. false when it cannot
// tell.
func folderHeld(dir string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; a waiter's
		// line has "->" and is no holder.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" {
			continue
		}
		if fields[5] == want {
			return true
		}
	}
	return false
}
