package events

import (
	"fmt"
	"os"
	"syscall"

	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// OpenFile opens the --events file for appending, creating it with mode
// 0600. An existing regular file is made 0600 too (events name resources,
// operations and errors: they are not for every user of the machine). A
// symbolic link is refused, never followed; a fifo or a device (a pipe to
// a collector, /dev/null) is written to as it is.
func OpenFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if lerr := nofollow.CheckReplaceable(path); lerr != nil {
			return nil, fmt.Errorf("events file: %w", lerr)
		}
		return nil, fmt.Errorf("events file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("events file %s: %w", path, err)
	}
	return f, nil
}
