package stack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore/lock"
)

// editJournal rewrites stack s's journal keeping the records keep accepts.
func (e *env) editJournal(t *testing.T, keep func(journal.Record) bool) {
	t.Helper()
	dir := stack.StackDir(e.stateDir, "s")
	var kept []journal.Record
	for _, r := range journalIn(t, dir) {
		if keep(r) {
			kept = append(kept, r)
		}
	}
	rewriteJournal(t, dir, kept)
}

// appendJournal appends records to stack s's journal.
func (e *env) appendJournal(t *testing.T, recs ...journal.Record) {
	t.Helper()
	if err := os.MkdirAll(stack.StackDir(e.stateDir, "s"), 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(filepath.Join(stack.StackDir(e.stateDir, "s"), journal.FileName), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, r := range recs {
		if _, err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

var chain3 = []res{{name: "a", typ: "network"}, {name: "b", typ: "compute", deps: []string{"a"}}, {name: "c", typ: "generic", deps: []string{"b"}}}

// The rollback's target record failed to append, the end record
// (rollback_incomplete) did not: resume must undo every step the operation
// executed, not an empty set.
func TestResumeWithoutJournaledTargetsUndoesEveryExecutedStep(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, chain3...)
	e.w.FailCreate("c")
	e.w.FailNextDeletes("a", 1)
	e.w.FailNextDeletes("b", 1)
	r, err := e.apply(sp)
	if err != nil || r.Outcome != engine.RollbackIncomplete {
		t.Fatalf("apply: %v %v", err, r)
	}
	// As if the target record (and so every compensation) never made it.
	e.editJournal(t, func(r journal.Record) bool { return r.Kind != journal.KindRollback && r.Phase != "compensate" })
	rr, err := e.resume(sp)
	if err != nil || stack.ExitCode(rr, err) != stack.ExitCompensated {
		t.Fatalf("resume: %v; exit %d (%v)", err, stack.ExitCode(rr, err), resErr(rr))
	}
	if names := e.w.Names(); len(names) != 0 {
		t.Fatalf("world after resume: %v; want empty", names)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
}

// An operation that stopped for a person but whose outcome was never
// recorded (a failed Finish: no pending entry in the state, no end record)
// keeps every later command refused; resume records the intervention and
// runs nothing again.
func TestResumeRecordsAnUnrecordedIntervention(t *testing.T) {
	e := newEnv(t)
	rs := []res{{name: "a", typ: "network"}, {name: "b", typ: "compute", deps: []string{"a"}, intervention: true}}
	sp := mkSpec(t, rs...)
	e.w.FailCreate("b")
	r, err := e.apply(sp)
	if code := stack.ExitCode(r, err); code != stack.ExitIntervention {
		t.Fatalf("apply: exit %d, %v", code, err)
	}
	st, err := state.Open(stack.StackDir(e.stateDir, "s"), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Mutate(func(st *state.State) error { st.Interventions = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	e.editJournal(t, func(rec journal.Record) bool {
		return !(rec.Kind == journal.KindOp && rec.Status == journal.OpIntervention)
	})

	var ue *stack.UnfinishedError
	if _, err := e.apply(sp); !errors.As(err, &ue) {
		t.Fatalf("apply after an unrecorded intervention: %v; want it refused as unfinished", err)
	}
	creates := len(e.w.Creates())
	rr, err := e.resume(sp)
	if code := stack.ExitCode(rr, err); code != stack.ExitIntervention || rr.Op != r.Op {
		t.Fatalf("resume: exit %d, %v, %v", code, err, resErr(rr))
	}
	if n := len(e.w.Creates()); n != creates {
		t.Fatalf("resume ran %d create(s) again past an intervention", n-creates)
	}
	var ie *stack.InterventionError
	if _, err := e.apply(sp); !errors.As(err, &ie) || ie.Pending[0].Op != r.Op {
		t.Fatalf("apply after resume: %v; want the intervention of %s pending", err, r.Op)
	}
}

// Resume refuses while another operation's intervention is pending.
func TestResumeRefusesPastAnotherOperationsIntervention(t *testing.T) {
	e := newEnv(t)
	rs := []res{{name: "a", typ: "network", intervention: true}}
	sp := mkSpec(t, rs...)
	e.w.FailCreate("a")
	if r, err := e.apply(sp); stack.ExitCode(r, err) != stack.ExitIntervention {
		t.Fatalf("apply: %v", err)
	}
	e.w.ClearFaults()
	other := journal.NewOpID()
	e.appendJournal(t, journal.Record{Op: other, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning})
	r, err := e.resume(sp)
	var ie *stack.InterventionError
	if !errors.As(err, &ie) || stack.ExitCode(r, err) != stack.ExitIntervention {
		t.Fatalf("resume: %v, %v; want it refused for the pending intervention", err, r)
	}
	if n := len(e.w.Creates()); n != 1 {
		t.Fatalf("%d creates: resume applied past the intervention", n)
	}
}

// The lock a resume takes names the operation it runs.
func TestResumeLockNamesTheResumedOperation(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, chain3...)
	op := journal.NewOpID()
	e.appendJournal(t, journal.Record{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning})
	var holder *storage.Holder
	o := e.opts()
	inner := o.Starter
	o.Starter = func() stack.Starter {
		return peekStarter{inner(), func() { holder, _ = lock.Peek(stack.StackDir(e.stateDir, "s")) }}
	}
	r, err := stack.Resume(e.ctx, sp, o)
	if err != nil || r.Outcome != engine.Succeeded || r.Op != op {
		t.Fatalf("resume: %v %v", err, r)
	}
	if holder == nil || holder.Op != op {
		t.Fatalf("lock held by %+v during the resume of %s", holder, op)
	}
}

type peekStarter struct {
	stack.Starter
	peek func()
}

func (p peekStarter) Start(ctx context.Context, cfg pluginhost.Config) (stack.Provider, error) {
	p.peek()
	return p.Starter.Start(ctx, cfg)
}

// An operation that stopped for a person while another step's Create was
// in flight (its result never recorded): resume records the intervention
// and what that Create made, so nothing is left untracked.
func TestResumeOfInterventionRecordsCreatesInFlight(t *testing.T) {
	e := newEnv(t)
	rs := []res{{name: "a", typ: "network"}, {name: "b", typ: "compute", intervention: true}}
	sp := mkSpec(t, rs...)
	e.w.FailCreate("b")
	r, err := e.apply(sp, parallelism(1))
	if code := stack.ExitCode(r, err); code != stack.ExitIntervention {
		t.Fatalf("apply: exit %d, %v", code, err)
	}
	// As if killed with a's Create done in the provider, not yet recorded.
	st, err := state.Open(stack.StackDir(e.stateDir, "s"), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Mutate(func(st *state.State) error { delete(st.Resources, "a"); st.Interventions = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	e.editJournal(t, func(rec journal.Record) bool {
		return !(rec.Kind == journal.KindOp && rec.Status == journal.OpIntervention) && !(rec.Step == "a" && rec.Status == journal.StepOK)
	})
	rr, err := e.resume(sp)
	if code := stack.ExitCode(rr, err); code != stack.ExitIntervention {
		t.Fatalf("resume: exit %d, %v, %v", code, err, resErr(rr))
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Fatalf("after resume: %v", err)
	}
}

// A state migration left unfinished in the journal is never run forward as
// an apply of the spec: the step engine refuses it, naming it, and touches
// nothing (the CLI's resume finishes it through the migration).
func TestResumeRefusesAStateMigration(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, chain3...)
	e.mustApply(t, sp)
	before := e.w.Names()
	e.appendJournal(t, journal.Record{Op: "op_01MIGRATE", Kind: journal.KindOp, Type: stack.OpMigrate, Status: journal.OpRunning,
		Targets: []string{"file:///here", "file:///there"}, Lineage: e.state(t, "s").Lineage})
	r, err := e.resume(mkSpec(t, chain3[:1]...))
	if err == nil || !strings.Contains(err.Error(), "op_01MIGRATE is a state migration") {
		t.Fatalf("resume: %v %v", err, r)
	}
	if after := e.w.Names(); !slices.Equal(after, before) {
		t.Fatalf("the world changed: %v, was %v", after, before)
	}
}
