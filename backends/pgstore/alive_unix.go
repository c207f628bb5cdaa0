//go:build unix

package pgstore

import (
	"errors"
	"syscall"
)

// alive reports whether process pid of this host runs.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
