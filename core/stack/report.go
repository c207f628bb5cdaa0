package stack

import (
	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
)

// Reporter is what an operation tells a person while it runs: the hooks a
// progress view implements (cmd/bulwark's progressview draws them, with the
// live line and colours on a terminal). The stack package renders nothing
// itself and writes to no stream of its own for people: every line a person
// reads goes through a Reporter set in Options. The lifecycle events
// (core/events JSON lines, a machine contract: docs/architecture.md,
// "Lifecycle events") are not a view: the stack still writes them itself to
// Options.Events, so every caller gets the same bytes.
//
// Every error a Reporter is handed is already masked (Options.Redactor).
// Its methods may be called from several goroutines at once (the engine's
// steps and the plan's reads run in parallel); an implementation locks.
type Reporter interface {
	// OperationStarted: an operation (op ID, type: apply, rollback,
	// teardown, import, ...) begins; OperationEnded: it ended with status
	// (an Outcome's name, or "refused" when refused before any step), the
	// exit code that means and its error (nil when it succeeded).
	OperationStarted(op, typ string)
	OperationEnded(op, typ, status string, exit int, err error)
	// StepsStarted and StepsEnded bracket an operation's steps (a view's
	// live line of what is running lives between them).
	StepsStarted()
	StepsEnded()
	// Step is one transition of a step (started, ok, failed, skipped; an
	// empty Resource is an update's own step: verify, backup, stage...).
	// protection is the resource's level when the operation knows it.
	Step(e engine.Event, protection string)
	// ReadsStarted begins a plan's n reads of what its resources are,
	// ReadStarted and ReadEnded bracket each, ReadsEnded ends them.
	ReadsStarted(n int)
	ReadStarted(resource string)
	ReadEnded(resource string)
	ReadsEnded()
	// Conflict: an ownership conflict refuses change c; Refused: the
	// protection ladder refuses change c (a protected resource's delete,
	// replace, or, when its Ownership is plan.Gone, the drop of its record).
	Conflict(op string, c plan.Change)
	Refused(op string, c plan.Change)
	// Note is one line for a person (without its newline): an operation's
	// header, a warning, a note such as a stale lock taken over.
	Note(text string)
}

// NopReporter reports nothing (the default when Options.Reporter is nil;
// embed it to implement only some hooks).
type NopReporter struct{}

var _ Reporter = NopReporter{}

func (NopReporter) OperationStarted(op, typ string)                            {}
func (NopReporter) OperationEnded(op, typ, status string, exit int, err error) {}
func (NopReporter) StepsStarted()                                              {}
func (NopReporter) StepsEnded()                                                {}
func (NopReporter) Step(e engine.Event, protection string)                     {}
func (NopReporter) ReadsStarted(n int)                                         {}
func (NopReporter) ReadStarted(resource string)                                {}
func (NopReporter) ReadEnded(resource string)                                  {}
func (NopReporter) ReadsEnded()                                                {}
func (NopReporter) Conflict(op string, c plan.Change)                          {}
func (NopReporter) Refused(op string, c plan.Change)                           {}
func (NopReporter) Note(text string)                                           {}
