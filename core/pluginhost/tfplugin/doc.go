// Package tfplugin is the host's side of Terraform's provider plugin
// protocols, versions 5 and 6: the second protocol the plugin host speaks,
// beside bulwark's own (grpcv1), so that a provider built for Terraform or
// OpenTofu runs unchanged.
//
// Start launches a provider executable as Terraform does (go-plugin with
// Terraform's magic cookie, versions 5 and 6 offered, gRPC only, automatic
// mutual TLS) and returns a Provider: one connection, whose methods are
// the same for both versions (the wire5 and wire6 types translate). Values
// cross it as go-cty values of the types the provider's schema implies
// (Block.ImpliedType), msgpack-encoded on the wire as Terraform encodes
// them; raw states for UpgradeResourceState are Terraform's JSON state
// encoding (StateJSON).
//
// The plain values the rest of the host works with (providers.Attributes)
// convert to and from cty with Values (ObjectFromAttributes,
// AttributesFromObject): a value known only after apply is explicit, an
// Unknown (or the caller's own marker), never a guess; ProposedNew makes
// the proposed new state PlanResourceChange wants from the prior state and
// the configuration.
//
// The generated code (internal/tfplugin5, internal/tfplugin6) is bulwark's
// own, from .proto files that declare only what the host uses, with
// Terraform's field numbers and package names (the gRPC method paths need
// them). Its messages have Terraform's full names: a program must not link
// it with terraform-plugin-go's generated code, whose registrations would
// conflict; the tests' provider is a program of its own for that reason
// (testdata/tfprovider, a module that core does not require).
package tfplugin
