package pluginhost

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the plugin when the host dies,
// even by kill -9.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
