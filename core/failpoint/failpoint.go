// Package failpoint lets tests kill bulwark at a chosen instant, to prove
// that a crash anywhere is resumed, not guessed at.
//
// It is a test mechanism, documented so nobody mistakes it for a feature:
// with BULWARK_FAILPOINT=NAME:N in the environment, the process sends itself
// SIGKILL (nothing runs after it: no defer, no flush, exactly a kill -9) the
// Nth time it passes the point NAME. The points are:
//
//	journal   after a journal record is durable, or, for a deferred one
//	          (a record that guards no mutation), queued: a kill there
//	          loses it, as a crash may
//	state     after a state write is durable
//	provider  after a provider's Create, Update or Delete returned, before
//	          anything records the result
//
// Without the variable every Hit is a no-op on a nil *Set.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvVar names the environment variable that arms a failpoint.
const EnvVar = "BULWARK_FAILPOINT"

// Set is one armed failpoint. A nil *Set is disarmed.
type Set struct {
	name string
	n    int

	mu    sync.Mutex
	count int
	kill  func()
}

// Parse arms the failpoint described by spec ("NAME:N"); "" returns nil.
func Parse(spec string) (*Set, error) {
	if spec == "" {
		return nil, nil
	}
	name, num, ok := strings.Cut(spec, ":")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 {
		return nil, fmt.Errorf("%s=%q: want NAME:N with N >= 1", EnvVar, spec)
	}
	switch name {
	case "journal", "state", "provider":
	default:
		return nil, fmt.Errorf("%s=%q: unknown point %q (journal, state, provider)", EnvVar, spec, name)
	}
	return &Set{name: name, n: n, kill: killSelf}, nil
}

// WithKill replaces what happens when the point is reached (for tests of
// this package).
func (s *Set) WithKill(f func()) *Set {
	s.kill = f
	return s
}

// Hit counts a pass through the point name and kills the process on the
// armed pass.
func (s *Set) Hit(name string) {
	if s == nil || name != s.name {
		return
	}
	s.mu.Lock()
	s.count++
	fire := s.count == s.n
	s.mu.Unlock()
	if fire {
		s.kill()
	}
}

func killSelf() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught; never return to the caller
}
