// Package cpuprofile lets the test providers profile themselves as
// bulwark's own plugins do (sdk.CPUProfileEnv), so that the benchmark
// harness's -plugin-cpuprofile covers a Terraform-protocol provider too:
// how much of its CPU is the framework's per-call work, and how much the
// world folder's file writes.
package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Env is bulwark's plugins' variable (sdk.CPUProfileEnv, not imported: the
// test providers do not depend on bulwark's sdk): set to PREFIX, the
// process writes its CPU profile to PREFIX.PID until Start's stop is
// called.
const Env = "BULWARK_PROVIDER_CPUPROFILE"

// Start starts the CPU profile Env asks for and returns what stops it and
// closes the file (a no-op when none was asked for or it could not start:
// a profile is a measurement aid, never a reason not to serve).
func Start() (stop func()) {
	prefix := os.Getenv(Env)
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "no CPU profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "no CPU profile: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "CPU profile: %v\n", err)
		}
	}
}
