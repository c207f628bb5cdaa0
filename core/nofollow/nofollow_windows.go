//go:build windows

package nofollow

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// openNoFollow opens path with CreateFile and FILE_FLAG_OPEN_REPARSE_POINT:
// a symbolic link or a junction in the last component is opened itself,
// never what it points to, and refused (*LinkError) once its attributes are
// read from the handle, so there is no window between a check and the open.
// Every reparse point is refused, not only links: bulwark keeps none in its
// state folder. The share mode includes FILE_SHARE_DELETE so that a file
// bulwark reads can still be replaced by a rename (sdk/atomicfile), as on
// unix. The handle is not inherited by child processes (the plugins).
func openNoFollow(path string, flag int, perm os.FileMode, regular bool) (*os.File, error) {
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var access uint32
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		access = windows.GENERIC_READ
	case os.O_WRONLY:
		access = windows.GENERIC_WRITE
	case os.O_RDWR:
		access = windows.GENERIC_READ | windows.GENERIC_WRITE
	}
	if flag&os.O_CREATE != 0 {
		access |= windows.GENERIC_WRITE
	}
	if flag&os.O_APPEND != 0 {
		// As os.OpenFile does: every right GENERIC_WRITE grants but
		// FILE_WRITE_DATA, so that each write goes to the end.
		access &^= windows.GENERIC_WRITE
		access |= windows.FILE_APPEND_DATA | windows.FILE_WRITE_ATTRIBUTES | windows.FILE_WRITE_EA | windows.STANDARD_RIGHTS_WRITE | windows.SYNCHRONIZE
	}
	attrs := uint32(windows.FILE_ATTRIBUTE_NORMAL)
	if perm&0o200 == 0 {
		attrs = windows.FILE_ATTRIBUTE_READONLY
	}
	attrs |= windows.FILE_FLAG_OPEN_REPARSE_POINT
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		// A folder opens only with backup semantics; it is then refused
		// as a KindError rather than an access error.
		attrs |= windows.FILE_FLAG_BACKUP_SEMANTICS
	}
	var create uint32
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		create = windows.CREATE_NEW
	case flag&os.O_CREATE != 0:
		create = windows.OPEN_ALWAYS
	default:
		create = windows.OPEN_EXISTING
	}
	share := uint32(windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE)
	h, err := windows.CreateFile(name, access, share, nil, create, attrs, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if t, _ := windows.GetFileType(h); t != windows.FILE_TYPE_DISK {
		// A device or a pipe (NUL, \\.\pipe\…): no reparse point, and
		// no file information to read.
		if regular {
			windows.CloseHandle(h)
			return nil, &KindError{Path: path, Want: "a regular file", Got: "a device or a pipe"}
		}
		return os.NewFile(uintptr(h), path), nil
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		windows.CloseHandle(h)
		return nil, &LinkError{Path: path}
	}
	if regular && info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
		windows.CloseHandle(h)
		return nil, &KindError{Path: path, Want: "a regular file", Got: "a folder"}
	}
	return os.NewFile(uintptr(h), path), nil
}

// Links returns the number of hard links (names) of the open file f.
func Links(f *os.File) (uint64, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return 0, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return uint64(info.NumberOfLinks), nil
}

// openLinks is Links for the open file f (a FileInfo carries no link
// count here).
func openLinks(f *os.File, _ fs.FileInfo) (uint64, error) { return Links(f) }

// PathLinks returns the number of hard links of the file at path (whose
// os.Lstat answer fi is), read from a handle opened without following a
// link: on Windows a FileInfo does not carry the count.
func PathLinks(path string, fi fs.FileInfo) (uint64, error) {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return 1, nil
	}
	f, err := openNoFollow(path, os.O_RDONLY, 0, false)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return Links(f)
}
