// Package inspect holds bulwark's read-only commands on a stack: status,
// history, outputs, state list and show, and doctor. None takes the
// stack's lock, writes a journal record or changes the state; none but
// doctor starts a provider (and doctor's are told to write nothing).
//
// They read through package stack's openers (stack.LoadState,
// stack.LoadOpened, Options.Backend), so a read-only command sees the
// stack exactly as the next operation will: the same backend, the same
// lineage and checksum checks, the same key.
package inspect
