// Package engine runs operations: ordered steps with Check, Execute, Verify
// and Compensate, journaled before and after the work.
//
// A step's Check says whether its postcondition already holds (the step is
// then skipped, which is what makes a re-run a no-op); Execute does the work;
// Verify asks separately whether it took effect; Compensate undoes it. Steps
// run as a dependency graph with bounded parallelism: a step starts when every
// step it depends on is done.
//
// When a step fails, what happens is decided, in this order, by:
//   - Intervention: the operation stops, nothing is undone, and the outcome
//     is NeedsIntervention;
//   - its FailurePolicy: Abort stops starting steps and undoes nothing;
//     Continue records the failure and goes on with every step that does not
//     depend on it; Compensate stops starting steps and then undoes every
//     executed step, the failed one included (it may have mutated before
//     failing), dependents before their dependencies.
//
// Every transition is appended to the journal, and made durable, before the
// work starts and after it ends. The idempotency key an Execute receives is
// the id of its "started" record, so a crash mid-step leaves the key on disk.
// A Verify (a read: it mutates nothing) runs while its step's "execute ok"
// is being made durable, so it must not depend on that write; the step ends,
// and what depends on it starts its work, only once both are done.
//
// Early start: a step marked Step.EarlyStart (itself policy Compensate, no
// Intervention) starts its work once each dependency whose failure rolls
// the run back (policy Compensate, no Intervention) has executed, its
// "execute ok" durable, without waiting for that dependency's Verify. A
// failed Verify there halts the run as any failure does, and the rollback
// undoes every executed step, the early one (finished or in flight when
// the run halted) included, dependents first. On any other dependency it
// waits for verified. The caller sets it only where that rollback undoes
// the step whole (a create the compensation deletes); the step's Check runs
// when it always did, once what it depends on has recorded its Execute, so
// what it reads and resolves is the same either way.
//
// Early delete: a step marked Step.EarlyDelete (itself policy Continue, no
// Intervention: a teardown's delete, which nothing undoes) starts its work
// once each dependency whose failure undoes nothing (policy Continue or
// Abort, no Intervention, no Cleanup) has executed; its walk visit begins,
// and its Check reads, once that dependency's call has returned and its
// "execute ok" is durable, never while the call is in flight (the Check
// is the ownership read that decides the step's Delete: it must see what
// happened during the dependency's). A failed Verify
// of such a dependency halts the run: no step starts its work from then on,
// and what is in flight finishes and is recorded. The caller sets it only
// where deleting before the dependency is confirmed gone loses nothing it
// must keep (an ephemeral resource). A step counts as verified (its gate opens)
// only once every step it depends on is too, ok only if they all were, so
// a step that waits for verified never starts while anything below it,
// through steps that started early, is unverified.
//
// A step's "execute started" is made durable as soon as the step is ready
// to write (checked, and every step it depends on verified), while it waits
// for its write slot: the fsync overlaps the wait, and the call goes out
// the moment a slot is free. (A step that finds a slot free at once takes
// it first, and journals its start with it: there is no wait to
// overlap.) A run that stops before the call (an
// interrupt, another step's failure, a cancelled context) ends that start
// "not_sent" (journal.StepNotSent, its Key the start's id): the step
// counts as never started (Result.Blocked), not failed or executed, and is
// never rolled back; every reader of the journal drops the pair
// (journal.Sent). A crash between the start and the call is a crash
// mid-step as before: resume reads by the key, and finds nothing sent. A
// step whose caller sets Step.StartWithSlot (a create of a provider that
// takes no idempotency key, whose open start would stop resume for a
// person) journals its start only once it holds its slot; one that sets
// Step.StartWithCheck (a delete, whose Check reads again right before it)
// journals it while its Check reads, and ends it "not_sent" when the Check
// skips or fails the step: the Check still decides, on its own read,
// whether the call goes out. A failure that
// stops the run halts it before its step gives back its write slot, so the
// step waiting for that slot does not start its call.
//
// Three records guard no mutation, and are deferred (DeferringJournal): a
// Check's "skipped" (the step starts no work), a Verify's "ok" (a read
// confirmed what the durable "execute ok" already records) and a rollback's
// target set (the first compensation's "started" follows it). A deferred
// record is queued in order without waiting for its fsync, and is made
// durable by the next durable one, in the same write: it is batched, never
// skipped. That is enough because:
//   - every mutation (an Execute, a Compensate) starts only once its own
//     "started" record is durable, and that write carries every deferred
//     record queued before it, so no mutation follows a record that could
//     still be lost;
//   - the operation's end record is durable and carries them too, so a
//     finished operation has every record;
//   - a crash that loses deferred records loses only records no durable one
//     follows, so the operation is unfinished in the journal and resume
//     runs it again forward: its Checks read again (a lost "skipped" is
//     checked again and skipped again, a lost "verify ok" leaves a created
//     resource whose Check reads and compares it), and its in-flight
//     Executes are resolved by the durable idempotency key, so nothing is
//     executed twice without its key. A lost target set with no
//     compensation after it is a crash before the rollback began: resume
//     runs the operation forward again, and a failure rolls back as before.
//
// Before the first compensation the target set is journaled. The
// compensations run as a reverse walk of the targets' graph, up to the
// operation's Parallelism at once: one starts once every target that
// depends on it has been compensated, each between its own durable
// "started" record and its end record. A compensation's place among those
// is given back as its call returns, before its end record is durable (the
// next one's "started" shares that fsync); what depends on it waits for
// the record. The rollback begins as soon as no step starts any more, while
// the Verifies of the last writes still read: a target whose Verify still
// reads waits for it, the others are undone at once (unless a step still
// verifying needs a person or is a cleanup step, whose outcome could change
// the decision: then every Verify ends first). A failed compensation does not
// stop the others (a journal that cannot be written
// does: no compensation runs without its record), and the error keeps every
// failure with the original error as its cause.
//
// A resumed operation runs again under its own id and inherits the steps
// its interrupted run executed (Operation.Inherited): the two runs are one,
// so its rollback, and the target set it journals, cover both.
//
// Stopping: closing Operation.Stop (a first interrupt) starts no further
// step and lets the running ones finish; what ran is then rolled back and
// the result says Interrupted. Cancelling Run's context (a second
// interrupt) cancels the work in flight and stops the rollback between
// compensations; the journal keeps what is left for resume.
//
// Contexts: every record is appended under the context Run (or
// Compensate) was given, the command's, so a journal that hangs is let go
// of when it ends. The steps' work runs under that context too, cancelled
// as well when the journal is lost; the journal's own writes are not cut
// short by the loss (the journal refuses what comes after it).
//
// Losing the journal: closing Engine.Lost (the stack's lock was lost)
// stops the run before its next write: no step starts, the work in flight
// is cancelled, and nothing more is attempted, no compensation, no Finish,
// no end record (none could be journaled). The outcome is Unfinished with
// Result.Lost; the journal holds what a crash there would have left.
//
// An outcome is recorded by Operation.Finish and then the end record; if
// either fails the operation stays unfinished (Outcome Unfinished, the
// reached outcome in Result.Reached), so no later command takes it for done.
package engine
