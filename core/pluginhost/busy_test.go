package pluginhost

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// An exec refused because the executable is open for writing somewhere
// ("text file busy": on Linux, a child forked while another start wrote its
// verified copy holds that copy open until its own exec) is tried again, and
// the start succeeds once the file is free; one that stays busy fails
// naming it.
func TestHostRetriesBusyExecutable(t *testing.T) {
	src := filepath.Join(testPlugin(t), Prefix+"test")
	for _, tc := range []struct {
		name    string
		freeAt  int // the retry at which the writer closes (0: never)
		wantErr bool
	}{
		{"freed before the first retry", 1, false},
		{"freed later", 3, false},
		{"never freed", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, Prefix+"test")
			copyExecutable(t, src, exe)
			w, err := os.OpenFile(exe, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			retries := 0
			h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second, onBusy: func() {
				retries++
				if retries == tc.freeAt {
					w.Close()
				}
			}})
			defer h.Close()
			p, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: t.TempDir()})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), syscall.ETXTBSY.Error()) {
					t.Fatalf("Start = %v, want %q", err, syscall.ETXTBSY.Error())
				}
				if retries != execAttempts-1 {
					t.Errorf("%d retries, want %d", retries, execAttempts-1)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if retries != tc.freeAt {
				t.Errorf("%d retries, want %d", retries, tc.freeAt)
			}
			if _, err := p.Read(ctxT(t), &providers.ReadRequest{Type: "thing", Name: "x"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
