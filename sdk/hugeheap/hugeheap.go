// Package hugeheap asks Linux to back a process's Go heap with transparent
// huge pages ahead of a large piece of work.
//
// A Go program touches every page of its heap once as the heap grows, and
// each first touch is a page fault: the kernel zeroes a 4 KiB page and maps
// it. On a virtual machine a fault is costly: 10-14 µs each on the 2-core
// machines bulwark's benchmarks run on, where a 2 MiB huge page, which
// replaces 512 of them, costs 0.1 ms to map when the machine's memory is
// warm and 2-4 ms when it is cold. A flat apply of 200 resources took 7,300
// faults across bulwark and its provider, about a third of their CPU, most
// of them in the bursts of calls that open each wave of steps. Since Go
// 1.21.1 the runtime leaves huge pages to the system's setting, and the
// common one ("madvise", Debian's and Ubuntu's default) gives them only to
// memory a program marks with madvise(MADV_HUGEPAGE).
//
// Prepare marks the heap that way and hands a fresh region of it back to
// the runtime: it allocates one large object, which the runtime maps fresh
// (and does not touch: fresh memory is already zero), marks the mapping
// that holds it (the object, and the heap mapped before it, whose untouched
// pages the runtime also hands out), drops the object and collects. The
// runtime's next spans (objects, goroutine stacks) are then carved from
// marked memory, where the first touch of each 2 MiB maps all of it at
// once. The collection is the price (a few milliseconds of CPU on a small
// heap, most of it the collector's own first page faults, which a long
// command pays anyway), so only a command with much work ahead calls it
// (core/stack decides; sdk.Serve prepares a plugin's heap when the host
// asks, EnvHint).
//
// The marking is only advice: where the kernel has no transparent huge
// pages, or they are "never", nothing changes; where they are "always", the
// heap had them already. GODEBUG=disablethp=1, the runtime's own switch
// against huge pages for the heap, turns Prepare off too.
package hugeheap

import (
	"os"
	"runtime"
	"strings"
)

// Size is the region a command with much work ahead prepares: the heap
// bulwark's collector pacing (core/gcpace) lets grow to before collecting
// (48 MiB) with room to spare. The region is address space, not memory:
// only the pages the heap touches are backed.
const Size = 64 << 20

// EnvHint is the variable the host sets in a plugin's environment when the
// command ahead is large (value "1"): sdk.Serve then prepares the plugin's
// heap as the host prepares its own.
const EnvHint = "BULWARK_PLUGIN_HUGEHEAP"

// MinSize is the smallest region Prepare marks: a few huge pages. A
// smaller object is not mapped fresh for itself, and the faults it could
// save cost less than the collection Prepare runs.
const MinSize = 8 << 20

// Prepare marks size bytes of fresh heap for huge pages and frees them to
// the runtime, unless GODEBUG has disablethp=1 or size is under MinSize. It
// reports whether it marked anything (false also off Linux, or when the
// kernel refused the advice).
func Prepare(size uintptr) bool {
	if size < MinSize || disabled(os.Getenv("GODEBUG")) {
		return false
	}
	b := make([]byte, size)
	ok := advise(b)
	runtime.KeepAlive(b)
	if ok {
		runtime.GC()
	}
	return ok
}

// disabled reports whether godebug (a GODEBUG value) turns huge pages off.
func disabled(godebug string) bool {
	for _, kv := range strings.Split(godebug, ",") {
		if strings.TrimSpace(kv) == "disablethp=1" {
			return true
		}
	}
	return false
}
