package engine

import "github.com/bulwark-iac/bulwark/core/internal/stackhint"

// workers runs functions on goroutines that are kept and reused for the
// next function once theirs returns, until close. A step's Verify read and
// the wait for its verdict each run on a goroutine of their own; started
// fresh for every step, each would grow a new stack through the provider
// call and the journal write (a copy each time it doubles), which is a
// tenth of bulwark's CPU on a wide apply. A kept goroutine has its stack
// grown already.
type workers struct {
	work chan func()
}

func newWorkers() *workers { return &workers{work: make(chan func())} }

// do runs f on an idle worker, or on a new one when none is idle.
func (w *workers) do(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	stackhint.Grow()
	for ok := true; ok; f, ok = <-w.work {
		f()
	}
}

// close lets the idle workers end; do must not be called after it.
func (w *workers) close() { close(w.work) }
