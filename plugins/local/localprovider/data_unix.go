//go:build unix

package localprovider

import (
	"io/fs"
	"syscall"
)

// openNoFollow opens a file without following a symbolic link in its last
// component and without blocking on a fifo or a device.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// linkCount is how many hard links the file has.
func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true // Nlink is narrower on some systems
}
