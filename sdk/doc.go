// Package sdk is everything a bulwark provider author imports.
//
// A provider is an executable named bulwark-provider-<name> whose main calls
// Serve with an implementation of Provider. The host starts it through
// hashicorp/go-plugin, negotiates the protocol version (1) and speaks the gRPC
// contract in package providerv1; the author sees only the Go types here.
//
// Guarantees Serve gives whatever the provider does:
//   - a Delete request carrying ProtectionProtected is refused with an error
//     diagnostic and never reaches the provider;
//   - a panic in a provider method becomes an error diagnostic, not a dead
//     process;
//   - a resource configuration is checked against the provider's schema
//     (unknown, missing required, mistyped and computed attributes) before
//     ValidateResource, Create or Update see it.
//
// # Throttling
//
// A call an API refused for its rate limit (a cloud's Throttling, SlowDown,
// HTTP 429) answers Throttled(retryAfter, ...): an error diagnostic with
// Throttled set and, when the API said how long to wait, RetryAfter. The
// host does not fail the step for it: it lowers how many calls it makes of
// the provider at once (additive increase, multiplicative decrease, as TCP
// does), waits RetryAfter (or backs off on its own) and sends the same
// request again, until it is answered or the operation is cancelled. A
// Create goes again with its idempotency key: one throttled half-way (the
// resource made, a later call of it refused) must find and finish what it
// made, as a Create retried after a crash does. Answer Throttled after the
// client library's own retries, not instead of them.
// IsThrottled and Diagnostics.Throttle find one.
package sdk
