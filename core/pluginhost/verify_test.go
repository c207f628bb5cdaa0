package pluginhost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The verified copy of a pinned plugin lives in a private folder under the
// host's copy folder (the state folder, or the user's cache folder), never
// under the system temp folder (often mounted noexec), and is gone after
// Close.
func TestVerifiedCopyIsNotUnderTempDir(t *testing.T) {
	dir := testPlugin(t)
	sum, err := FileSHA256(filepath.Join(dir, Prefix+"test"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		copyDir func(t *testing.T) string // the Options.CopyDir; "" = default
		want    func(t *testing.T) string // where the copies must go
	}{
		{"given folder", func(t *testing.T) string { return filepath.Join(t.TempDir(), ".plugins") }, nil},
		{"user cache folder", func(t *testing.T) string {
			t.Setenv("XDG_CACHE_HOME", t.TempDir())
			return ""
		}, func(t *testing.T) string { return filepath.Join(os.Getenv("XDG_CACHE_HOME"), "bulwark", "plugins") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			copyDir := tt.copyDir(t)
			want := copyDir
			if tt.want != nil {
				want = tt.want(t)
			}
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			h := New(Options{Dirs: []string{dir}, CopyDir: copyDir})
			p, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: filepath.Join(t.TempDir(), "data"), SHA256: sum})
			if err != nil {
				h.Close()
				t.Fatal(err)
			}
			run := p.run
			if !strings.HasPrefix(run, want+string(filepath.Separator)) {
				t.Errorf("copy at %s, want under %s", run, want)
			}
			fi, err := os.Stat(filepath.Dir(run))
			if err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("copy folder: %v, mode %v, want 0700", err, fi.Mode())
			}
			entries, _ := os.ReadDir(tmp)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "bulwark-") || strings.HasPrefix(e.Name(), Prefix) {
					t.Errorf("%s created under the temp folder", e.Name())
				}
			}
			h.Close()
			if _, err := os.Stat(filepath.Dir(run)); !os.IsNotExist(err) {
				t.Errorf("copy folder left after Close: %v", err)
			}
		})
	}
}

// The copy folders a killed host left behind on this machine are swept by
// the next host; a live process's and another machine's are kept.
func TestLeftoverCopiesAreSwept(t *testing.T) {
	dir := testPlugin(t)
	sum, err := FileSHA256(filepath.Join(dir, Prefix+"test"))
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), ".plugins")
	os.MkdirAll(base, 0o700)
	dead := filepath.Join(base, runPrefix()+"999999999-abc")
	live := filepath.Join(base, runPrefix()+"1-abc") // pid 1 always runs
	other := filepath.Join(base, "run-elsewhere.example-999999999-abc")
	for _, d := range []string{dead, live, other} {
		os.MkdirAll(d, 0o700)
		os.WriteFile(filepath.Join(d, Prefix+"test-1"), []byte("x"), 0o500)
	}
	h := New(Options{Dirs: []string{dir}, CopyDir: base})
	defer h.Close()
	if _, err := h.Start(ctxT(t), Config{Name: "t", Source: "test", DataDir: filepath.Join(t.TempDir(), "data"), SHA256: sum}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead host's copies were kept: %v", err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
