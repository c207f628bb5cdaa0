package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// status and doctor looking at a stack in a loop never make an apply exit 4:
// reading the lock never takes it. Before, an apply that
// met a look lost its lock to it and exited 4 naming nobody.
func TestLookingNeverLocksOutAnApply(t *testing.T) {
	plugins := buildPlugins(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	spec := writeSpec(t, "version: 1\nstack: looked\nproviders:\n  mock: {}\nresources:\n  - name: a\n    type: generic\n  - name: b\n    type: generic\n    depends_on: [a]\n")
	bulwark := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--state-dir", stateDir, "--plugin-dir", plugins}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := bulwark("apply", "--yes", spec); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var looks atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code, out := bulwark("status", spec); code != 0 {
					t.Errorf("status: exit %d\n%s", code, out)
					return
				}
				looks.Add(1)
			}
		}()
	}
	const applies = 15
	locked := 0
	for range applies {
		code, out := bulwark("apply", "--yes", spec)
		if code == 4 {
			locked++
			continue
		}
		if code != 0 {
			close(stop)
			wg.Wait()
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
	}
	close(stop)
	wg.Wait()
	if locked > 0 {
		t.Fatalf("%d of %d applies exited 4 because status looked (%d looks)", locked, applies, looks.Load())
	}
	t.Logf("%d applies, %d looks, none locked out", applies, looks.Load())
}

// writeSpec writes a spec for the crash env's stack into a temp file.
func writeSpec(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stack.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
