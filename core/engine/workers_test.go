package engine

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// A function given to do runs at once even while every worker is busy
// (a Verify read never waits for another step's), an idle worker takes
// the next one instead of a new goroutine, and close lets them all end.
func TestWorkersNeverWaitReuseAndEnd(t *testing.T) {
	before := runtime.NumGoroutine()
	w := newWorkers()
	const n = 10
	var running atomic.Int32
	release := make(chan struct{})
	for range n {
		w.do(func() {
			running.Add(1)
			<-release
			running.Add(-1)
		})
	}
	waitFor(t, "every function to run at once", func() bool { return running.Load() == n })
	close(release)
	waitFor(t, "the functions to end", func() bool { return running.Load() == 0 })
	// Idle now (or about to be): what comes next runs on them. Started
	// fresh, each of 100 functions would leave a worker more behind.
	peak := runtime.NumGoroutine()
	done := make(chan struct{})
	for range 100 {
		w.do(func() { done <- struct{}{} })
		<-done
	}
	if now := runtime.NumGoroutine(); now-peak >= n {
		t.Errorf("%d goroutines after 100 more functions one at a time, %d before: the workers were not reused", now, peak)
	}
	w.close()
	waitFor(t, "the workers to end after close", func() bool { return runtime.NumGoroutine() <= before })
}
