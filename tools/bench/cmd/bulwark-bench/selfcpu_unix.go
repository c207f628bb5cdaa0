//go:build unix

package main

import (
	"syscall"
	"time"
)

// selfCPU is this process's user and system time so far, and how many
// times its threads gave up or were taken off a CPU (context switches:
// each wake-up of a parked thread costs one).
func selfCPU() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Nvcsw + ru.Nivcsw)
}
