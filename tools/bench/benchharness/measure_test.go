package benchharness

import (
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want time.Duration
		ok   bool
	}{
		{"linux", "10144 (cat) R 10048 10048 12428 0 -1 4194304 100 0 0 0 250 31 0 0 20 0 1 0", 2810 * time.Millisecond, true},
		{"a name with spaces and parens", "7 (a b) c)) S 1 1 1 0 -1 0 0 0 0 0 3 4 0 0", 70 * time.Millisecond, true},
		{"short", "7 (x) S 1 1", 0, false},
		{"no name", "7 x S", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseStatCPU([]byte(tt.stat))
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: parseStatCPU = %s, %v, want %s, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseHWM(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   int64
		ok     bool
	}{
		{"linux", "Name:\tbulwark\nVmPeak:\t  812 kB\nVmHWM:\t   23644 kB\nVmRSS:\t   20000 kB\n", 23644 * 1024, true},
		{"absent", "Name:\tbulwark\nVmRSS:\t 1 kB\n", 0, false},
		{"bad unit", "VmHWM:\t 1 MB\n", 0, false},
		{"bad number", "VmHWM:\t x kB\n", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseHWM([]byte(tt.status))
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: parseHWM = %d, %v, want %d, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// TestFinalCPU: a child's own CPU read when it has exited, before it is
// reaped, is what wait4 then reports of it (it has no children of its
// own), to /proc's clock tick.
func TestFinalCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc and waitid: Linux")
	}
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got, ok := finalCPU(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	want := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if !ok || want < 5*clockTick || got < want-2*clockTick || got > want+2*clockTick {
		t.Errorf("finalCPU = %v, %v; wait4 says %v", got, ok, want)
	}
}
