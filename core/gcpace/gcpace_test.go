package gcpace

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		live uint64
		want int
	}{
		{0, 400},
		{8 * mib, 400},   // a 1,000-resource apply: 5x live is 40 MiB
		{9 * mib, 400},   // 5x is 45 MiB, under the target
		{12 * mib, 300},  // 4x is the target
		{16 * mib, 200},  // 3x
		{24 * mib, 100},  // 2x is the target: Go's default from here on
		{45 * mib, 100},  // a 10,000-resource stack: as with the default
		{500 * mib, 100}, // never under the default, however large
	}
	for _, tt := range tests {
		if got := gcPercent(tt.live); got != tt.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", tt.live/mib, got, tt.want)
		}
	}
}

// The user's GOGC or GOMEMLIMIT is left alone.
func TestStartLeavesTheEnvironmentsSetting(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			if Start() {
				t.Errorf("with %s set, Start paced the collector", env)
			}
		})
	}
}

// The tuner sets GOGC when it starts and again after collections, from the
// live heap each found.
func TestGCTunerFollowsCollections(t *testing.T) {
	var mu sync.Mutex
	var set []int
	tuner := newGCTuner(func(p int) int {
		mu.Lock()
		defer mu.Unlock()
		if len(set) < 10 { // it goes on after the test, at every collection
			set = append(set, p)
		}
		return 100
	})
	// It starts at the most; a heap held live past the target brings it
	// down to the default.
	big := make([]byte, 2*gcHeapTarget)
	tuner.arm()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		mu.Lock()
		got := append([]int(nil), set...)
		mu.Unlock()
		if len(got) >= 2 {
			if got[0] != gcPercentMax || got[1] != gcPercentBase {
				t.Errorf("GOGC set to %v, want %d then %d", got, gcPercentMax, gcPercentBase)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no collection adjusted GOGC (set: %v)", got)
		}
		runtime.Gosched()
	}
	runtime.KeepAlive(big)
}
