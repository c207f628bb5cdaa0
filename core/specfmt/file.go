package specfmt

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bulwark-iac/bulwark/core/nofollow"
)

// MaxSize is the largest spec file ReadFile reads, as core/spec's Load.
const MaxSize = 1 << 20

// LinkError refuses a spec path that is a symbolic link: fmt neither writes
// through it (that would rewrite a file somewhere else) nor replaces it
// (that would break the link).
type LinkError struct {
	Path, Target string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link to %s: fmt does not follow links (writing through it would rewrite another file, replacing it would break the link); run fmt on %s", e.Path, e.Target, e.Target)
}

// ErrChanged is returned (wrapped) by WriteFile when the file changed
// after it was read: it is left as the other writer left it.
var ErrChanged = errors.New("the file changed while it was being formatted; run fmt again")

// Source is a spec file as ReadFile read it.
type Source struct {
	Path string
	Text []byte
	Info fs.FileInfo // of the file read, for WriteFile
}

// ReadFile reads the spec file at path: a regular file, not a symbolic
// link (a *LinkError), at most MaxSize bytes.
func ReadFile(path string) (*Source, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, linkError(path)
	}
	f, err := nofollow.Open(path, os.O_RDONLY, 0)
	if err != nil {
		var le *nofollow.LinkError
		if errors.As(err, &le) {
			return nil, linkError(path)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	text, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(text) > MaxSize {
		return nil, fmt.Errorf("%s: spec is larger than %d bytes (1 MiB); refusing to read it", path, MaxSize)
	}
	return &Source{Path: path, Text: text, Info: fi}, nil
}

func linkError(path string) error {
	target, err := os.Readlink(path)
	if err != nil {
		target = "another file"
	}
	return &LinkError{Path: path, Target: target}
}

// WriteFile replaces src's file with text atomically: a temporary file in
// the same folder with the same permissions, synced, renamed over it, the
// folder synced. It refuses a file that has become a link, has other hard
// links (they would keep the old text), or changed since it was read.
func WriteFile(src *Source, text []byte) (err error) {
	path := src.Path
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return linkError(path)
	}
	if !os.SameFile(fi, src.Info) || fi.Size() != src.Info.Size() || !fi.ModTime().Equal(src.Info.ModTime()) {
		return fmt.Errorf("%s: %w", path, ErrChanged)
	}
	if n, err := nofollow.PathLinks(path, fi); err == nil && n > 1 {
		return fmt.Errorf("%s has %d hard links: replacing it would leave the other names with the old text; refusing to rewrite it", path, n)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".fmt-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(text); err != nil {
		return err
	}
	if err = tmp.Chmod(fi.Mode().Perm()); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // the rename is done; a folder that cannot sync loses nothing more
		d.Close()
	}
	return nil
}
