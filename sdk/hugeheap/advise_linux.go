package hugeheap

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the architectures Go
// runs on Linux with (x86-64, arm64 with 4 KiB pages).
const hugePage = 2 << 20

// madvHugePage is MADV_HUGEPAGE.
const madvHugePage = 14

// advise marks the whole huge pages of the mapping b lies in: b's own
// (fresh: the runtime mapped it for b) and the heap the runtime mapped
// before it and has not touched yet, from which it carves spans first.
func advise(b []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := p, p+uintptr(len(b))
	if s, e, ok := mappingOf(p); ok && s <= lo && hi <= e {
		lo, hi = s, e
	}
	beg := (lo + hugePage - 1) &^ (hugePage - 1)
	end := hi &^ (hugePage - 1)
	if beg >= end {
		return false
	}
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, beg, end-beg, madvHugePage)
	return errno == 0
}

// mappingOf is the start and end of the mapping holding address p, from
// /proc/self/maps.
func mappingOf(p uintptr) (start, end uintptr, ok bool) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		dash := bytes.IndexByte(line, '-')
		sp := bytes.IndexByte(line, ' ')
		if dash < 0 || sp < dash {
			continue
		}
		s, err1 := strconv.ParseUint(string(line[:dash]), 16, 64)
		e, err2 := strconv.ParseUint(string(line[dash+1:sp]), 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if uintptr(s) <= p && p < uintptr(e) {
			return uintptr(s), uintptr(e), true
		}
	}
	return 0, 0, false
}
