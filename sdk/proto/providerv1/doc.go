// Package providerv1 holds the code generated from provider.proto, the v1
// provider contract. It is regenerated with `make generate` and never edited by
// hand.
//
// Provider authors should not import it: implement sdk.Provider and call
// sdk.Serve, which speak this contract for you. It is exported only because the
// bulwark host, a separate module, speaks the other side of it.
package providerv1
