package specfmt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteFileKeepsModeAndRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stack.yaml")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	src, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(src, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "new\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("after WriteFile: %q mode %v, want \"new\\n\" mode 0640", got, fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	var le *LinkError
	if _, err := ReadFile(link); !errors.As(err, &le) || le.Target != path {
		t.Errorf("ReadFile(link) = %v, want a *LinkError to %s", err, path)
	}

	hard := filepath.Join(dir, "hard.yaml")
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	src, err = ReadFile(hard)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(src, []byte("newer\n")); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("WriteFile of a hard-linked file = %v, want a refusal", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Errorf("a refused write changed the file: %q", got)
	}
}

func TestWriteFileRefusesAFileChangedSinceRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stack.yaml")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("someone else's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The same size could keep the same mtime on a coarse clock: move it.
	later := src.Info.ModTime().Add(time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(src, []byte("new\n")); !errors.Is(err, ErrChanged) {
		t.Errorf("WriteFile = %v, want ErrChanged", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "someone else's\n" {
		t.Errorf("the other writer's text was replaced: %q", got)
	}
}
