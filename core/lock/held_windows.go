//go:build windows

package lock

import (
	"os"

	"github.com/bulwark-iac/bulwark/core/pidcheck"
)

// markHeld has nothing to mark: Windows has no lock that can be queried
// without taking it. isHeld falls back to the record.
func markHeld(*os.File) error { return nil }

// isHeld is conservative, as on unix systems other than Linux: a record
// names a live holder unless it names a process of this host that is gone.
func isHeld(_ *os.File, h *Holder) (bool, error) {
	if h == nil {
		return false, nil
	}
	host, _ := os.Hostname()
	if h.Host != host {
		return true, nil
	}
	return !pidcheck.Gone(h.PID), nil
}

// folderHeld cannot be told without taking the lock here.
func folderHeld(string) bool { return false }
