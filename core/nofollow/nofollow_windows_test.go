//go:build windows

package nofollow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A symbolic link (which needs the privilege or developer mode to make) and
// a junction are reparse points: Open refuses both without following them.
func TestOpenRefusesReparsePoints(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make a symbolic link here: %v", err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_CREATE} {
		f, err := Open(link, flag, 0o600)
		if err == nil {
			f.Close()
			t.Fatalf("flag %#x: Open followed a symbolic link", flag)
		}
		var le *LinkError
		if !errors.As(err, &le) || !errors.Is(err, ErrRefused) {
			t.Fatalf("flag %#x: got %v, want a *LinkError", flag, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "x" {
		t.Fatalf("the link's target changed: %q", b)
	}
}

// A file with a second name is refused for writing, read as usual.
func TestOpenRefusesHardLinkedFileForWriting(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, filepath.Join(dir, "other")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if _, err := Open(p, os.O_WRONLY|os.O_APPEND, 0); !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v, want refused", err)
	}
	f, err := Open(p, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
