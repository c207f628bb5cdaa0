package stack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A run journaled b's start while b waited for its write slot, stopped
// before b's call went out (b ended "not_sent"), and the host was killed
// before anything else was written. resume takes b as never started: it
// does not stop for a person over it (exit 12, for a provider that takes no
// idempotency key: its outcome is not unknown, nothing was sent), it looks
// for nothing under its key, and it runs the apply again: b is created
// once, under a key of its own.
func TestResumeAfterAStartThatWasNotSent(t *testing.T) {
	for _, keyless := range []bool{false, true} {
		name := "keyed"
		if keyless {
			name = "keyless"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.w.keyless = keyless
			sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
			e.mustApply(t, sp, parallelism(1))
			e.crashAfterCreate(t, "b")
			e.w.Remove("b") // its Create never went out
			dir := stack.StackDir(e.stateDir, "s")
			var start journal.Record
			for _, r := range journalIn(t, dir) {
				if r.Kind == journal.KindStep && r.Step == "b" && r.Phase == "execute" && r.Status == journal.StepStarted {
					start = r
				}
			}
			if start.ID == "" {
				t.Fatal("no start of b in the journal")
			}
			e.appendJournal(t, journal.Record{Op: start.Op, Kind: journal.KindStep, Step: "b", Resource: "b", Action: start.Action,
				Phase: "execute", Status: journal.StepNotSent, Key: start.ID, Lineage: start.Lineage})
			creates, _, _ := e.w.Calls()
			r, err := e.resume(sp)
			var unknown *stack.UnknownCreateError
			if errors.As(err, &unknown) {
				t.Fatalf("resume stopped for a person over a create that was never sent: %v", err)
			}
			if err != nil || resErr(r) != nil {
				t.Fatalf("resume: exit %d: %v %v", stack.ExitCode(r, err), err, resErr(r))
			}
			if after, _, _ := e.w.Calls(); after != creates+1 {
				t.Errorf("%d creates by resume, want 1 (b's)", after-creates)
			}
			if got := sorted(e.w.Names()); strings.Join(got, ",") != "a,b" {
				t.Fatalf("world after resume: %v", got)
			}
			st := e.state(t, "s")
			if err := agree(st, e.w.Snapshot()); err != nil {
				t.Fatal(err)
			}
			if k := st.Resources["b"].IdempotencyKey; strings.HasSuffix(k, start.ID) {
				t.Errorf("b was made under the key of the start that was not sent (%s)", k)
			}
			if _, err := e.resume(sp); !errors.Is(err, stack.ErrNothingToResume) {
				t.Fatalf("a second resume: %v", err)
			}
		})
	}
}
