package nofollow

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// LinkError refuses a path under the state folder that is a symbolic link.
type LinkError struct {
	Path string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link: bulwark never follows links in its state folder, so it refuses it (replace the link with the real file or folder, or remove it)", e.Path)
}

// KindError refuses a path that is not what bulwark keeps there: not a
// regular file (or not a folder), or a file with other hard links.
type KindError struct {
	Path string
	Want string // "a regular file", "a folder", "a file with no other hard link"
	Got  string
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%s is %s, not %s: bulwark refuses to use it", e.Path, e.Got, e.Want)
}

// ErrRefused matches a *LinkError or a *KindError with errors.Is.
var ErrRefused = errors.New("refused path in the state folder")

func (e *LinkError) Is(target error) bool { return target == ErrRefused }
func (e *KindError) Is(target error) bool { return target == ErrRefused }

// Open opens the regular file at path like os.OpenFile, but refuses a
// symbolic link (on Windows, any reparse point: a symbolic link or a
// junction), anything but a regular file, and (when flag opens for writing)
// a file with more than one hard link. flag must not hold O_TRUNC: nothing
// here truncates a file it did not create.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	if flag&os.O_TRUNC != 0 {
		return nil, fmt.Errorf("open %s: nofollow.Open never truncates", path)
	}
	f, err := openNoFollow(path, flag, perm, true)
	if err != nil {
		return nil, err
	}
	if err := checkFile(f, path, flag&(os.O_WRONLY|os.O_RDWR) != 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenAny opens path like os.OpenFile without following a symbolic link in
// its last component (refused with a *LinkError), whatever it is: a fifo or
// a device too (a pipe to a collector, /dev/null). flag must not hold
// O_TRUNC.
func OpenAny(path string, flag int, perm os.FileMode) (*os.File, error) {
	if flag&os.O_TRUNC != 0 {
		return nil, fmt.Errorf("open %s: nofollow.OpenAny never truncates", path)
	}
	return openNoFollow(path, flag, perm, false)
}

func checkFile(f *os.File, path string, writing bool) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &KindError{Path: path, Want: "a regular file", Got: kind(fi.Mode())}
	}
	if !writing {
		return nil
	}
	if n, err := openLinks(f, fi); err == nil && n > 1 {
		return &KindError{Path: path, Want: "a file with no other hard link", Got: fmt.Sprintf("a file with %d hard links", n)}
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// ReadFile reads the regular file at path, refusing a symbolic link or a
// special file. A missing file is an error matching fs.ErrNotExist.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Mkdir makes the folder path with mode perm unless it exists, creating its
// parents as os.MkdirAll does. An existing path must be a real folder, not a
// symbolic link to one. created tells whether this call made it.
func Mkdir(path string, perm os.FileMode) (created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), perm); err != nil {
		return false, err
	}
	err = os.Mkdir(path, perm)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, err
	}
	return false, CheckDir(path)
}

// CheckDir refuses path unless it is a real folder (a missing one is an error
// matching fs.ErrNotExist).
func CheckDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &LinkError{Path: path}
	}
	if !fi.IsDir() {
		return &KindError{Path: path, Want: "a folder", Got: kind(fi.Mode())}
	}
	return nil
}

// CheckReplaceable refuses to replace path (by renaming a new file over it)
// when it is a symbolic link or not a regular file; a missing path is fine.
func CheckReplaceable(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &LinkError{Path: path}
	}
	if !fi.Mode().IsRegular() {
		return &KindError{Path: path, Want: "a regular file", Got: kind(fi.Mode())}
	}
	return nil
}
