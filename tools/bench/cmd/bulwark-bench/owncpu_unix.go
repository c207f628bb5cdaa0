//go:build unix

package main

import (
	"syscall"
	"time"
)

// ownCPU is this process's user and system time so far (0 when the
// system does not say).
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
