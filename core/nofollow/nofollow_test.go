//go:build unix

package nofollow

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenRefusesWhatIsNotItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(outside, []byte("keep me"), 0o644)
	mk := map[string]func(p string) error{
		"link":      func(p string) error { return os.Symlink(outside, p) },
		"dangling":  func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) },
		"folder":    func(p string) error { return os.Mkdir(p, 0o700) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"hard link": func(p string) error { return os.Link(outside, p) },
	}
	tests := []struct {
		name      string
		flag      int
		want      any // *LinkError or *KindError
		readToo   bool
		wantWrite bool
	}{
		{"link", os.O_RDWR | os.O_CREATE, &LinkError{}, true, false},
		{"dangling", os.O_RDWR | os.O_CREATE, &LinkError{}, true, false},
		{"folder", os.O_RDONLY, &KindError{}, true, false},
		{"fifo", os.O_RDONLY, &KindError{}, true, false},
		{"hard link", os.O_RDWR, &KindError{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := mk[tt.name](p); err != nil {
				t.Skip(err)
			}
			f, err := Open(p, tt.flag, 0o600)
			if err == nil {
				f.Close()
				t.Fatalf("Open(%s) succeeded", tt.name)
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Open: %v, want a refusal", err)
			}
			if tt.readToo {
				if _, err := ReadFile(p); !errors.Is(err, ErrRefused) {
					t.Fatalf("ReadFile: %v, want a refusal", err)
				}
			}
			if b, _ := os.ReadFile(outside); string(b) != "keep me" {
				t.Fatalf("target changed: %q", b)
			}
			if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatal("a dangling link's target was created")
			}
		})
	}
	if _, err := Open(filepath.Join(dir, "x"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
		t.Fatal("Open accepted O_TRUNC")
	}
}

func TestMkdir(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b")
	if created, err := Mkdir(p, 0o700); err != nil || !created {
		t.Fatalf("Mkdir: %v %v", created, err)
	}
	if created, err := Mkdir(p, 0o700); err != nil || created {
		t.Fatalf("Mkdir again: %v %v", created, err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(p, link)
	var le *LinkError
	if _, err := Mkdir(link, 0o700); !errors.As(err, &le) || le.Path != link {
		t.Fatalf("Mkdir(link): %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	var ke *KindError
	if _, err := Mkdir(file, 0o700); !errors.As(err, &ke) {
		t.Fatalf("Mkdir(file): %v", err)
	}
}
