//go:build unix

package pidcheck

import (
	"errors"
	"syscall"
)

// gone: signal 0 checks the pid without sending anything; ESRCH says no
// such process (EPERM says it runs as another user).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
