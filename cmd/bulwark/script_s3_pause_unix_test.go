//go:build unix

package main

import (
	"os"
	"strconv"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// s3-pause STACK stops (SIGSTOP) the process that holds the lock of STACK
// under $S3, as a laptop closed in the middle of an apply would be: it
// renews its lease no more. s3-continue wakes it (SIGCONT).
func cmdS3Pause(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: s3-pause STACK")
	}
	h, _ := getLock(ts, args[0])["holder"].(map[string]any)
	pid, _ := h["pid"].(float64)
	if pid == 0 || int(pid) == os.Getpid() {
		ts.Fatalf("the lock of %s names no process to pause: %v", args[0], h)
	}
	ts.Check(syscall.Kill(int(pid), syscall.SIGSTOP))
	ts.Setenv("S3_PAUSED", strconv.Itoa(int(pid)))
	// Never leave a stopped process behind a failed script.
	ts.Defer(func() { syscall.Kill(int(pid), syscall.SIGCONT) })
}

func cmdS3Continue(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: s3-continue")
	}
	pid, err := strconv.Atoi(ts.Getenv("S3_PAUSED"))
	ts.Check(err)
	ts.Check(syscall.Kill(pid, syscall.SIGCONT))
}
