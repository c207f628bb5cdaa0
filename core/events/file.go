package events

import (
	"errors"
	"fmt"
	"os"

	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// OpenFile opens the --events file for appending, creating it with mode
// 0600. An existing regular file is made 0600 too (events name resources,
// operations and errors: they are not for every user of the machine). A
// symbolic link is refused, never followed; a fifo or a device (a pipe to
// a collector, /dev/null) is written to as it is.
func OpenFile(path string) (*os.File, error) {
	f, err := nofollow.OpenAny(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if !errors.Is(err, nofollow.ErrRefused) {
			// A folder at path: say what it is rather than EISDIR.
			if kerr := nofollow.CheckReplaceable(path); kerr != nil {
				return nil, fmt.Errorf("events file: %w", kerr)
			}
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
