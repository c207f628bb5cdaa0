package pidcheck

import (
	"os"
	"os/exec"
	"testing"
)

func TestGone(t *testing.T) {
	if Gone(os.Getpid()) {
		t.Fatal("Gone says this test's own process is gone")
	}
	if Gone(0) || Gone(-1) {
		t.Fatal("Gone answers for a pid that names no process of its own")
	}
	// A child that has exited and been waited for is gone.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !Gone(cmd.Process.Pid) {
		t.Fatalf("Gone says the exited child %d still runs", cmd.Process.Pid)
	}
}
