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
// An apply of 1,000 resources allocates about 27 KB per resource (gRPC
// calls, journal records, state) and keeps a live heap of only 8-10 MiB, so
// Go's default GOGC=100 collects 10 times in a 0.4 s apply, about a tenth
// of bulwark's CPU on a 2-core machine (the profile's mark workers and
// assists). A larger GOGC alone would make the heap 5x the live one at any
// size (a 10,000-resource stack's 40-50 MiB live heap would grow toward
// 200-250 MiB, past the 150 MB it may take), and a GOMEMLIMIT with it turns a stack
// whose live heap is larger than the limit into a GC that runs without
// pause. So bulwark sets GOGC after each collection from the live heap it
// found: 400 while the heap that allows stays under gcHeapTarget, less as
// the live heap grows, and never under Go's default 100, so the peak is
// max(gcHeapTarget, 2x live): no more than the default's at 10,000
// resources, where the live heap is past half the target.
//
// Measured (the real binary, flat apply of 1,000 on the mock, bulwark's own
// runtime counters): 10 -> 2 collections per apply, peak RSS 36 -> 49 MiB;
// at 10,000, over validate, plan, apply, no-op plan, no-op apply and
// teardown, flat and chain: about half the collections (apply 20-22 ->
// 11-13), peak RSS 61-109 MiB against 56-107 MiB with the default, under
// the 150 MB the issue allows (README, Benchmarks).
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
