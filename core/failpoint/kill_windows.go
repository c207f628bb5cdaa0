//go:build windows

package failpoint

import "os"

// killSelf ends the process at once, as SIGKILL does on unix: Kill of its
// own process is TerminateProcess, which runs no deferred function, flushes
// nothing and releases the lock only because the process is gone.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {} // TerminateProcess does not return to the caller
}
