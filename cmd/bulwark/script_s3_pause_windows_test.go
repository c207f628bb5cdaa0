//go:build windows

package main

import "github.com/rogpeppe/go-internal/testscript"

// s3-pause and s3-continue stop and wake a process with SIGSTOP and
// SIGCONT, which Windows does not have.
func cmdS3Pause(ts *testscript.TestScript, _ bool, _ []string) {
	ts.Fatalf("s3-pause needs SIGSTOP (unix only)")
}

func cmdS3Continue(ts *testscript.TestScript, _ bool, _ []string) {
	ts.Fatalf("s3-continue needs SIGCONT (unix only)")
}
