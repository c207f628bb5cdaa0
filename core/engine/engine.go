package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bulwark-iac/bulwark/core/dag"
	"github.com/bulwark-iac/bulwark/core/journal"
)

// FailurePolicy says what a failed step does to its operation.
type FailurePolicy int

const (
	// Compensate undoes every executed step, dependents first (the default).
	Compensate FailurePolicy = iota
	// Continue records the failure and carries on with independent steps.
	Continue
	// Abort stops starting steps and undoes nothing.
	Abort
)

func (p FailurePolicy) String() string {
	switch p {
	case Continue:
		return "continue"
	case Abort:
		return "abort"
	}
	return "compensate"
}

// Step is one unit of an operation. Only Execute is required.
type Step struct {
	ID        string   // unique in the operation; usually the resource name
	Resource  string   // for the journal and events
	Type      string   // resource type, for events
	Action    string   // create | update | delete | ..., what Execute does
	DependsOn []string // ids of steps that must be done first

	Check      func(ctx context.Context) (done bool, err error)
	Execute    func(ctx context.Context, key string) error
	Verify     func(ctx context.Context) error
	Compensate func(ctx context.Context) (action string, err error)

	Policy       FailurePolicy
	Intervention bool // a failure needs a person: no compensation, exit 12
	// Cleanup marks a step of the operation's cleanup phase (the deletion
	// of what a replace set aside): it must depend on every other step
	// (the caller orders it so), and once one has started nothing is
	// rolled back: what it deleted cannot be made again, so an
	// interruption or a failure from then on ends the operation Failed,
	// with what is left recorded for the next run or a resume.
	Cleanup bool
	// StartWithSlot journals the step's "execute started" record only once
	// it holds its write slot, just before its Execute, instead of while
	// it waits for one. By default the record is made durable as soon as
	// the step is ready (checked, what it depends on verified), so that
	// its fsync overlaps the wait for the slot and the call goes out the
	// moment a slot is free; a start whose work never went out is then
	// ended "not_sent" (journal.StepNotSent). The caller sets it for a
	// create of a provider that takes no idempotency key: a crash after
	// its "started" leaves an outcome nobody can look up (resume stops for
	// a person), so that window stays as short as the call itself. It is
	// read after Check, which may set it (Check may refine the action).
	StartWithSlot bool
	// StartWithCheck journals the step's "execute started" record while
	// its Check reads, instead of after: the fsync overlaps the read, so a
	// step whose Check ends as a write slot frees (a delete's Check reads
	// right before its Delete, see stepSlots.deck) sends its call at once
	// instead of one fsync later, with the slot idle or held meanwhile. A
	// Check that then skips or fails the step, or a stop before the call,
	// ends that start "not_sent" (as for any start whose call never went
	// out). Only for a step whose Check never refines its action or sets
	// StartWithSlot (a delete's): the record is made before Check returns.
	// What the Check reads, and when, is unchanged. A step whose
	// dependencies are not all verified when it comes on deck journals its
	// start after its Check as usual (it waits for their Verifies then),
	// but for a dependency it deletes early after (EarlyDelete), whose
	// "execute ok" it waits for only.
	StartWithCheck bool
	// EarlyStart lets the step start its work once each step it depends on
	// has executed (its "execute ok" durable), instead of verified, where
	// that dependency's failure is undone by the run's own rollback: a
	// dependency with policy Compensate and no Intervention, whose failed
	// Verify halts the run and compensates every executed step, this one
	// included (dependents first). On any other dependency it waits for
	// verified, as without the flag. The caller sets it only where the
	// compensation undoes the step whole (the stack: a create of an
	// ephemeral resource, policy Compensate); the engine ignores it on a
	// step that is not Compensate itself or needs Intervention. It is read
	// after Check, which may set it.
	EarlyStart bool
	// EarlyDelete lets the step (policy Continue, no Intervention: a
	// delete, which nothing undoes) start its work once each step it
	// depends on has executed (its "execute ok" durable), instead of
	// verified, where that dependency's failed Verify halts the run: a
	// dependency with policy Continue or Abort, no Intervention, not a
	// Cleanup step. Such a dependency, once its call has returned and its
	// "execute ok" is durable, lets the steps that depend on it begin
	// (their Checks read while its Verify reads, never while its call is
	// in flight). Should its Verify fail, no step
	// starts its work from then on (the run halts; what is in flight
	// finishes and is recorded) and the operation ends Failed. On any
	// other dependency the step waits for verified. The engine ignores it
	// on a step that is not Continue or needs Intervention. The caller
	// sets it only where deleting the step's resource before what depends
	// on it is confirmed gone is acceptable (the stack: a teardown's
	// delete of an ephemeral resource), never where it would lose data.
	EarlyDelete bool
	// Verified, when set, is called once the step's Verify has succeeded,
	// after its "execute ok" is durable and before its "verify ok" is
	// journaled, so what it stages for the step rides on that record
	// (durable then, as every record that carries a change): the stack
	// drops a deleted resource's record only once it is verified gone.
	// Not called when the journal is lost (nothing more is recorded).
	Verified func()
}

// Operation is a set of steps run as one journaled unit.
type Operation struct {
	ID       string // op_ + ULID
	Type     string // apply | teardown | rollback | update
	Spec     string // path of the spec, for the journal
	Revision int    // target revision of a rollback, for the journal
	// Replace is the run's --replace consent, journaled on its start
	// record (a resume goes on with it).
	Replace []string
	// Scope is the run's --target addresses, and User who runs it, both
	// journaled on its start record.
	Scope []string
	User  string
	// Data is what the run's plan read of the spec's data entries,
	// journaled on its start record as it is (sealed by the caller): a
	// resume configures with it, never reading again.
	Data  json.RawMessage
	Steps []*Step
	// Parallelism is the most Executes (the writes: Create, Update,
	// Delete) in flight at once (at least one): the --parallelism of the
	// command. A step holds its write slot from just before its Execute
	// to its return, and no longer: its "execute started" record is made
	// durable while it waits for the slot (see Step.StartWithSlot).
	Parallelism int
	// ReadParallelism is the most Checks and Verifies (the reads) in
	// flight at once (0: Parallelism). Reads have their own slots, so a
	// Create's slot is free the moment it returns, whatever its Verify
	// still reads, and the Checks of the steps behind it run meanwhile.
	ReadParallelism int
	// Inherited are the steps an earlier, interrupted run of this same
	// operation executed (a resume runs the operation again under its id).
	// The two runs are one: a rollback undoes what either executed, so the
	// journaled target set holds both. A step of Steps with the same id
	// replaces its inherited one when this run executes it too.
	Inherited []*Step
	// Stop, when closed, asks the operation to stop gracefully (an
	// interrupt): no step starts after it, the running ones finish (each
	// provider call bounded by its own timeout), and what ran is then rolled
	// back as for any interruption. Cancelling Run's context instead
	// abandons the running work, and the rollback with it: the operation
	// stays unfinished in the journal for resume.
	Stop <-chan struct{}
	// Finish, when set, runs once the outcome is known and before the
	// operation's end is journaled, so what it records (a revision, an
	// intervention) is on disk before the journal calls the operation
	// finished. If it fails, the end is not journaled: the operation stays
	// unfinished (Outcome Unfinished), for resume to finish.
	Finish func(res *Result) error
}

// Outcome is how an operation ended.
type Outcome int

const (
	Succeeded          Outcome = iota // every step done or skipped
	Failed                            // a step failed and was not compensated (abort or continue)
	Compensated                       // a step failed and every executed step was undone
	RollbackIncomplete                // a step failed and some compensation failed too
	NeedsIntervention                 // a step that needs a person failed
	// Unfinished: the operation reached an outcome (Result.Reached) but
	// could not record it (Finish or the end record failed); the journal
	// leaves it running, so every later command refuses until a resume
	// finishes it.
	Unfinished
)

func (o Outcome) String() string {
	return [...]string{"succeeded", "failed", "compensated", "rollback_incomplete", "intervention", "unfinished"}[o]
}

// JournalStatus is the operation record status for the outcome.
func (o Outcome) JournalStatus() string {
	return [...]string{journal.OpSucceeded, journal.OpFailed, journal.OpCompensated, journal.OpRollbackIncomplete, journal.OpIntervention, journal.OpRunning}[o]
}

// Event is what an Observer hears about a step.
type Event struct {
	Op       string
	Step     string
	Resource string
	Type     string
	Action   string // create | update | delete | verify | preserve | refuse
	Status   string // started | ok | failed | skipped | not_sent (an Execute that sent nothing, stopped: ErrNotSent)
	// Undo is set on the events of a compensation.
	Undo     bool
	Duration time.Duration
	Err      error
}

// Observer hears about every step transition (for events and progress). It
// is called from several goroutines.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f.
func (f ObserverFunc) Observe(e Event) { f(e) }

// Journal is where the engine records transitions. ctx is the context Run
// (or Compensate) was given, the command's: a journal that hangs (a
// backend that never answers) is let go of when it ends.
type Journal interface {
	Append(ctx context.Context, r journal.Record) (journal.Record, error)
}

// DeferringJournal is a Journal that can also take a record without waiting
// for it to be durable: AppendDeferred queues r after every record appended
// before it, and r becomes durable with the next Append (the same write),
// never later; a crash before that may lose it (and the deferred records
// after it), never an Append after it. The record returned may lack its id
// and time. The engine defers only the records that guard no mutation (see
// the package documentation); with a plain Journal they are appended as
// any other.
type DeferringJournal interface {
	Journal
	AppendDeferred(ctx context.Context, r journal.Record) (journal.Record, error)
}

// Result says what an operation did.
type Result struct {
	Outcome  Outcome
	Done     []string         // executed and verified, completion order
	Skipped  []string         // Check found them done
	Failed   []string         // failed, completion order
	Blocked  []string         // never started
	Executed []string         // Execute was called (done or failed), completion order
	Errors   map[string]error // per failed step
	// Rollback is the journaled rollback target set, when a rollback ran:
	// what this run and the interrupted runs it inherits executed.
	Rollback []string
	// Interrupted is set when the run was stopped (Operation.Stop) or its
	// context cancelled before every step had run.
	Interrupted bool
	// Reached is the outcome an Unfinished operation reached but could not
	// record.
	Reached Outcome
	// Lost is set when Engine.Lost stopped the run: nothing was attempted
	// after it (Outcome Unfinished, Err wrapping ErrLost).
	Lost bool
	// Err is nil on success; otherwise a *StepError, a *RollbackError
	// whose cause is the original failure, or an *UnrecordedError.
	Err error
}

// ErrInterrupted is the cause of a rollback that an interruption started.
var ErrInterrupted = errors.New("interrupted")

// ErrNotSent is what an Execute returns (wrapped) when it sent nothing and
// gave up waiting to send because the run is stopping (Operation.Stop is
// closed): it changed nothing. The step then ends "not_sent", as one
// stopped before its Execute does: not failed, not executed, never undone.
// Returned while the run is not stopping, it is a failure like any other.
var ErrNotSent = errors.New("nothing was sent")

// UnrecordedError is an operation whose outcome could not be recorded: it
// stays unfinished.
type UnrecordedError struct {
	Reached Outcome
	Err     error // why it could not be recorded
	Cause   error // the run's own error, if any
}

func (e *UnrecordedError) Error() string {
	msg := fmt.Sprintf("the operation reached %q but could not record it: %v", e.Reached, e.Err)
	if e.Cause != nil {
		msg += " (after: " + e.Cause.Error() + ")"
	}
	return msg
}

// Unwrap returns why it could not be recorded, then the run's error.
func (e *UnrecordedError) Unwrap() []error {
	out := []error{e.Err}
	if e.Cause != nil {
		out = append(out, e.Cause)
	}
	return out
}

// StepError is the failure of one or more steps.
type StepError struct {
	Failures map[string]error
}

func (e *StepError) Error() string {
	ids := sortedKeys(e.Failures)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s: %v", id, e.Failures[id])
	}
	return strings.Join(parts, "; ")
}

// Unwrap gives every failure to errors.Is and errors.As.
func (e *StepError) Unwrap() []error {
	out := make([]error, 0, len(e.Failures))
	for _, id := range sortedKeys(e.Failures) {
		out = append(out, e.Failures[id])
	}
	return out
}

// RollbackError is a compensation that did not complete: every failed
// compensation, with the error that started the rollback as its cause.
type RollbackError struct {
	Failures map[string]error
	Cause    error
}

func (e *RollbackError) Error() string {
	ids := sortedKeys(e.Failures)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s: %v", id, e.Failures[id])
	}
	msg := "rollback incomplete: " + strings.Join(parts, "; ")
	if e.Cause != nil {
		msg += " (after: " + e.Cause.Error() + ")"
	}
	return msg
}

// Unwrap returns the cause first, then every compensation failure.
func (e *RollbackError) Unwrap() []error {
	out := []error{}
	if e.Cause != nil {
		out = append(out, e.Cause)
	}
	for _, id := range sortedKeys(e.Failures) {
		out = append(out, e.Failures[id])
	}
	return out
}

func sortedKeys(m map[string]error) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ErrJournal wraps a failure to write the journal: the engine stops rather
// than work without a record.
var ErrJournal = errors.New("journal write failed")

// Engine runs operations against one journal.
type Engine struct {
	Journal  Journal
	Observer Observer
	Now      func() time.Time
	// Lost, when closed, says the journal can no longer be written (the
	// stack's lock was lost to a connection cut or a lease taken over): a
	// run stops before its next write. No step starts after it, the
	// running steps' contexts are cancelled, and nothing more is attempted
	// (no compensation, no Finish, no end record: none could be
	// journaled). The outcome is Unfinished with Result.Lost set; the
	// journal leaves the operation running, with its steps in flight, for
	// a resume under the lock's next holder, exactly as after a crash.
	Lost <-chan struct{}
}

// ErrLost is the error of a run the journal's loss stopped (Engine.Lost).
var ErrLost = errors.New("the journal can no longer be written: the operation stopped before its next write")

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) observe(ev Event) {
	if e.Observer != nil {
		e.Observer.Observe(ev)
	}
}

func (e *Engine) append(ctx context.Context, r journal.Record) (journal.Record, error) {
	r, err := e.Journal.Append(ctx, r)
	if err != nil {
		return r, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	return r, nil
}

// appendDeferred journals a record that guards no mutation (a Check that
// skipped its step, a Verify that confirmed it, a rollback's target set):
// it need not be durable before the engine goes on, only before the next
// durable record, which every mutation and the operation's end wait for
// (see the package documentation for why that is enough).
func (e *Engine) appendDeferred(ctx context.Context, r journal.Record) (journal.Record, error) {
	dj, ok := e.Journal.(DeferringJournal)
	if !ok {
		return e.append(ctx, r)
	}
	r, err := dj.AppendDeferred(ctx, r)
	if err != nil {
		return r, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	return r, nil
}

// Graph returns the dependency graph of steps (ids as nodes).
func Graph(steps []*Step) *dag.Graph {
	g := dag.New()
	for _, s := range steps {
		g.Add(s.ID)
	}
	for _, s := range steps {
		for _, d := range s.DependsOn {
			if g.Has(d) {
				g.Connect(s.ID, d)
			}
		}
	}
	return g
}
