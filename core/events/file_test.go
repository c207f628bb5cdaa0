package events

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// The events file is 0600 whether bulwark creates it or finds it, and a
// symbolic link is refused with its target untouched.
func TestOpenFileModeAndLinks(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.jsonl")
	existing := filepath.Join(dir, "existing.jsonl")
	os.WriteFile(existing, []byte("old\n"), 0o644)
	for _, p := range []string{fresh, existing} {
		f, err := OpenFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("new\n")
		f.Close()
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "old\nnew\n" {
		t.Errorf("existing file: %q, want appended", b)
	}
	outside := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(outside, []byte("keep me\n"), 0o644)
	link := filepath.Join(dir, "link.jsonl")
	os.Symlink(outside, link)
	if f, err := OpenFile(link); err == nil {
		f.Close()
		t.Fatal("OpenFile followed a symbolic link")
	} else if !errors.Is(err, nofollow.ErrRefused) || !strings.Contains(err.Error(), link) {
		t.Fatalf("OpenFile: %v", err)
	}
	fi, _ := os.Stat(outside)
	if b, _ := os.ReadFile(outside); string(b) != "keep me\n" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("target changed: %q %v", b, fi.Mode())
	}
	// /dev/null is a device: written to, never chmodded.
	f, err := OpenFile(os.DevNull)
	if err != nil {
		t.Fatalf("OpenFile(%s): %v", os.DevNull, err)
	}
	f.Close()
}
