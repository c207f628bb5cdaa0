package hugeheap

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags is the VmFlags line of the mapping holding p (/proc/self/smaps).
func vmFlags(t *testing.T, p uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if dash := strings.IndexByte(line, '-'); dash > 0 {
			if sp := strings.IndexByte(line, ' '); sp > dash {
				s, err1 := strconv.ParseUint(line[:dash], 16, 64)
				e, err2 := strconv.ParseUint(line[dash+1:sp], 16, 64)
				if err1 == nil && err2 == nil {
					in = uintptr(s) <= p && p < uintptr(e)
					continue
				}
			}
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", p)
	return nil
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}

func TestAdviseMarksTheHeapMappingForHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	b := make([]byte, 8*hugePage)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	mid := (p + 4*hugePage) &^ (hugePage - 1)
	if !advise(b) {
		t.Fatal("advise refused a fresh 16 MiB of heap")
	}
	if flags := vmFlags(t, mid); !hasFlag(flags, "hg") {
		t.Fatalf("the mapping holding the object is not marked for huge pages: VmFlags %v", flags)
	}
	runtime.KeepAlive(b)
}
