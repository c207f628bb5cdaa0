//go:build !linux

package lock

import (
	"os"

	"github.com/bulwark-iac/bulwark/core/pidcheck"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// markHeld has nothing to mark where open-file-description locks do not
// exist (unix systems other than Linux, and Windows, which has no lock
// that can be queried without taking it); isHeld falls back to the record.
func markHeld(*os.File) error { return nil }

// isHeld, without a way to query the lock that takes nothing, is
// conservative: a record names a live holder unless it names a process of
// this host that is gone.
func isHeld(_ *os.File, h *storage.Holder) (bool, error) {
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
