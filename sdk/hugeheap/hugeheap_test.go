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
	if Prepare(4 << 20) {
		t.Fatal("Prepare marked the heap under GODEBUG=disablethp=1")
	}
}
