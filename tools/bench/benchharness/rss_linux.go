package benchharness

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// maxRSS is wait4's ru_maxrss in bytes (Linux reports kilobytes).
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}

// waitid's idtype and options (linux/wait.h), which package syscall does
// not name.
const (
	pPID    = 1
	wExited = 0x4
	wNoWait = 0x1000000
)

// finalCPU waits for pid, a child of this process, to exit without reaping
// it (waitid with WNOWAIT: it stays a zombie, its /proc/PID/stat still
// there with its final times) and reads its own user and system time then:
// the whole run's, where a sample taken while it ran misses its last
// moments (its plugins' shutdown among them). The caller reaps it (Wait).
// ok is false when it could not be read.
func finalCPU(pid int) (time.Duration, bool) {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, false
		}
		break
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(b)
}
