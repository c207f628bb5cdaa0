//go:build windows

package pidcheck

import (
	"errors"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not ended (STILL_ACTIVE, 259).
const stillActive = 259

// gone: OpenProcess refuses a pid no process has with
// ERROR_INVALID_PARAMETER; a process that ended but whose handle someone
// still holds opens, and reports an exit code.
func gone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code != stillActive
}
