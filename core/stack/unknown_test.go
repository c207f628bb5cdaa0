package stack_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// crashAfterCreate makes the stack look as if the host was killed right
// after the provider made name (its Create answered, nothing recorded):
// the state drops it and what came after (later), and the journal keeps
// only up to its "execute started".
func (e *env) crashAfterCreate(t *testing.T, name string, later ...string) {
	t.Helper()
	st, err := state.Open(stack.StackDir(e.stateDir, "s"), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Mutate(func(st *state.State) error {
		delete(st.Resources, name)
		for _, n := range later {
			delete(st.Resources, n)
		}
		st.Revisions, st.Current, st.Staged = nil, 0, 0
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cut := false
	e.editJournal(t, func(r journal.Record) bool {
		keep := !cut
		if r.Kind == journal.KindStep && r.Step == name && r.Phase == "execute" && r.Status == journal.StepStarted {
			cut = true
		}
		return keep
	})
}

// A provider that takes no idempotency key (one built for Terraform): a
// Create whose outcome a crash left unknown stops resume with exit 12,
// naming it; the resume touches nothing, and either way out a person has
// (import what was made; say none was made) lets it finish, nothing made
// twice.
func TestResumeStopsAtAnUnknownCreateOfAKeylessProvider(t *testing.T) {
	for _, way := range []string{"import", "not-created"} {
		t.Run(way, func(t *testing.T) {
			e := newEnv(t)
			e.w.keyless = true
			sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
			e.mustApply(t, sp, parallelism(1))
			e.crashAfterCreate(t, "a", "b")
			e.w.Remove("b") // b's Create never started
			for range 2 {
				r, err := e.resume(sp)
				var unknown *stack.UnknownCreateError
				if !errors.As(err, &unknown) || stack.ExitCode(r, err) != stack.ExitIntervention {
					t.Fatalf("resume: want an UnknownCreateError (exit 12), got exit %d: %v", stack.ExitCode(r, err), err)
				}
				if len(unknown.Creates) != 1 || unknown.Creates[0].Resource != "a" || unknown.Creates[0].Type != "network" {
					t.Fatalf("unknown creates: %+v", unknown.Creates)
				}
				for _, want := range []string{"bulwark import " + sp.File + " a ID", "bulwark resume " + sp.File + " --not-created a"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the error does not say %q:\n%v", want, err)
					}
				}
			}
			if n, _, _ := e.w.Calls(); n != 2 {
				t.Fatalf("%d creates after the stopped resumes, want the 2 of the apply", n)
			}
			made := e.w.ByName("a")
			// Any other import waits for resume.
			var unfinished *stack.UnfinishedError
			if _, err := stack.Import(e.ctx, sp, e.opts(), "b", made.ID); !errors.As(err, &unfinished) {
				t.Fatalf("import of b: want UnfinishedError, got %v", err)
			}
			var mods []opt
			switch way {
			case "import":
				if _, err := stack.Import(e.ctx, sp, e.opts(), "a", made.ID); err != nil {
					t.Fatalf("import: %v", err)
				}
			case "not-created":
				e.w.Remove("a") // what the person found: nothing
				mods = append(mods, func(o *stack.Options) { o.NotCreated = []string{"a"} })
			}
			r, err := e.resume(sp, mods...)
			if err != nil || resErr(r) != nil {
				t.Fatalf("resume after %s: %v %v", way, err, resErr(r))
			}
			if got := sorted(e.w.Names()); strings.Join(got, ",") != "a,b" {
				t.Fatalf("world after resume: %v", got)
			}
			if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
				t.Fatal(err)
			}
			if _, err := e.resume(sp); !errors.Is(err, stack.ErrNothingToResume) {
				t.Fatalf("a second resume: %v", err)
			}
		})
	}
}

// A Create of a keyless provider that ends without the provider's answer
// (the plugin died mid-call) is as unknown as one a crash cut: the run's
// rollback cannot say whether to delete anything, so it stays incomplete
// (exit 13), and its resume stops for a person (exit 12) until told.
func TestRollbackOfAnUnansweredCreateOfAKeylessProviderWaitsForAPerson(t *testing.T) {
	e := newEnv(t)
	e.w.keyless = true
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
	e.w.FailCreate("b") // a plain error: no diagnostics, no answer
	r, err := e.apply(sp, parallelism(1))
	if code := stack.ExitCode(r, err); code != stack.ExitRollbackIncomplete {
		t.Fatalf("apply: exit %d, want 13: %v %v", code, err, resErr(r))
	}
	if e.w.ByName("a") != nil {
		t.Fatalf("a, which the run made, is left after its rollback")
	}
	r, err = e.resume(sp)
	var unknown *stack.UnknownCreateError
	if !errors.As(err, &unknown) || len(unknown.Creates) != 1 || unknown.Creates[0].Resource != "b" {
		t.Fatalf("resume: want an UnknownCreateError naming b, got exit %d: %v", stack.ExitCode(r, err), err)
	}
	e.w.ClearFaults()
	r, err = e.resume(sp, func(o *stack.Options) { o.NotCreated = []string{"b"} })
	if code := stack.ExitCode(r, err); code != stack.ExitCompensated {
		t.Fatalf("resume --not-created b: exit %d, want 11: %v %v", code, err, resErr(r))
	}
	if n := e.w.Names(); len(n) != 0 {
		t.Fatalf("world after the rollback: %v", n)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Fatal(err)
	}
}

// An id a Create answers beside its failure is recorded (and so
// compensated, deleted) only for a provider built for Terraform, and never
// beside a conflict: a provider that names what holds the identity it
// wanted, made out of band, must not make it this stack's to delete.
func TestFailedCreateNamingAForeignResourceIsNeverRecordedOrDeleted(t *testing.T) {
	for _, keyless := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyless=%v", keyless), func(t *testing.T) {
			e := newEnv(t)
			e.w.keyless, e.w.conflictID = keyless, true
			foreign := e.w.Put("network", "a", "")
			sp := mkSpec(t, res{name: "a", typ: "network"})
			r, err := e.apply(sp, parallelism(1))
			if code := stack.ExitCode(r, err); code != stack.ExitRefused && code != stack.ExitCompensated && code != stack.ExitError {
				t.Fatalf("apply over a foreign resource: exit %d, want a refusal or a compensated failure: %v %v", code, err, resErr(r))
			}
			if got := e.w.ByName("a"); got == nil || got.ID != foreign {
				t.Fatalf("the foreign resource %s was touched: now %+v", foreign, got)
			}
			if st := e.state(t, "s"); st != nil && st.Resources["a"] != nil {
				t.Fatalf("the foreign resource was recorded as this stack's: %+v", st.Resources["a"])
			}
		})
	}
}

// A keyless create a crash left unknown is what status and doctor name
// (PendingCreates, from the spec, state and journal, no provider started)
// once the provider's source is a Terraform address, and an ack of the
// operation is refused, naming it; once settled (here: nothing was made),
// nothing is pending and the finished operation has nothing to ack.
func TestPendingCreatesAndAckOfAnUnfinishedOperation(t *testing.T) {
	e := newEnv(t)
	e.w.keyless = true
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
	e.mustApply(t, sp, parallelism(1))
	e.crashAfterCreate(t, "a", "b")
	e.w.Remove("b")

	pending := func() []stack.PendingCreate {
		t.Helper()
		recs, err := stack.ReadJournalKinds(sp, e.opts())
		if err != nil {
			t.Fatal(err)
		}
		tf := *sp
		tf.Providers = map[string]*spec.Provider{}
		for n, p := range sp.Providers {
			c := *p
			c.Source = "example/" + p.Source
			tf.Providers[n] = &c
		}
		if got := stack.PendingCreates(sp, e.state(t, "s"), recs); len(got) != 0 {
			t.Errorf("a provider of bulwark's own is not taken as keyless: %+v", got)
		}
		return stack.PendingCreates(&tf, e.state(t, "s"), recs)
	}
	got := pending()
	if len(got) != 1 || got[0].Resource != "a" || got[0].Type != "network" || got[0].Op == "" || got[0].Started.IsZero() {
		t.Fatalf("pending creates: %+v, want a's", got)
	}
	op := got[0].Op
	_, err := stack.Ack(e.stateDir, op, nil)
	var ue *stack.UnfinishedAckError
	if !errors.As(err, &ue) || ue.Op != op || fmt.Sprint(ue.Creates) != "[a]" {
		t.Fatalf("ack: %v, want an UnfinishedAckError naming a", err)
	}
	for _, want := range []string{"bulwark import SPEC a ID", "bulwark resume SPEC --not-created a"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	e.w.Remove("a") // what the person found: nothing
	r, err := e.resume(sp, func(o *stack.Options) { o.NotCreated = []string{"a"} })
	if err != nil || resErr(r) != nil {
		t.Fatalf("resume --not-created a: %v %v", err, resErr(r))
	}
	if got := pending(); len(got) != 0 {
		t.Fatalf("pending after resume: %+v", got)
	}
	if _, err := stack.Ack(e.stateDir, op, nil); !errors.Is(err, stack.ErrNoSuchIntervention) {
		t.Fatalf("ack of the finished operation: %v", err)
	}
}
