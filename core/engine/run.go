package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/dag"
	"github.com/bulwark-iac/bulwark/core/journal"
)

// Run runs op to its end and journals its start and its outcome. It never
// panics on a step's error; a journal that cannot be written stops the
// operation (ErrJournal).
func (e *Engine) Run(ctx context.Context, op *Operation) Result {
	res := Result{Errors: map[string]error{}}
	// The journal is written under ctx as given (the command's): a journal
	// that hangs is let go of when it ends, and a write in flight when the
	// journal is lost ends as the journal says, not cut short.
	jctx := ctx
	if e.Lost != nil {
		// The work in flight is cancelled the moment the journal is lost:
		// its outcome could not be recorded.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-e.Lost:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	if _, err := e.append(jctx, journal.Record{Op: op.ID, Kind: journal.KindOp, Type: op.Type, Status: journal.OpRunning, Spec: op.Spec, Revision: op.Revision, Replace: op.Replace, Scope: op.Scope, User: op.User, Data: op.Data}); err != nil {
		res.Outcome, res.Err = Failed, err
		return res
	}
	byID := make(map[string]*Step, len(op.Steps))
	for _, s := range op.Steps {
		byID[s.ID] = s
	}
	g := Graph(op.Steps)
	stopped := func() bool { return stoppedBy(op.Stop) || stoppedBy(e.Lost) || ctx.Err() != nil }
	// The writes and the reads have slots of their own (see
	// Operation.ReadParallelism); the walk lets as many steps run as the
	// larger of the two can keep busy, each step waiting for the slot of the
	// work it is about to do (a step waiting for a write slot holds no read
	// slot, so the steps behind it still read). With as many reads as
	// writes, it runs exactly as many steps at once as Parallelism.
	reads := op.ReadParallelism
	if reads <= 0 {
		reads = op.Parallelism
	}
	var notStarted []string // stopped between Check and Execute

	var (
		mu                                sync.Mutex
		stopping, compensate, interrupted bool
		cleaning                          bool // a cleanup step has started: no rollback from here
		verifying                         sync.WaitGroup
	)
	sl := stepSlots{writes: newSlots(op.Parallelism), reads: newSlots(reads), deck: newSlots(op.Parallelism),
		gates: make(map[string]*gate, len(op.Steps)),
		halted: func() bool {
			mu.Lock()
			defer mu.Unlock()
			return stopping
		},
		halt: func() {
			mu.Lock()
			defer mu.Unlock()
			stopping = true
		}}
	for _, s := range op.Steps {
		sl.gates[s.ID] = &gate{done: make(chan struct{}), executed: make(chan struct{}),
			undoes: s.Policy == Compensate && !s.Intervention}
	}
	// A dependency of a step that may delete early (Step.EarlyDelete)
	// halts the run if its Verify fails, and lets that step begin once its
	// own "execute ok" is durable, before its Verify (gate.halts).
	for _, s := range op.Steps {
		if !deletesEarly(s) {
			continue
		}
		for _, d := range s.DependsOn {
			if ds := byID[d]; ds != nil && haltsOnVerify(ds) {
				sl.gates[d].halts = true
			}
		}
	}
	// settle records a step's end; it returns whether the steps that
	// depend on it may go on.
	settle := func(s *Step, status string, executed bool, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if s.Cleanup && status != stepStopped {
			cleaning = true
		}
		if executed {
			res.Executed = append(res.Executed, s.ID)
		}
		switch status {
		case stepStopped:
			notStarted = append(notStarted, s.ID)
			return false
		case journal.StepSkipped:
			res.Skipped = append(res.Skipped, s.ID)
			return true
		case journal.StepOK:
			res.Done = append(res.Done, s.ID)
			return true
		}
		res.Failed = append(res.Failed, s.ID)
		res.Errors[s.ID] = err
		switch {
		case s.Intervention:
			interrupted, stopping = true, true
		case s.Policy == Abort:
			stopping = true
		case s.Policy == Compensate:
			compensate, stopping = true, true
		}
		return false
	}
	sl.workers = newWorkers()
	// Every Execute of the run gets the same context, made once (InRun).
	sl.base = ctx
	sl.exec = context.WithValue(ctx, writesKey{}, sl)
	// finish takes a step's end from runStep: it settles the step, or
	// with its Verify still to read, records it executed and reads on a
	// worker; it returns whether the steps that depend on it may start
	// (their Checks: their work waits at its gate).
	finish := func(s *Step, status string, executed bool, verify func() (string, error), err error) bool {
		id := s.ID
		gt := sl.gates[id]
		if verify == nil {
			ok := settle(s, status, executed, err)
			if ok {
				// Ended without a Verify to wait for: a dependent that
				// may start early goes on as on an "execute ok".
				close(gt.executed)
			}
			sl.openGate(s, ok)
			return ok
		}
		// Executed and recorded; its Verify still reads. The steps that
		// depend on it start now, as far as their Checks (what they read
		// sees what it recorded), and wait for its verification before
		// their own work (gate).
		mu.Lock()
		res.Executed = append(res.Executed, id)
		mu.Unlock()
		// The dependents that may start early (Step.EarlyStart,
		// Step.EarlyDelete) may now start their work: res.Executed
		// holds this step, so a failed Verify, here or anywhere, rolls
		// them back with it (or, for a delete, halts the run).
		close(gt.executed)
		verifying.Add(1)
		sl.workers.do(func() {
			defer verifying.Done()
			status, err := verify()
			if status == journal.StepFailed && gt.halts {
				sl.halt()
			}
			sl.openGate(s, settle(s, status, false, err))
		})
		return true
	}
	var detached sync.WaitGroup // steps whose dependents began as their call went out
	walk := g.Walk(ctx, max(op.Parallelism, reads), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stopping || stopped()
	}, func(ctx context.Context, id string) bool {
		s := byID[id]
		gt := sl.gates[id]
		if !gt.halts {
			status, executed, verify, err := e.runStep(ctx, jctx, op, s, sl)
			return finish(s, status, executed, verify, err)
		}
		// A step that may delete early depends on this one: it begins,
		// its Check reading, once this one's call has returned and its
		// "execute ok" is durable (gate.executed), without waiting for
		// this one's Verify; never while the call is in flight, so the
		// ownership read that decides its Delete is made after this
		// Delete. The step runs on beyond the walk's visit from there.
		ended := make(chan bool, 1)
		detached.Add(1)
		go func() {
			defer detached.Done()
			status, executed, verify, err := e.runStep(ctx, jctx, op, s, sl)
			ended <- finish(s, status, executed, verify, err)
		}()
		select {
		case ok := <-ended:
			return ok
		case <-gt.executed:
			return true
		}
	})
	// What went on beyond its visit ends (its Verify, if any, is then
	// among verifying) before the run decides anything.
	detached.Wait()
	// A rollback already decided starts now, while the Verifies of the
	// steps that were writing when the run stopped still read: each of
	// those is undone once its Verify has ended (its gate), the rest at
	// once. Only when nothing those Verifies could still say changes the
	// decision: none of the steps still verifying needs a person (its
	// failure would stop the run for one instead) or is a cleanup step
	// (its end would keep what was done).
	type undone struct {
		out Outcome
		err error
	}
	var early chan undone
	mu.Lock()
	if compensate && !cleaning && !interrupted && !stoppedBy(e.Lost) && ctx.Err() == nil && !sl.risky(byID, res.Executed) {
		targets, cg := rollbackSet(op, byID, res.Executed)
		for _, t := range targets {
			res.Rollback = append(res.Rollback, t.ID)
		}
		early = make(chan undone, 1)
		go func() {
			out, err := e.compensate(ctx, jctx, op.ID, cg, targets, func() error {
				verifying.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(res.Errors) > 0 {
					return &StepError{Failures: res.Errors}
				}
				return nil
			}, op.Parallelism, sl.gateOf)
			early <- undone{out, err}
		}()
	}
	mu.Unlock()
	var earlyDone undone
	if early != nil {
		earlyDone = <-early
	}
	verifying.Wait()
	sl.workers.close()
	res.Blocked = append(notStarted, walk.Blocked...)
	res.Interrupted = stopped() && len(res.Blocked) > 0
	if stoppedBy(e.Lost) {
		return e.lost(res)
	}
	if len(res.Failed) == 0 && len(res.Blocked) > 0 {
		// Nothing failed yet something never started: an interruption, or a
		// dependency cycle among the steps. Either way this is no success.
		var cause error
		switch {
		case ctx.Err() != nil:
			cause = fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case res.Interrupted:
			cause = ErrInterrupted
		default:
			cause = fmt.Errorf("steps never started (a dependency cycle?): %v", res.Blocked)
		}
		res.Errors["(not started)"] = cause
		res.Failed = append(res.Failed, "(not started)")
		compensate = true
	}
	if cleaning {
		// The cleanup phase began: every other step succeeded and what
		// it deleted cannot come back, so nothing is undone; what is left
		// stays recorded for the next run (or a resume) to delete.
		compensate = false
	}

	var stepErr error
	if len(res.Errors) > 0 {
		stepErr = &StepError{Failures: res.Errors}
	}
	switch {
	case early != nil:
		res.Outcome, res.Err = earlyDone.out, earlyDone.err
	case interrupted:
		res.Outcome, res.Err = NeedsIntervention, stepErr
	case compensate:
		targets, cg := rollbackSet(op, byID, res.Executed)
		for _, t := range targets {
			res.Rollback = append(res.Rollback, t.ID)
		}
		// A graceful stop does not cut the undoing short; cancelling ctx
		// does (the journaled target set lets resume finish it).
		res.Outcome, res.Err = e.compensate(ctx, jctx, op.ID, cg, targets, func() error { return stepErr }, op.Parallelism, nil)
	case stepErr != nil:
		res.Outcome, res.Err = Failed, stepErr
	default:
		res.Outcome = Succeeded
	}
	if stoppedBy(e.Lost) {
		// Lost during the rollback: it stopped at its next record.
		return e.lost(res)
	}
	if op.Finish != nil {
		if err := op.Finish(&res); err != nil {
			if stoppedBy(e.Lost) {
				return e.lost(res)
			}
			return e.unrecorded(jctx, op, res, fmt.Errorf("record the outcome: %w", err))
		}
	}
	end := journal.Record{Op: op.ID, Kind: journal.KindOp, Type: op.Type, Status: res.Outcome.JournalStatus()}
	if res.Err != nil {
		end.Error = OneLine(res.Err.Error())
	}
	if _, err := e.append(jctx, end); err != nil {
		if stoppedBy(e.Lost) {
			return e.lost(res)
		}
		return e.unrecorded(jctx, op, res, err)
	}
	return res
}

// cut marks err, a step's failure, as the journal's loss (ErrLost) once
// Engine.Lost is closed: its work was cancelled by the loss, not by an
// interrupt, and the observers say so.
func (e *Engine) cut(err error) error {
	if stoppedBy(e.Lost) && !errors.Is(err, ErrLost) {
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	return err
}

// lost makes res the outcome of a run whose journal was lost: Unfinished,
// nothing more attempted; its error keeps the steps' own failures (the
// work cancelled in flight among them).
func (e *Engine) lost(res Result) Result {
	res.Reached, res.Outcome, res.Lost = res.Outcome, Unfinished, true
	if len(res.Errors) > 0 {
		res.Err = fmt.Errorf("%w (%w)", ErrLost, &StepError{Failures: res.Errors})
	} else {
		res.Err = ErrLost
	}
	return res
}

// notSent ends a step whose "execute started" record (started) is durable
// but whose Execute was never called: a "not_sent" record naming started's
// id as its Key, which every reader takes as the step never started
// (journal.Sent). The step counts as stopped (Result.Blocked): not failed,
// not executed, never rolled back. Once the journal is lost nothing more is
// written: the start stays open, as a crash there leaves it, and resume
// reads by its key (nothing was sent under it, so nothing is found). A
// record that cannot be written fails the step (not executed either):
// resume then finds the start open, as after a crash.
func (e *Engine) notSent(jctx context.Context, rec, started journal.Record, why error) (string, bool, func() (string, error), error) {
	if stoppedBy(e.Lost) {
		return stepStopped, false, nil, why
	}
	if err := e.unsent(jctx, rec, started); err != nil {
		return journal.StepFailed, false, nil, fmt.Errorf("%w (and %w)", why, err)
	}
	return stepStopped, false, nil, why
}

// unsent ends started, a durable "execute started" record whose Execute was
// never called, with its "not_sent" record (see notSent); once the journal
// is lost it writes nothing.
func (e *Engine) unsent(jctx context.Context, rec, started journal.Record) error {
	if stoppedBy(e.Lost) {
		return nil
	}
	r := rec
	r.Phase, r.Status, r.Key = "execute", journal.StepNotSent, started.ID
	_, err := e.append(jctx, r)
	return err
}

// stepStopped is runStep's status for a step stopped after its Check: it
// counts as never started.
const stepStopped = "stopped"

func stoppedBy(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// unrecorded makes res an Unfinished outcome: what it reached could not be
// recorded. The journal is told why, if it can still be written; either way
// the operation's last record leaves it running.
func (e *Engine) unrecorded(ctx context.Context, op *Operation, res Result, why error) Result {
	uerr := &UnrecordedError{Reached: res.Outcome, Err: why, Cause: res.Err}
	res.Reached, res.Outcome, res.Err = res.Outcome, Unfinished, uerr
	_, _ = e.append(ctx, journal.Record{Op: op.ID, Kind: journal.KindOp, Type: op.Type, Status: journal.OpRunning, Error: OneLine(uerr.Error())})
	return res
}

// rollbackSet is what a rollback of op undoes: the steps its interrupted
// earlier runs executed, then those this run executed (this run's step
// replacing an inherited one of the same id), with the graph that orders
// them.
func rollbackSet(op *Operation, byID map[string]*Step, executed []string) ([]*Step, *dag.Graph) {
	mine := make(map[string]bool, len(executed))
	for _, id := range executed {
		mine[id] = true
	}
	var targets []*Step
	all := slices.Clone(op.Steps)
	for _, s := range op.Inherited {
		if _, ok := byID[s.ID]; !ok {
			all = append(all, s)
		}
		if !mine[s.ID] && !slices.ContainsFunc(targets, func(t *Step) bool { return t.ID == s.ID }) {
			targets = append(targets, s)
		}
	}
	for _, id := range executed {
		targets = append(targets, byID[id])
	}
	return targets, Graph(all)
}

// OneLine makes text one line for the journal and events: a diagnostic
// spanning several lines (a trace, a pretty-printed body) keeps its first
// line and says how many followed.
func OneLine(text string) string {
	text = strings.TrimSpace(text)
	first, rest, ok := strings.Cut(text, "\n")
	if !ok {
		return text
	}
	n := strings.Count(rest, "\n") + 1
	return fmt.Sprintf("%s [%d more line(s) not shown]", strings.TrimSpace(first), n)
}

// stepSlots are what the steps of a run share: the write and read slots,
// the deck (the steps whose Check runs just before they take a write
// slot), the gates that open once a step is executed and once it is
// verified, and whether the run is stopping.
type stepSlots struct {
	writes, reads *slots
	// deck holds a step from before its Check until it has its write
	// slot: no more steps check than can go next, so what a Check read is
	// at most about one write old when its Execute begins (a delete's
	// ownership is decided on a read made just before it, not on one made
	// while it waited its turn behind a hundred others).
	deck   *slots
	gates  map[string]*gate
	halted func() bool
	// halt stops the run from starting more work: a step whose failure
	// stops the run calls it before it gives back its write slot, so the
	// step waiting for that slot does not start its call first.
	halt func()

	// workers run the Verify reads and the waits for their verdicts.
	workers *workers
	// exec is base (the walk's context) marked as a run's (InRun), for
	// every Execute: made once, not per step.
	base, exec context.Context
}

// gate opens once its step has ended, verified or not, and every step it
// depends on has too (done, ok: ok only if they all were): a step counts
// as verified only once what it depends on is, so a step that waits for
// verified never starts while anything below it, through steps that
// started early, is unverified. Before that, executed is closed once its
// Execute succeeded and its "execute ok" is durable while its Verify still
// reads, or it ended ok with nothing left to read (never for one that
// failed or was stopped: done says those).
type gate struct {
	done     chan struct{}
	ok       bool
	executed chan struct{}
	// undoes: the step's failure rolls back the run (policy Compensate,
	// no Intervention), so a dependent that started on its "execute ok"
	// is undone if its Verify fails.
	undoes bool
	// halts: a step that may delete early (Step.EarlyDelete) depends on
	// this one, whose failure undoes nothing (see haltsOnVerify): its
	// failed Verify halts the run, and its dependents begin once its
	// "execute ok" is durable (executed), not once it is verified.
	halts bool
}

// deletesEarly reports whether the engine honours s.EarlyDelete.
func deletesEarly(s *Step) bool {
	return s.EarlyDelete && s.Policy == Continue && !s.Intervention
}

// haltsOnVerify reports whether d may be depended on early by a step that
// deletes early: its failure undoes nothing (Continue or Abort), needs no
// person and is no cleanup step, so its failed Verify can halt the run.
func haltsOnVerify(d *Step) bool {
	return (d.Policy == Continue || d.Policy == Abort) && !d.Intervention && !d.Cleanup
}

// openGate opens s's gate, ok as its own end says, once every step it
// depends on has its gate open (ok only if all of theirs are): see gate.
// Without a dependency still open it opens at once.
func (sl stepSlots) openGate(s *Step, ok bool) {
	g := sl.gates[s.ID]
	var wait []*gate
	for _, d := range s.DependsOn {
		dg, found := sl.gates[d]
		if !found {
			continue
		}
		select {
		case <-dg.done:
			ok = ok && dg.ok
		default:
			wait = append(wait, dg)
		}
	}
	if len(wait) == 0 {
		g.open(ok)
		return
	}
	go func() {
		for _, dg := range wait {
			<-dg.done
			ok = ok && dg.ok
		}
		g.open(ok)
	}()
}

func (g *gate) open(ok bool) {
	g.ok = ok
	close(g.done)
}

// verified waits for every step s depends on to be verified: true once all
// are, false once one failed (s must not start its work) or ctx ended. A
// step that may start early (Step.EarlyStart, itself Compensate without
// Intervention) waits, on a dependency whose failure rolls the run back,
// only for that dependency's "execute ok": should its Verify then fail,
// the run halts and compensates s with everything else it executed.
//
// A step that may delete early (Step.EarlyDelete) waits the same way on a
// dependency whose failed Verify halts the run (gate.halts).
func (sl stepSlots) verified(ctx context.Context, s *Step) bool {
	early := s.EarlyStart && s.Policy == Compensate && !s.Intervention
	earlyDelete := deletesEarly(s)
	for _, d := range s.DependsOn {
		g, ok := sl.gates[d]
		if !ok {
			continue // not a step of this run
		}
		// Already ended: its outcome decides, whatever s may do.
		select {
		case <-g.done:
			if !g.ok {
				return false
			}
			continue
		default:
		}
		var executed <-chan struct{} // nil: never ready, wait for done
		if early && g.undoes || earlyDelete && g.halts {
			executed = g.executed
		}
		select {
		case <-executed:
		case <-g.done:
			if !g.ok {
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// settled reports whether every step s depends on has been verified (or
// has failed) already: its work would not wait for a gate. For a step
// that may delete early, a dependency whose failed Verify halts the run
// counts as settled too: it waits for that one's "execute ok" only, which
// is durable by the time the step begins (a start journaled with the Check
// is ended "not_sent" if the run halts meanwhile).
func (sl stepSlots) settled(s *Step) bool {
	earlyDelete := deletesEarly(s)
	for _, d := range s.DependsOn {
		if sl.gateOf(d) != nil && !(earlyDelete && sl.gates[d].halts) {
			return false
		}
	}
	return true
}

// gateOf is the gate of step id while it is still closed (its Verify still
// reads), nil once it is open or for a step not of this run.
func (sl stepSlots) gateOf(id string) <-chan struct{} {
	g, ok := sl.gates[id]
	if !ok {
		return nil
	}
	select {
	case <-g.done:
		return nil
	default:
		return g.done
	}
}

// risky reports whether one of executed, its Verify still reading, could
// still change what the run's end decides by failing: one that needs a
// person, or a cleanup step.
func (sl stepSlots) risky(byID map[string]*Step, executed []string) bool {
	for _, id := range executed {
		if s := byID[id]; s != nil && (s.Intervention || s.Cleanup) && sl.gateOf(id) != nil {
			return true
		}
	}
	return false
}

// verifiedOf is verified(id), or nil without verified.
func verifiedOf(verified func(string) <-chan struct{}, id string) <-chan struct{} {
	if verified == nil {
		return nil
	}
	return verified(id)
}

// read runs f, one Check or Verify, on a read slot.
func (sl stepSlots) read(ctx context.Context, f func(context.Context) error) error {
	if err := sl.reads.take(ctx); err != nil {
		return err
	}
	defer sl.reads.give()
	return f(ctx)
}

// runStep runs Check, Execute and Verify of one step under ctx, journaling
// under jctx (see Run): Check on the deck and a read slot, Execute (and its
// "started" record) on a write slot once every step it depends on is
// verified, Verify on a read slot. It returns the step's status (skipped,
// ok or failed) and whether Execute was called; or, once the Execute's end
// is durable and a Verify remains, verify, which makes the read and returns
// the step's status (ok or failed) with its error. The steps that depend on
// it may check meanwhile (the walk starts them); they wait for verify
// before their own work.
func (e *Engine) runStep(ctx, jctx context.Context, op *Operation, s *Step, sl stepSlots) (status string, executed bool, verify func() (string, error), err error) {
	rec := journal.Record{Op: op.ID, Kind: journal.KindStep, Step: s.ID, Resource: s.Resource, Action: s.Action}
	ev := Event{Op: op.ID, Step: s.ID, Resource: s.Resource, Type: s.Type, Action: s.Action}
	fail := func(phase string, executed bool, err error) (string, bool, func() (string, error), error) {
		r := rec
		r.Phase, r.Status, r.Error = phase, journal.StepFailed, OneLine(err.Error())
		if _, jerr := e.append(jctx, r); jerr != nil {
			err = fmt.Errorf("%w (and %w)", err, jerr)
		}
		return journal.StepFailed, executed, nil, err
	}
	if err := ctx.Err(); err != nil {
		return journal.StepFailed, false, nil, err
	}
	// On deck until the write slot is taken (or the step ends before).
	if err := sl.deck.take(ctx); err != nil {
		return journal.StepFailed, false, nil, err
	}
	onDeck := true
	leaveDeck := func() {
		if onDeck {
			onDeck = false
			sl.deck.give()
		}
	}
	defer leaveDeck()
	started := rec
	started.Phase, started.Status = "execute", journal.StepStarted
	// A step that asks for it (StartWithCheck: a delete) journals its
	// start while its Check reads; the Check's outcome, once known, either
	// lets the call go out on it or ends it "not_sent" (unsent). Only when
	// what it depends on is verified already: otherwise its work waits
	// after its Check for those Verifies (reads as long as its own), and
	// its start, journaled then, has that wait to overlap.
	var withCheck chan error
	if s.StartWithCheck && !s.StartWithSlot && s.Check != nil && sl.settled(s) && !stoppedBy(op.Stop) && !stoppedBy(e.Lost) && !sl.halted() {
		withCheck = make(chan error, 1)
		go func() {
			var err error
			started, err = e.append(jctx, started)
			withCheck <- err
		}()
	}
	// startedWithCheck waits for that record: whether it is durable, and
	// the journal's error if it could not be made.
	startedWithCheck := func() (bool, error) {
		if withCheck == nil {
			return false, nil
		}
		err := <-withCheck
		withCheck = nil
		return err == nil, err
	}
	if s.Check != nil {
		var done bool
		err := sl.read(ctx, func(ctx context.Context) (err error) {
			done, err = s.Check(ctx)
			return err
		})
		if err != nil {
			err = e.cut(fmt.Errorf("check: %w", err))
			if ok, jerr := startedWithCheck(); jerr != nil {
				err = fmt.Errorf("%w (and %w)", err, jerr)
			} else if ok {
				if jerr := e.unsent(jctx, rec, started); jerr != nil {
					err = fmt.Errorf("%w (and %w)", err, jerr)
				}
			}
			ev.Status, ev.Err = journal.StepFailed, err
			e.observe(ev)
			return fail("check", false, err)
		}
		if done {
			if ok, err := startedWithCheck(); err != nil {
				return journal.StepFailed, false, nil, err
			} else if ok {
				if err := e.unsent(jctx, rec, started); err != nil {
					return journal.StepFailed, false, nil, err
				}
			}
			r := rec
			r.Phase, r.Status = "check", journal.StepSkipped
			// Deferred: a skipped step starts no work, so nothing waits
			// on this record; lost in a crash, resume checks again.
			if _, err := e.appendDeferred(jctx, r); err != nil {
				return journal.StepFailed, false, nil, err
			}
			ev.Status = journal.StepSkipped
			e.observe(ev)
			return journal.StepSkipped, false, nil, nil
		}
	}
	// Its work waits for what it depends on to be verified (or, for a step
	// that may start early, executed: see stepSlots.verified): a step
	// whose dependency's Verify failed never starts.
	if !sl.verified(ctx, s) {
		why := ErrInterrupted
		if err := ctx.Err(); err != nil {
			why = err
		}
		if ok, err := startedWithCheck(); err != nil {
			return journal.StepFailed, false, nil, err
		} else if ok {
			if ctx.Err() != nil {
				why = fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
			}
			return e.notSent(jctx, rec, started, why)
		}
		if ctx.Err() != nil {
			return journal.StepFailed, false, nil, why
		}
		return stepStopped, false, nil, why
	}
	var took, early bool
	if withCheck != nil && sl.writes.tryTake() {
		// A slot free at once is taken before the start is waited for,
		// as by the steps that journal their start with it: the steps
		// reach the slots in the order their Checks end, not the order
		// their fsyncs return (taking them in fsync order cost a layered
		// teardown 5%: what the first writes make ready comes later).
		took = true
		leaveDeck()
	}
	ok, err := startedWithCheck()
	if err != nil {
		if took {
			sl.writes.give()
		}
		return journal.StepFailed, false, nil, err
	}
	if ok && (s.Action != rec.Action || s.StartWithSlot) {
		// Its Check refined what it does after all: that start names
		// the wrong work, so it is ended unsent and journaled again.
		if err := e.unsent(jctx, rec, started); err != nil {
			if took {
				sl.writes.give()
			}
			return journal.StepFailed, false, nil, err
		}
		ok = false
	}
	if ok {
		// Journaled with the Check: the step takes the next free slot
		// (unless it has one) as one whose start was made durable while
		// it waited.
		early = true
	} else if took {
		// It holds a slot, and journals its start with it.
		rec.Action, ev.Action = s.Action, s.Action
		started = rec
		started.Phase, started.Status = "execute", journal.StepStarted
	} else {
		// Check may have refined what the step does (a planned update of
		// a resource that is gone becomes a create): the records of the
		// work, and what a resume reads from them, name the refined
		// action.
		rec.Action, ev.Action = s.Action, s.Action
		started = rec
		started.Phase, started.Status = "execute", journal.StepStarted
		// The "started" record is made durable now, while the step waits
		// for its write slot, so that the fsync overlaps the wait and the
		// call goes out the moment a slot is free; a step whose Execute is
		// then never called ends "not_sent" (notSent). A step that asks
		// for it (StartWithSlot: a create of a keyless provider) journals
		// its start only once it holds its slot, as the call goes out.
		// With a slot free at once there is no wait to overlap: the slot
		// is taken first and the start journaled with it, as before, so
		// the steps that find a slot keep the order they came in.
		took = !s.StartWithSlot && sl.writes.tryTake()
		early = !s.StartWithSlot && !took
		if took {
			leaveDeck()
		}
		if early {
			if stoppedBy(op.Stop) || stoppedBy(e.Lost) || sl.halted() || ctx.Err() != nil {
				// Asked to stop after Check (or while it waited for what
				// it depends on): the step never starts its work.
				if err := ctx.Err(); err != nil {
					return stepStopped, false, nil, fmt.Errorf("%w: %w", ErrInterrupted, err)
				}
				return stepStopped, false, nil, ErrInterrupted
			}
			if started, err = e.append(jctx, started); err != nil {
				return journal.StepFailed, false, nil, err
			}
		}
	}
	// The write slot is held until Execute returns.
	if !took {
		if err := sl.writes.take(ctx); err != nil {
			if early {
				return e.notSent(jctx, rec, started, fmt.Errorf("%w: %w", ErrInterrupted, err))
			}
			return journal.StepFailed, false, nil, err
		}
	}
	leaveDeck()
	held := true
	giveWrite := func() {
		if held {
			held = false
			sl.writes.give()
		}
	}
	defer giveWrite()
	if stoppedBy(op.Stop) || stoppedBy(e.Lost) || sl.halted() || ctx.Err() != nil {
		// Asked to stop after Check (or while it waited for its slot, or
		// another step failed meanwhile, or the context ended as the slot
		// came free): the step never starts its work.
		why := ErrInterrupted
		if err := ctx.Err(); err != nil {
			why = fmt.Errorf("%w: %w", ErrInterrupted, err)
		}
		if early {
			return e.notSent(jctx, rec, started, why)
		}
		return stepStopped, false, nil, why
	}
	if !early {
		if started, err = e.append(jctx, started); err != nil {
			return journal.StepFailed, false, nil, err
		}
	}
	ev.Status = "started"
	e.observe(ev)
	t0 := e.now()
	err = s.Execute(sl.execContext(ctx), started.ID)
	if err != nil && errors.Is(err, ErrNotSent) && stoppedBy(op.Stop) {
		// Stopped while its calls were held back before any went out (a
		// throttled provider's gate): it sent nothing, so it ends as one
		// that never got its slot does, "not_sent", never undone.
		giveWrite()
		ev.Status, ev.Duration = journal.StepNotSent, e.now().Sub(t0)
		e.observe(ev)
		return e.notSent(jctx, rec, started, fmt.Errorf("%w: %w", ErrInterrupted, err))
	}
	if err != nil && (s.Intervention || s.Policy != Continue) {
		// The failure stops the run (settle says how): no step starts
		// its work after it, not even the one waiting for this slot.
		sl.halt()
	}
	giveWrite()
	ev.Duration = e.now().Sub(t0)
	if err != nil {
		err = e.cut(err)
		ev.Status, ev.Err = journal.StepFailed, err
		e.observe(ev)
		return fail("execute", true, err)
	}
	r := rec
	r.Phase, r.Status = "execute", journal.StepOK
	if s.Verify == nil {
		if _, err := e.append(jctx, r); err != nil {
			return journal.StepFailed, true, nil, err
		}
		ev.Status = journal.StepOK
		e.observe(ev)
		return journal.StepOK, true, nil, nil
	}
	// The end of the work is made durable while Verify reads: the read
	// mutates nothing, so it need not wait for the record. In a chain,
	// where nothing else overlaps, the fsync is hidden behind the
	// provider's round trip instead of added to it. The work's end is
	// observed the moment its record is durable, as Verify still reads:
	// what watches the events (a progress view, a script that interrupts
	// once a Create is done) sees it when it happened, not once the read
	// is over, and always before the verify. Once it is durable, the steps
	// that depend on this one may check (they see what it recorded); they
	// start their work only once the read has verified it.
	type verified struct {
		err error
		d   time.Duration
	}
	read := make(chan verified, 1)
	sl.workers.do(func() {
		t0 := e.now()
		err := sl.read(ctx, s.Verify)
		read <- verified{err, e.now().Sub(t0)}
	})
	if _, err := e.append(jctx, r); err != nil {
		// The work's end is not recorded: that is the step's failure,
		// whatever the read said.
		<-read
		return journal.StepFailed, true, nil, err
	}
	ev.Status = journal.StepOK
	e.observe(ev)
	return journal.StepOK, true, func() (string, error) {
		v := <-read
		vev := Event{Op: op.ID, Step: s.ID, Resource: s.Resource, Type: s.Type, Action: "verify", Duration: v.d}
		if v.err != nil {
			if g := sl.gates[s.ID]; g != nil && g.halts {
				// What deleted early on its account cannot come back:
				// no step starts its work from here.
				sl.halt()
			}
			verr := e.cut(fmt.Errorf("verify: %w", v.err))
			vev.Status, vev.Err = journal.StepFailed, verr
			e.observe(vev)
			status, _, _, err := fail("verify", true, verr)
			return status, err
		}
		if stoppedBy(e.Lost) {
			// Nothing more is journaled once the journal is lost; the
			// record would only confirm, and resume's Check reads again.
			return journal.StepOK, nil
		}
		if s.Verified != nil {
			s.Verified()
		}
		r := rec
		r.Phase, r.Status = "verify", journal.StepOK
		// Deferred: a read confirmed what the durable "execute ok"
		// recorded; lost in a crash, resume's Check reads again. (One
		// that carries what Verified staged is made durable instead.)
		if _, err := e.appendDeferred(jctx, r); err != nil {
			return journal.StepFailed, err
		}
		vev.Status = journal.StepOK
		e.observe(vev)
		return journal.StepOK, nil
	}, nil
}

// Compensate undoes targets, dependents before what they depend on (order
// recomputed from g), after journaling the target set: a reverse walk of
// the graph, up to parallelism compensations at once (at least one), each
// starting once every target that depends on it has been compensated; of
// those ready, the newest in targets starts first. A compensation's slot
// is free once its call returns, while what it makes ready waits for its
// end record to be durable: so with a parallelism of one the order is
// CompensationOrder's only where that record is made before the next call
// returns. Every compensation is attempted
// even when one fails. cause is the error that made the rollback
// necessary; the outcome is Compensated (the error wraps cause) or
// RollbackIncomplete (a *RollbackError). Its records are journaled under
// ctx too.
func (e *Engine) Compensate(ctx context.Context, opID string, g *dag.Graph, targets []*Step, cause error, parallelism int) (Outcome, error) {
	return e.compensate(ctx, ctx, opID, g, targets, func() error { return cause }, parallelism, nil)
}

// compensate is Compensate undoing under ctx and journaling under jctx
// (see Run), cause known only once it ends (called then), and each target
// that verified gives a channel for undone only once it is closed (nil:
// none waits).
func (e *Engine) compensate(ctx, jctx context.Context, opID string, g *dag.Graph, targets []*Step, causeOf func() error, parallelism int, verified func(id string) <-chan struct{}) (Outcome, error) {
	ids := make([]string, len(targets))
	byID := make(map[string]*Step, len(targets))
	for i, s := range targets {
		ids[i] = s.ID
		byID[s.ID] = s
	}
	// Deferred, so it shares the first compensation's durable "started"
	// write (or the operation's end): durable before the first delete
	// (docs/architecture.md, "Rollback"), without an fsync of its own.
	if _, err := e.appendDeferred(jctx, journal.Record{Op: opID, Kind: journal.KindRollback, Status: journal.StepStarted, Targets: ids}); err != nil {
		return RollbackIncomplete, &RollbackError{Failures: map[string]error{"(journal)": err}, Cause: causeOf()}
	}
	order := CompensationOrder(g, ids)
	failures := map[string]error{}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		running int  // compensations started and not ended (records included)
		calling int  // compensations whose call has not returned: the slots
		halted  bool // a "started" record could not be written
	)
	w := newUndoWalk(g.Subgraph(ids), order)
	// run compensates one target on its own goroutine. Its slot is given
	// back the moment its call returns, so the next compensation starts
	// (its "started" record sharing the fsync) while this one's end record
	// is made durable; the walk goes on with what it makes ready only once
	// it has ended, record included, failed or not (a failed compensation
	// does not stop the others).
	run := func(s *Step) {
		released := false
		stop, err := e.compensateOne(ctx, jctx, opID, s, func() {
			mu.Lock()
			defer mu.Unlock()
			released = true
			calling--
			cond.Broadcast()
		})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures[s.ID] = err
		}
		halted = halted || stop
		if !released {
			calling--
		}
		running--
		w.done(s.ID)
		cond.Broadcast()
	}
	par := max(1, parallelism)
	mu.Lock()
	for {
		for !halted && ctx.Err() == nil && calling < par {
			id, ok := w.next()
			if !ok {
				break
			}
			s := byID[id]
			if s.Compensate == nil {
				w.done(id) // nothing to undo: no record, no slot
				continue
			}
			if v := verifiedOf(verified, id); v != nil {
				// Its Verify still reads: it waits, holding no slot, and
				// is ready again once the read has ended.
				running++
				go func() {
					select {
					case <-v:
					case <-ctx.Done():
					}
					mu.Lock()
					defer mu.Unlock()
					running--
					w.again(id)
					cond.Broadcast()
				}()
				continue
			}
			running++
			calling++
			go run(s)
		}
		if running == 0 {
			if halted || ctx.Err() != nil || !w.stuck() {
				break
			}
			continue // a cycle: its first target made ready
		}
		cond.Wait()
	}
	rest := w.notStarted()
	mu.Unlock()
	switch {
	case len(rest) == 0:
	case halted:
		// No compensation runs without its record; a journal that
		// cannot be written will not take the next one either.
		failures["(not attempted)"] = fmt.Errorf("%s: the journal cannot be written", strings.Join(rest, ", "))
	case ctx.Err() != nil:
		// Asked to stop waiting (a second interrupt): what is left
		// stays journaled as targets, for resume.
		failures["(not attempted)"] = fmt.Errorf("%s: %w: %w", strings.Join(rest, ", "), ErrInterrupted, ctx.Err())
	}
	cause := causeOf()
	if len(failures) > 0 {
		return RollbackIncomplete, &RollbackError{Failures: failures, Cause: cause}
	}
	if cause == nil {
		return Compensated, nil
	}
	return Compensated, fmt.Errorf("rolled back after: %w", cause)
}

// compensateOne runs s's compensation between its "started" record, made
// durable first, and its end record; it calls returned the moment the
// compensation itself returns, before its end record is written (not at
// all when the "started" record could not be). It returns stop when the
// "started" record could not be written (the compensation did not run,
// and no other may start), and the compensation's failure.
func (e *Engine) compensateOne(ctx, jctx context.Context, opID string, s *Step, returned func()) (stop bool, err error) {
	rec := journal.Record{Op: opID, Kind: journal.KindStep, Step: s.ID, Resource: s.Resource, Phase: "compensate"}
	r := rec
	r.Status = journal.StepStarted
	if _, err := e.append(jctx, r); err != nil {
		return true, err
	}
	t0 := e.now()
	action, err := s.Compensate(ctx)
	returned()
	status := journal.StepOK
	switch {
	case action == "" && err == nil:
		// Nothing to undo (say, a Create that failed before making
		// anything): reported as the undo skipped.
		action, status = undoAction(s.Action), journal.StepSkipped
	case action == "":
		action = undoAction(s.Action)
	}
	ev := Event{Op: opID, Step: s.ID, Resource: s.Resource, Type: s.Type, Action: action, Duration: e.now().Sub(t0), Status: status, Undo: true}
	r = rec
	r.Action, r.Status = action, status
	if err != nil {
		ev.Status, ev.Err = journal.StepFailed, err
		r.Status, r.Error = journal.StepFailed, OneLine(err.Error())
	}
	e.observe(ev)
	if _, jerr := e.append(jctx, r); jerr != nil && err == nil {
		err = jerr
	}
	return false, err
}

// undoWalk is the state of a rollback's reverse walk: a target is ready
// once every target that depends on it (in the subgraph of the targets)
// is done; of the ready ones, the first in order (CompensationOrder's)
// comes next. Its caller serialises the calls.
type undoWalk struct {
	sub     *dag.Graph
	order   []string
	pos     map[string]int
	waiting map[string]int // dependents not done yet
	ready   *dag.Positions // positions in order, smallest first
	started map[string]bool
}

func newUndoWalk(sub *dag.Graph, order []string) *undoWalk {
	w := &undoWalk{sub: sub, order: order, pos: make(map[string]int, len(order)),
		waiting: make(map[string]int, len(order)), ready: &dag.Positions{}, started: make(map[string]bool, len(order))}
	for i, id := range order {
		w.pos[id] = i
	}
	for i, id := range order {
		n := 0
		for _, d := range sub.Dependents(id) {
			if _, ok := w.pos[d]; ok {
				n++
			}
		}
		if w.waiting[id] = n; n == 0 {
			heap.Push(w.ready, i)
		}
	}
	return w
}

// next takes the ready target that comes first, if any.
func (w *undoWalk) next() (string, bool) {
	for w.ready.Len() > 0 {
		id := w.order[heap.Pop(w.ready).(int)]
		if !w.started[id] {
			w.started[id] = true
			return id, true
		}
	}
	return "", false
}

// again makes id, taken by next, ready again (it was not started).
func (w *undoWalk) again(id string) {
	w.started[id] = false
	heap.Push(w.ready, w.pos[id])
}

// done marks id compensated: what it depends on waits for one fewer.
func (w *undoWalk) done(id string) {
	for _, d := range w.sub.DependsOn(id) {
		i, ok := w.pos[d]
		if !ok || w.started[d] {
			continue
		}
		if w.waiting[d]--; w.waiting[d] == 0 {
			heap.Push(w.ready, i)
		}
	}
}

// stuck reports whether targets are left that nothing will make ready (a
// cycle: cannot happen for a validated spec), and if so makes the first of
// them in order ready, as CompensationOrder places it.
func (w *undoWalk) stuck() bool {
	if w.ready.Len() > 0 {
		return true
	}
	for i, id := range w.order {
		if !w.started[id] {
			heap.Push(w.ready, i)
			return true
		}
	}
	return false
}

// notStarted are the targets never started, in order.
func (w *undoWalk) notStarted() []string {
	var out []string
	for _, id := range w.order {
		if !w.started[id] {
			out = append(out, id)
		}
	}
	return out
}

// CompensationOrder returns ids with every dependent before what it depends
// on in g; among independent ones the later in ids comes first (newest first).
func CompensationOrder(g *dag.Graph, ids []string) []string {
	sub := g.Subgraph(ids)
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	// Kahn's algorithm over the reversed graph: a node is ready once every
	// dependent of it is placed.
	remaining := map[string]int{}
	for _, id := range ids {
		remaining[id] = len(sub.Dependents(id))
	}
	var out []string
	placed := map[string]bool{}
	for len(out) < len(ids) {
		best := ""
		for _, id := range ids {
			if placed[id] || remaining[id] > 0 {
				continue
			}
			if best == "" || pos[id] > pos[best] {
				best = id
			}
		}
		if best == "" { // a cycle: cannot happen for a validated spec; keep newest first
			for _, id := range slices.Backward(ids) {
				if !placed[id] {
					best = id
					break
				}
			}
		}
		placed[best] = true
		out = append(out, best)
		for _, d := range sub.DependsOn(best) {
			remaining[d]--
		}
	}
	return out
}

// undoAction is the action that undoes a step's action.
func undoAction(action string) string {
	switch action {
	case "create", "replace":
		return "delete"
	}
	return action
}
