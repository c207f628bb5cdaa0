package hugeheap

import "testing"

func TestDisabledReadsTheRuntimesSwitch(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		want    bool
	}{
		{"", false},
		{"disablethp=1", true},
		{"madvdontneed=1,disablethp=1", true},
		{"disablethp=1, gctrace=1", true},
		{"disablethp=0", false},
		{"xdisablethp=1", false},
		{"gctrace=1", false},
	} {
		if got := disabled(tc.godebug); got != tc.want {
			t.Errorf("disabled(%q) = %v, want %v", tc.godebug, got, tc.want)
		}
	}
}

func TestPrepareDoesNothingWhenTheRuntimeTurnsHugePagesOff(t *testing.T) {
	t.Setenv("GODEBUG", "disablethp=1")
	if Prepare(Size) {
		t.Fatal("Prepare marked the heap under GODEBUG=disablethp=1")
	}
}

// A region under MinSize (a cheap KDF's few KiB, say) is left alone: no
// mapping marked, no collection run. Where the kernel takes the advice
// (Linux with transparent huge pages on "madvise"), Prepare would
// otherwise mark the heap mapping the small object lies in.
func TestPrepareLeavesASmallRegionAlone(t *testing.T) {
	t.Setenv("GODEBUG", "")
	for _, size := range []uintptr{64 << 10, MinSize - 1} {
		if Prepare(size) {
			t.Errorf("Prepare(%d) marked the heap", size)
		}
	}
}
