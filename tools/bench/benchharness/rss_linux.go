package benchharness

import (
	"os"
	"syscall"
)

// maxRSS is wait4's ru_maxrss in bytes (Linux reports kilobytes).
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}
