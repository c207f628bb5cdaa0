package pluginhost

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// A restart in progress (a crashed plugin started again, its handshake,
// schema and Configure) holds nothing the other calls of that provider
// need: Schema and PID answer at once, a call whose context ends while it
// waits for the restart returns its context's error, and once the restart
// ends every waiting call runs on the new process. Close during a restart
// leaves no process behind.
func TestRestartBlocksNoOtherCall(t *testing.T) {
	dir := testPlugin(t)
	h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second})
	t.Cleanup(h.Close)
	gate := make(chan struct{})
	entered := make(chan struct{}, 8)
	starts := 0
	cfg := Config{Name: "t", Source: "test", DataDir: filepath.Join(t.TempDir(), "data"),
		Check: func(*providers.GetSchemaResponse) error {
			starts++ // under the start: one at a time
			if starts > 1 {
				entered <- struct{}{}
				<-gate
			}
			return nil
		}}
	ctx := ctxT(t)
	p, err := h.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := p.Create(ctx, &providers.CreateRequest{Type: "thing", Name: "crash", IdempotencyKey: "k"}); !errors.Is(err, ErrPluginExited) {
		t.Fatalf("Create that kills the plugin: %v", err)
	}
	// The restart: held in Check until the gate opens.
	restarted := make(chan error, 1)
	go func() {
		_, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "x", ID: "none"})
		restarted <- err
	}()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the restart never reached its Check")
	}

	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			close(gate)
			t.Fatalf("%s waited for the restart", what)
		}
	}
	within("Schema", func() { _ = p.Schema() })
	within("PID", func() { _ = p.PID() })
	within("a Read whose context ends", func() {
		short, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := p.Read(short, &providers.ReadRequest{Type: "thing", Name: "y"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Read with an ended context during the restart: %v, want context.Canceled", err)
		}
	})
	// A call that waits gets the restarted process.
	waiting := make(chan error, 1)
	go func() {
		r, err := p.Read(ctx, &providers.ReadRequest{Type: "thing", Name: "z", ID: "none"})
		if err == nil && r.Attributes["pid"] != float64(p.PID()) {
			err = errors.New("served by another process than the current one")
		}
		waiting <- err
	}()
	close(gate)
	for _, c := range []chan error{restarted, waiting} {
		if err := <-c; err != nil {
			t.Errorf("call after the restart: %v", err)
		}
	}
	if starts != 2 {
		t.Errorf("%d starts, want 2 (one restart for every waiting call)", starts)
	}
}
