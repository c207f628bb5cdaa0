package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/bulwark-iac/bulwark/core/stack"
)

// interruptGrace is how long a second interrupt waits for the command to
// wind down (provider calls are cancelled at once) before bulwark exits
// anyway: the journal makes stopping at any instant safe.
const interruptGrace = 10 * time.Second

// interrupts handles Ctrl-C and SIGTERM. For a mutating command the first
// one is graceful: no step starts, the running ones finish (each call
// within its timeout), and what ran is rolled back. The second stops
// waiting: provider calls are cancelled, and whatever is left stays in the
// journal for `bulwark resume`. A read-only command stops at the first.
func (c *cli) interrupts(sigs <-chan os.Signal, done <-chan struct{}, cancel context.CancelFunc, exit func(int)) {
	resume := func() string {
		if p, _ := c.specPath.Load().(string); p != "" {
			return "`bulwark resume " + p + "`"
		}
		return "`bulwark resume SPEC`"
	}
	select {
	case <-done:
		return
	case sig := <-sigs:
		if !c.graceful.Load() {
			// Nothing to wind down (a read-only command, or a question
			// not yet answered): stop now, and exit if that takes long.
			cancel()
			select {
			case <-done:
			case <-sigs:
				exit(stack.ExitError)
			case <-time.After(interruptGrace / 5):
				fmt.Fprintf(c.stderr, "bulwark: %v: exiting\n", sig)
				exit(stack.ExitError)
			}
			return
		}
		close(c.stop)
		fmt.Fprintf(c.stderr, "bulwark: %v: no new step starts; the running ones finish, then what ran is rolled back (interrupt again to stop waiting, then run %s)\n", sig, resume())
	}
	select {
	case <-done:
		return
	case sig := <-sigs:
		cancel()
		fmt.Fprintf(c.stderr, "bulwark: %v again: no longer waiting (provider calls are cancelled). It is safe to stop here: the journal records where the operation is, and %s finishes it (other operations refuse until then)\n", sig, resume())
	}
	select {
	case <-done:
	case <-sigs:
		exit(stack.ExitError)
	case <-time.After(interruptGrace):
		fmt.Fprintf(c.stderr, "bulwark: still winding down after %v; exiting (run %s)\n", interruptGrace, resume())
		exit(stack.ExitError)
	}
}

// mutating marks the command as one whose first interrupt is graceful and
// returns the channel that interrupt closes.
func (c *cli) mutating(specPath string) <-chan struct{} {
	c.specPath.Store(specPath)
	c.graceful.Store(true)
	return c.stop
}
