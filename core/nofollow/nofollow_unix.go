//go:build unix

package nofollow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path with O_NOFOLLOW: the kernel refuses a link in the
// last component, with no window between a check and the open. regular asks
// for O_NONBLOCK, so that opening a fifo planted at path does not hang
// before checkFile refuses it.
func openNoFollow(path string, flag int, perm os.FileMode, regular bool) (*os.File, error) {
	extra := syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	if regular {
		extra |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flag|extra, perm)
	if err != nil {
		if isLink(path, err) {
			return nil, &LinkError{Path: path}
		}
		return nil, err
	}
	return f, nil
}

// isLink tells whether an open of path failed because its last component is
// a symbolic link (O_NOFOLLOW answers ELOOP, or, with O_DIRECTORY, ENOTDIR).
func isLink(path string, err error) bool {
	if !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.EMLINK) {
		return false
	}
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&fs.ModeSymlink != 0
}

// Links returns the number of hard links (names) of the open file f.
func Links(f *os.File) (uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return statLinks(fi)
}

// openLinks is Links for the open file f whose Stat answer fi is.
func openLinks(_ *os.File, fi fs.FileInfo) (uint64, error) { return statLinks(fi) }

// PathLinks returns the number of hard links of the file at path, whose
// os.Lstat answer fi is.
func PathLinks(_ string, fi fs.FileInfo) (uint64, error) {
	return statLinks(fi)
}

func statLinks(fi fs.FileInfo) (uint64, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no link count", fi.Name())
	}
	return uint64(st.Nlink), nil
}
