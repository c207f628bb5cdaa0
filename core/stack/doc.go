// Package stack runs bulwark's operations on one stack: apply, teardown,
// resume, and the read-only status. It joins the spec, the state, the
// journal, the lock and the provider plugins, and hands the engine the steps.
//
// Guarantees:
//   - every mutating operation holds the stack's lock, refuses to start while
//     an earlier operation is unfinished (resume it) or an intervention is
//     pending (ack it), and checks the whole plan against the protection
//     ladder before its first step;
//   - deleteResource (delete.go) is the only code that asks a provider to
//     delete: it refuses a protected resource whatever the caller wants, and
//     preserves a durable one during a rollback;
//   - a rollback undoes only what the operation created or changed, found from
//     the state and the journal alone, so resume can finish it after a crash.
package stack
