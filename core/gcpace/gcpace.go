// Package gcpace paces the garbage collector of a bulwark process from its
// live heap (the CLI's, and bulwark-bench's when it runs a command in
// process, so that its profiles show the CLI's collector).
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The pacing.
//
// An apply allocates a lot per resource (gRPC calls, journal records,
// state) but keeps a small live heap, so Go's default GOGC=100 collects many
// times per apply, a visible share of bulwark's CPU (the profile's mark
// workers and assists). A larger GOGC alone would make the heap 5x the live
// one at any size (a 10,000-resource stack's would grow past the memory the
// Benchmarks section of docs/development.md allows), and a GOMEMLIMIT with it turns a
// stack whose live heap is larger than the limit into a GC that runs without
// pause. So bulwark sets GOGC after each collection from the live heap it
// found: 400 while the heap that allows stays under gcHeapTarget, less as
// the live heap grows, and never under Go's default 100, so the peak is
// max(gcHeapTarget, 2x live): no more than the default's at 10,000
// resources, where the live heap is past half the target. What it saved,
// measured, is in bench/history.md.
//
// A GOGC or GOMEMLIMIT in the environment is the user's choice: bulwark
// then leaves the collector as the runtime set it.
const (
	gcHeapTarget  = 48 << 20 // the heap goal the tuning keeps to while GOGC can stay above 100
	gcPercentMax  = 400
	gcPercentBase = 100 // Go's default, the least it sets
)

// Start starts the pacing unless the environment sets the collector, and
// reports whether it did. Call it once, at a process's start.
func Start() bool {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return false
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return false
	}
	newGCTuner(debug.SetGCPercent).arm()
	return true
}

// gcTuner sets GOGC once per collection: a finalizer on an object nothing
// refers to runs after each GC cycle, and arms the next one.
type gcTuner struct {
	setPercent func(int) int // debug.SetGCPercent
	sample     []metrics.Sample
	last       int // the GOGC last set (-1: none yet)
}

func newGCTuner(setPercent func(int) int) *gcTuner {
	t := &gcTuner{setPercent: setPercent, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, last: -1}
	t.adjust(0) // no collection yet: the heap is what the runtime starts with
	return t
}

// gcSentinel holds a pointer so that it is an allocation of its own (a
// finalizer on a tiny object batched with others may never run).
type gcSentinel struct{ _ *byte }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		metrics.Read(t.sample)
		t.adjust(t.sample[0].Value.Uint64())
		t.arm()
	})
}

// adjust sets GOGC for a live heap of live bytes.
func (t *gcTuner) adjust(live uint64) {
	if p := gcPercent(live); p != t.last {
		t.setPercent(p)
		t.last = p
	}
}

// gcPercent is the GOGC whose heap goal, live x (1 + GOGC/100), stays under
// gcHeapTarget, between gcPercentBase and gcPercentMax.
func gcPercent(live uint64) int {
	if live == 0 {
		return gcPercentMax
	}
	p := int(gcHeapTarget*100/live) - 100
	return max(gcPercentBase, min(gcPercentMax, p))
}
