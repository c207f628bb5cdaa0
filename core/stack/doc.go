// Package stack runs bulwark's operations on one stack: apply, teardown,
// rollback, resume and the state commands (the read-only commands are
// package inspect's, above it). It joins the spec, the state, the
// journal, the lock and the provider plugins, and hands the engine the steps.
//
// Guarantees:
//   - every mutating operation holds the stack's lock, refuses to start while
//     an earlier operation is unfinished (resume it) or an intervention is
//     pending (ack it), and checks the whole plan against the protection
//     ladder before its first step;
//   - deleteResource (step_delete.go) is the only code that asks a provider to
//     delete: it refuses a protected resource whatever the caller wants, and
//     preserves a durable one during a rollback;
//   - a rollback undoes only what the operation created or changed, found from
//     the state and the journal alone, so resume can finish it after a crash.
//
// Reporting: the package renders nothing for people and writes to no stream
// of its own. What an operation does is handed, as it happens, to the
// Reporter in Options (report.go: operation start and end, each step's
// transition, the plan's reads, conflicts, refusals, and Notes such as an
// operation's header or a stale lock taken over); cmd/bulwark's
// internal/progressview draws it (marks, colours, the live line on a
// terminal), and a nil Reporter reports nothing. The lifecycle events are
// the exception by design: they are a machine contract (docs/architecture.md,
// "Lifecycle events"), so the package still writes them itself (progress.go,
// through core/events to Options.Events) and every caller gets the same
// bytes. A plan is data too (Preview): cmd/bulwark's internal/planview draws it.
package stack
