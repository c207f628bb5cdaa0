package pluginhost

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the plugin when the host dies,
// even by kill -9. The plugin also leads a process group of its own, so
// that what it started (a wrapper script's child) can be killed with it
// (killGroup), and a terminal's interrupt reaches the host alone, which
// stops its plugins itself.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills the process group cmd's process leads: what a plugin
// that failed to start left running (a wrapper script's child that holds
// its stdout, which go-plugin waits on).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
