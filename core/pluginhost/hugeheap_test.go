package pluginhost

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/sdk/hugeheap"
)

// hugeMarked is how many bytes of pid's mappings are marked for
// transparent huge pages (VmFlags "hg", /proc/PID/smaps).
func hugeMarked(t *testing.T, pid int) uint64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatalf("smaps: %v", err)
	}
	defer f.Close()
	var size, total uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if dash, sp := strings.IndexByte(line, '-'), strings.IndexByte(line, ' '); dash > 0 && sp > dash {
			s, err1 := strconv.ParseUint(line[:dash], 16, 64)
			e, err2 := strconv.ParseUint(line[dash+1:sp], 16, 64)
			if err1 == nil && err2 == nil {
				size = e - s
				continue
			}
		}
		if strings.HasPrefix(line, "VmFlags:") && strings.Contains(line+" ", " hg ") {
			total += size
		}
	}
	return total
}

// TestHugeHeapHintReachesThePlugin starts the test plugin (on sdk.Serve)
// with and without Config.HugeHeap: with it, the plugin's heap is marked
// for huge pages before its handshake (sdk/hugeheap), so the mark is there
// once Start returns; without it, the plugin leaves its heap alone.
func TestHugeHeapHintReachesThePlugin(t *testing.T) {
	dir := testPlugin(t)
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	marked := map[bool]uint64{}
	for _, huge := range []bool{false, true} {
		h := New(Options{Dirs: []string{dir}, StartTimeout: 30 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p, err := h.Start(ctx, Config{Name: "t", Source: "test", DataDir: filepath.Join(t.TempDir(), "data"), HugeHeap: huge})
		cancel()
		if err != nil {
			h.Close()
			t.Fatalf("Start (HugeHeap %v): %v", huge, err)
		}
		marked[huge] = hugeMarked(t, p.PID())
		h.Close()
	}
	if marked[true] < hugeheap.Size/2 {
		t.Errorf("with the hint the plugin marked %d bytes for huge pages, want its heap (at least %d)", marked[true], hugeheap.Size/2)
	}
	if marked[false] >= hugeheap.Size/2 {
		t.Errorf("without the hint the plugin marked %d bytes for huge pages", marked[false])
	}
	t.Logf("marked for huge pages: %d bytes with the hint, %d without", marked[true], marked[false])
}
