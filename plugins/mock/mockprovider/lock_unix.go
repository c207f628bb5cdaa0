//go:build unix

package mockprovider

import (
	"fmt"
	"os"
	"syscall"
)

// lockWorld takes an exclusive flock on the world folder itself (opened
// read-only, so taking it writes nothing) and returns its release. Two
// processes sharing a world (config world) then never interleave their
// read-modify-write cycles.
func lockWorld(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock the mock world %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the mock world %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
