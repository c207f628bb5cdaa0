package storage

import "context"

// ClaimsName is where a backend keeps its claims lock, beside its stacks
// (a folder of the state folder, an object prefix): no stack can have this
// name (a stack's starts with a letter), so no stack's lock is it.
const ClaimsName = ".claims"

// ClaimsLock is a backend's claims lock, held: one for all the stacks on the
// backend, taken by an import of a provider that cannot stamp a claim on
// what it imports (one built for Terraform) from its check of the other
// stacks' states to the durable record of the import, so that two imports
// of one id into two stacks are taken in turn and the second sees the
// first's record. Like a stack's lock, a holder that dies loses it (the
// kernel for file, the server for postgres, the lease for s3).
type ClaimsLock interface {
	// Held fails (wrapping ErrLost) unless the lock is still this
	// holder's: checked right before the record it guards is written.
	Held(ctx context.Context) error
	// Release gives the lock up; releasing a lock lost meanwhile leaves
	// its new holder's as it is.
	Release(ctx context.Context) error
}

// ClaimsLocker tries once to take a backend's claims lock for h: held by
// another, it fails at once with a *LockedError (errors.Is ErrLocked); the
// caller waits and tries again.
type ClaimsLocker func(ctx context.Context, h Holder) (ClaimsLock, error)
