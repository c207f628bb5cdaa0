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
package sdk
