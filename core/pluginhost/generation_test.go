package pluginhost

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/sdk"
)

// A call that ran on a process that has died, and reports it only after
// another call started the replacement, must not kill the replacement:
// under parallelism that cascaded, each restart killed by the failure of a
// call on the one before.
func TestHostFailureOnDeadProcessSparesReplacement(t *testing.T) {
	f := start(t, nil)
	p, ctx := f.plugin, ctxT(t)
	old, err := p.ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldPID := p.PID()
	// A call in flight on the process when it dies (whether it reached the
	// plugin yet or not, the dead process fails it).
	failed := make(chan error, 1)
	go func() {
		_, err := old.Read(ctx, &sdk.ReadRequest{Type: "thing", Name: "hang"})
		failed <- err
	}()
	if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	callErr := <-failed
	if callErr == nil {
		t.Fatal("a call on the killed process succeeded")
	}
	waitGone(t, oldPID, 10*time.Second)
	waitClientExited(t, p, 10*time.Second)

	// Another goroutine's call starts the replacement.
	if _, err := p.Read(ctx, &sdk.ReadRequest{Type: "thing", Name: "x"}); err != nil {
		t.Fatalf("the call that restarts the plugin: %v", err)
	}
	newPID := p.PID()
	if newPID == oldPID || !alive(newPID) {
		t.Fatalf("pid %d -> %d: no live replacement", oldPID, newPID)
	}

	// Only now does the call that ran on the dead process report its
	// failure.
	if err := p.check(ctx, old, "Read", callErr); !errors.Is(err, ErrPluginExited) {
		t.Fatalf("check: %v, want ErrPluginExited", err)
	}
	if got := p.PID(); got != newPID || !alive(newPID) {
		t.Fatalf("the failure on dead pid %d killed the replacement %d (now %d, alive %v)", oldPID, newPID, got, alive(newPID))
	}
	r, err := p.Read(ctx, &sdk.ReadRequest{Type: "thing", Name: "x"})
	if err != nil || r.Attributes["pid"] != float64(newPID) {
		t.Fatalf("next call: %v, served by %v, want %d", err, r.Attributes["pid"], newPID)
	}
	if pids := running(t, f.exe); len(pids) != 1 || pids[0] != newPID {
		t.Errorf("plugin processes %v, want only %d", pids, newPID)
	}
}
