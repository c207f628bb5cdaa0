package pluginhost

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/bulwark-iac/bulwark/core/providers"
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
		_, err := old.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "hang"})
		failed <- err
	}()
	if proc, err := os.FindProcess(oldPID); err != nil {
		t.Fatal(err)
	} else if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	callErr := <-failed
	if callErr == nil {
		t.Fatal("a call on the killed process succeeded")
	}
	waitGone(t, oldPID, 10*time.Second)
	waitClientExited(t, p, 10*time.Second)

	// Another goroutine's call starts the replacement.
	if _, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
		t.Fatalf("the call that restarts the plugin: %v", err)
	}
	newPID := p.PID()
	if newPID == oldPID || !alive(newPID) {
		t.Fatalf("pid %d -> %d: no live replacement", oldPID, newPID)
	}

	// Only now does the call that ran on the dead process report its
	// failure.
	if err := p.check(ctx, false, old, "Read", callErr); !errors.Is(err, ErrPluginExited) {
		t.Fatalf("check: %v, want ErrPluginExited", err)
	}
	if got := p.PID(); got != newPID || !alive(newPID) {
		t.Fatalf("the failure on dead pid %d killed the replacement %d (now %d, alive %v)", oldPID, newPID, got, alive(newPID))
	}
	r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x"})
	if err != nil || r.Attributes["pid"] != float64(newPID) {
		t.Fatalf("next call: %v, served by %v, want %d", err, r.Attributes["pid"], newPID)
	}
	if pids := running(t, f.exe); len(pids) != 1 || pids[0] != newPID {
		t.Errorf("plugin processes %v, want only %d", pids, newPID)
	}
}

// A provider error spanning several lines reaches the caller (and so the
// journal and events) as one line; the full text goes to the host's log.
func TestHostMultiLineErrorIsOneLine(t *testing.T) {
	dir := testPlugin(t)
	var logged syncBuf
	h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Error})})
	t.Cleanup(h.Close)
	ctx := ctxT(t)
	p, err := h.Start(ctx, Config{Name: "t", Source: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "multiline", IdempotencyKey: "k"})
	if err == nil {
		t.Fatal("Create succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "create failed: boom") || !strings.Contains(msg, "[3 more line(s) in the log") {
		t.Fatalf("error %q: want one line with the first line of the diagnostic", msg)
	}
	var de *DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("error %T no longer unwraps to the diagnostics", err)
	}
	if !strings.Contains(logged.String(), "/src/main.go:99") {
		t.Fatalf("the full text is not in the log:\n%s", logged.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
