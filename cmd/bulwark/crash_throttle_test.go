package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCrashWhileThrottled kills bulwark (SIGKILL, from outside) while
// Creates the mock answered throttled wait in the plugin host's backoff:
// journaled as started, not made. A throttled Create needs no record of
// its own: its "execute started" record is already durable, and carries
// the idempotency key every try of it sends, so resume resolves it as it
// resolves any Create in flight at a crash (a Read by that key finds what
// a try made; nothing found, it is made). After resume every resource
// exists once, the state records each with the id the world has, and what
// existed at the kill is kept, not made again.
func TestCrashWhileThrottled(t *testing.T) {
	// Independent of every other test (folders, marker and seed of its
	// own, no environment change) and mostly waiting on processes: it runs
	// beside the others (docs/ci.md).
	t.Parallel()
	spec := crashSpec("throttled20.yaml")
	e := newCrashEnv(t, "crashthrottled")
	// Killed once the quota's burst is spent and several Creates are
	// journaled as started but not made: at 2 writes a second, those are
	// backing off (each is answered throttled within a millisecond).
	var made map[string]bool
	var waiting []string
	r := e.runKilledWhen(func() bool {
		made = map[string]bool{}
		for _, w := range e.mockWorld() {
			made[w.Name] = true
		}
		waiting = waiting[:0]
		for _, r := range e.journalRecords() {
			if r.Kind == "step" && r.Phase == "execute" && r.Action == "create" && r.Status == "started" && !made[r.Resource] {
				waiting = append(waiting, r.Resource)
			}
		}
		return len(made) >= 2 && len(waiting) >= 3
	}, func() string {
		return fmt.Sprintf("no Creates waiting on the quota (%d made, waiting %v)", len(made), waiting)
	}, "apply", "--yes", spec, "--parallelism", "10")
	e.assertNothingLeft()
	before := e.mockWorld()
	t.Logf("killed after %v with %d made and %v waiting to be retried", r.took.Round(time.Millisecond), len(before), waiting)

	r1 := e.must(0, "resume", spec)
	if !strings.Contains(r1.stdout, "resume") {
		t.Errorf("resume: %s", r1)
	}
	if r2 := e.must(0, "resume", spec); !strings.Contains(r2.stdout, "nothing to resume") {
		t.Errorf("a second resume: %s", r2)
	}
	if last := e.checkSettled(spec); last != "succeeded" {
		t.Errorf("the resumed apply ended %q, want succeeded\n%s", last, e.history())
	}
	st := e.readState()
	world := e.mockWorld()
	e.checkAgreement(st, world)
	if len(st.Resources) != 20 || len(world) != 20 {
		t.Errorf("after resume: %d recorded, %d in the world; want 20 each\n%s", len(st.Resources), len(world), e.history())
	}
	now := map[string]string{}
	for _, w := range world {
		now[w.Name] = w.ID
	}
	for _, w := range before {
		if now[w.Name] != w.ID {
			t.Errorf("%s existed at the kill as %s; after resume it is %q (made twice?)", w.Name, w.ID, now[w.Name])
		}
	}
	e.must(0, "plan", spec, "--detailed-exitcode")
	e.assertNothingLeft()
}
