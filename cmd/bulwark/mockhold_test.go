package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// mockHolds is a folder of the mock's hold files (BULWARK_MOCK_HOLD, see
// mockprovider.EnvHold): each names one provider call, CALL-NAME-N (the
// Nth call of that kind naming that resource in one plugin process), which
// the mock marks begun and keeps open until the test releases it.
type mockHolds struct {
	t   *testing.T
	dir string
}

// holdCalls makes the calls named held in the plugins of the commands
// given its env; whatever is still held when the test ends is released.
func holdCalls(t *testing.T, names ...string) *mockHolds {
	t.Helper()
	h := &mockHolds{t: t, dir: t.TempDir()}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(h.dir, n+".hold"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range names {
			_ = os.Remove(filepath.Join(h.dir, n+".hold"))
		}
	})
	return h
}

// env is the environment variable that gives a plugin these holds.
func (h *mockHolds) env() string { return "BULWARK_MOCK_HOLD=" + h.dir }

// begun waits, with a deadline, until the call name is in flight in the
// plugin (and held there).
func (h *mockHolds) begun(name string) {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(h.dir, name+".begun")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the held call %s never began (did the host's calls change? BULWARK_MOCK_CALLS=FILE lists them)", name)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// release lets the call name go on.
func (h *mockHolds) release(name string) {
	h.t.Helper()
	if err := os.Remove(filepath.Join(h.dir, name+".hold")); err != nil {
		h.t.Fatal(err)
	}
}

// anyBegun waits, with a deadline, until one of the calls names is in
// flight in the plugin (and held there), and returns it: for a test that
// holds several calls and does not care which the host makes first.
func (h *mockHolds) anyBegun(names ...string) string {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(h.dir, n+".begun")); err == nil {
				return n
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("none of the held calls %v began (did the host's calls change? BULWARK_MOCK_CALLS=FILE lists them)", names)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, bounded by the deadline
	}
}
