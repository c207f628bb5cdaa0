// Package failpoint lets tests kill bulwark at a chosen instant, to prove
// that a crash anywhere is resumed, not guessed at.
//
// It is a test mechanism, documented so nobody mistakes it for a feature:
// with BULWARK_FAILPOINT=NAME:N in the environment, the process sends itself
// SIGKILL (nothing runs after it: no defer, no flush, exactly a kill -9) the
// Nth time it passes the point NAME; with BULWARK_FAILPOINT=NAME:KIND:N, the
// Nth time it passes NAME at a boundary of that kind (as HitAt names it, and
// the tally writes it; the kind may hold colons: N is after the last one),
// whatever passes of other kinds came between. The points are:
//
//	journal   after a journal record is durable, or, for a deferred one
//	          (a record that guards no mutation), queued: a kill there
//	          loses it, as a crash may
//	state     after a state write is durable
//	provider  after a provider's Create, Update or Delete returned, before
//	          anything records the result
//
// With BULWARK_FAILPOINT_TALLY=FILE, every pass through any point appends
// a line to FILE (nothing is killed unless BULWARK_FAILPOINT says so too):
// the point's name, then, for a pass that says what it is at (HitAt), a
// space and its kind (for the journal, the record's kind, status, phase and
// action, as "step/started/execute/create"; for the state, which write; for
// a provider, which call). The crash harness runs a command once that way
// to learn how many boundaries of each point it has, and of which kinds,
// then kills it at a sample of them that covers every kind. Where steps run
// in parallel, the Nth pass of a point is not the same boundary from one
// run to the next; the Nth pass of a kind is, as far as the command's work
// is ordered at all, which is why the harness kills at kinds by NAME:KIND:N.
//
// Without either variable every Hit is a no-op on a nil *Set.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// EnvVar names the environment variable that arms a failpoint.
const EnvVar = "BULWARK_FAILPOINT"

// TallyEnvVar names the environment variable naming the file every pass
// through a point is counted in.
const TallyEnvVar = "BULWARK_FAILPOINT_TALLY"

// Set is one armed failpoint. A nil *Set is disarmed.
type Set struct {
	name string
	kind string // "": a pass of any kind counts
	n    int

	mu    sync.Mutex
	count int
	kill  func()
	tally *os.File // every pass through any point, one line each; nil: none
}

// FromEnv arms the failpoint BULWARK_FAILPOINT describes and opens the
// tally BULWARK_FAILPOINT_TALLY names (for appending; created when
// missing); with neither set it returns nil. The tally file stays open for
// the life of the process: each pass is one write(2), so the count is whole
// whenever the process ends, a kill included.
func FromEnv() (*Set, error) {
	s, err := Parse(os.Getenv(EnvVar))
	if err != nil {
		return nil, err
	}
	path := os.Getenv(TallyEnvVar)
	if path == "" {
		return s, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TallyEnvVar, err)
	}
	if s == nil {
		s = &Set{kill: killSelf}
	}
	s.tally = f
	return s, nil
}

// Parse arms the failpoint described by spec ("NAME:N", or "NAME:KIND:N"
// to count only the passes of that kind); "" returns nil.
func Parse(spec string) (*Set, error) {
	if spec == "" {
		return nil, nil
	}
	name, rest, ok := strings.Cut(spec, ":")
	kind, num, armedAtKind := "", rest, false
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		kind, num, armedAtKind = rest[:i], rest[i+1:], true
	}
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || armedAtKind && (kind == "" || strings.ContainsAny(kind, " \n")) {
		return nil, fmt.Errorf("%s=%q: want NAME:N or NAME:KIND:N with N >= 1 (a KIND as the tally writes it: not empty, no spaces)", EnvVar, spec)
	}
	switch name {
	case "journal", "state", "provider":
	default:
		return nil, fmt.Errorf("%s=%q: unknown point %q (journal, state, provider)", EnvVar, spec, name)
	}
	return &Set{name: name, kind: kind, n: n, kill: killSelf}, nil
}

// WithKill replaces what happens when the point is reached (for tests of
// this package).
func (s *Set) WithKill(f func()) *Set {
	s.kill = f
	return s
}

// Hit counts a pass through the point name and kills the process on the
// armed pass.
func (s *Set) Hit(name string) { s.HitAt(name, "") }

// HitAt is Hit for a pass that says what kind of boundary it is (no spaces;
// "" says nothing): the kind is written to the tally, so that the crash
// harness can kill at every kind, and a failpoint armed at a kind
// (NAME:KIND:N) counts only the passes of that kind; one armed at NAME:N
// counts it as Hit counts.
func (s *Set) HitAt(name, kind string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.tally != nil {
		line := name + "\n"
		if kind != "" {
			line = name + " " + kind + "\n"
		}
		// Best effort: a test's count, never a reason to fail the
		// command.
		_, _ = s.tally.WriteString(line)
	}
	if name != s.name || s.kind != "" && kind != s.kind {
		s.mu.Unlock()
		return
	}
	s.count++
	fire := s.count == s.n
	s.mu.Unlock()
	if fire {
		s.kill()
	}
}
