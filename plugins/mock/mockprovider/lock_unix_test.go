//go:build unix

package mockprovider

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The lock is taken on the folder the path names when it is taken: one
// replaced since the last change is opened again, and a second descriptor
// on the same folder (another process's, in effect) cannot take it while
// it is held.
func TestWorldLockFollowsTheFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "world")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var l worldLock
	defer l.close()
	held := func() bool {
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			syscall.Flock(fd, syscall.LOCK_UN)
			return false
		}
		return true
	}
	for _, step := range []struct {
		name    string
		replace bool
	}{
		{"first", false},
		{"again, the same folder", false},
		{"after the folder was replaced", true},
	} {
		if step.replace {
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		unlock, err := l.lock(dir)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !held() {
			t.Errorf("%s: the folder at the path is not locked", step.name)
		}
		unlock()
		if held() {
			t.Errorf("%s: still locked after the release", step.name)
		}
	}
}
