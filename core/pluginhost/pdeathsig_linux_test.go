package pluginhost

import (
	"os/exec"
	"syscall"
	"testing"
)

func TestSetParentDeathSignal(t *testing.T) {
	cmd := exec.Command("true")
	setParentDeathSignal(cmd)
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
		t.Fatalf("SysProcAttr = %+v, want Pdeathsig SIGKILL", cmd.SysProcAttr)
	}
}
