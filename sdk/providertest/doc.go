// Package providertest is the bulwark provider conformance suite. A provider
// author runs it from their own go test:
//
//	func TestConformance(t *testing.T) {
//		providertest.RunGRPC(t, func(t *testing.T) sdk.Provider { return &hello{} }, providertest.Config{
//			Resources: []providertest.Resource{{
//				Type: "greeting", Name: "world",
//				Config: map[string]any{"text": "hello"},
//				Update: map[string]any{"text": "hello", "shout": true},
//			}},
//		})
//	}
//
// # Four ways to run it
//
//   - Run calls the Provider directly, in the test's process. The guarantees
//     sdk.Serve adds in front of a provider (the schema check of every
//     resource config, the refusal of a protected Delete) are not in the
//     path, so the checks that rely on them are logged and skipped.
//   - RunGRPC wraps the provider in exactly what sdk.Serve serves (the SDK's
//     gRPC server, through go-plugin) and talks to it over a real gRPC
//     connection, still in the test's process. Prefer it: it is fast and
//     checks everything.
//   - RunPlugin re-executes the test binary as a plugin process that serves
//     the provider with sdk.Serve, and starts it the way the bulwark host
//     does (go-plugin handshake, protocol negotiation, mutual TLS).
//   - RunExecutable does the same with a built provider executable.
//
// ServeGRPC (RunGRPC's transport) and StartPlugin (RunExecutable's) give a
// provider's own tests the host side of a provider, to call it as the host
// does.
//
// # What a pass guarantees
//
// The suite keeps the private data a provider returns (sdk.CreateResponse
// Private; a later Read's or Update's replaces it when not empty) and hands
// it back on every Read by ID, Update and Delete, as the host does.
//
// Each check is a subtest with a stable name, so a failure says which rule
// is broken. The suite checks, for the provider:
//
//   - schema: GetSchema answers without error diagnostics, with a provider
//     name and version; it returns the same schema on every call (and, through
//     gRPC, the same schema the provider built, after the round trip); type
//     names are unique and every configured type is there; attribute names are
//     unique within a type, every attribute has a type, and no attribute is
//     computed and also required or force_new.
//     The provider config schema (ProviderConfig), when there is one, has
//     unique named keys with valid types, none computed or force_new, and
//     describes every key Config.ProviderConfig sets. Data sources
//     (DataSources, offered through gRPC only by a provider that implements
//     sdk.DataReader) have unique names and unique, typed attributes, none
//     both computed and required, none force_new.
//   - configure: Configure accepts Config.ProviderConfig and the data folder.
//
// and then, for each Resource in turn, under a subtest named "<type>.<name>":
//
//   - config_matches_schema: the Resource's Config (and Update) are valid for
//     the schema (a mistake in the Config, not in the provider, if not), and
//     Update changes no force_new attribute.
//   - validate: ValidateResource accepts the Config.
//   - validate_rejects_unknown_attribute: ValidateResource of the Config plus
//     the attribute "providertest_unknown_attribute" returns an error
//     diagnostic whose AttributePath names it (skipped by Run when the
//     provider leaves that check to sdk.Serve).
//   - read_absent: Read of a name never created, and of an idempotency key
//     never used, is Exists=false with no error.
//   - create: Create succeeds and returns an ID.
//   - read_by_id: Read by that ID finds it, with the configured attributes.
//   - read_by_idempotency_key: Read by the Create's idempotency key, with no
//     ID, finds the same ID.
//   - create_same_key_again: a second Create with the same key returns the
//     same ID, and Read by type and name (no ID, no key) still finds that ID:
//     nothing new was made.
//   - read_reports_key: Read by ID, by key and by type and name reports, in
//     IdempotencyKey, the key of the Create that made the resource. Skipped,
//     saying so, for a provider that does not declare
//     Capabilities.IdempotencyKeys.
//   - create_conflict: a Create of the same type, name and config under
//     another key must not claim the resource: it never returns its ID, and
//     the resource keeps its key and attributes (Read by ID shows them as
//     before) and is not found by the other key. A provider that declares
//     Capabilities.IdempotencyKeys must fail that Create with a conflict
//     diagnostic (sdk.Conflict; sdk.IsConflict); one that does not may fail
//     it any way, or make a second resource (which the check deletes), and
//     is told the conflict diagnostic was not checked. So a provider that
//     takes over what it did not make fails the suite either way.
//   - import: when the provider implements sdk.Importer (through gRPC:
//     when sdk.Serve declared Capabilities.Import), Import by the ID finds
//     the resource with its configured attributes (and, with
//     IdempotencyKeys, the key it was created under). Skipped otherwise: the
//     host then imports with Read by ID.
//   - validate_many: when the provider implements sdk.BatchValidator
//     (through gRPC: when sdk.Serve declared Capabilities.ValidateMany), one
//     ValidateMany of Config twice answers two results, each without an
//     error. Skipped otherwise.
//   - read_many: when the provider implements sdk.BatchReader (through
//     gRPC: when sdk.Serve declared Capabilities.ReadMany), one ReadMany of
//     the resource by ID, an absent name, the resource by key and by name
//     answers one result per read, in order, each what Read answers.
//     Skipped otherwise: the host then makes single Reads.
//   - create_many: when the provider implements sdk.BatchCreator (through
//     gRPC: when sdk.Serve declared Capabilities.CreateMany), one
//     CreateMany of the resource's Create under the key that made it and of
//     a Create of the same identity under another key answers one result
//     each, in order, as the single Creates do: the first the same ID (no
//     second resource), the second failing on its own (with
//     IdempotencyKeys, a conflict diagnostic) without failing the first or
//     claiming the resource. Skipped otherwise: the host then makes single
//     Creates.
//   - read_by_key_after_restart: a fresh provider instance (newProvider
//     again, or a new process), configured with the same data folder, finds
//     the resource by the idempotency key: the host's recovery after a crash
//     mid-Create.
//   - elsewhere: with Config.Elsewhere, a fresh instance configured with
//     another, empty data folder (another machine resuming) finds the
//     resource by the idempotency key alone, and by its ID with the private
//     data, and a Create under the same key returns the same ID. Skipped
//     otherwise.
//   - read_only_session: a fresh provider instance configured with ReadOnly
//     (as a plan configures it) answers GetSchema, ValidateResource and Read
//     (finding the resource by ID, key and type and name) and leaves the
//     data folder exactly as it was, byte for byte: a plan writes nothing.
//     (What lives outside the data folder, the suite cannot see.)
//   - read_data (when Resource.Data is set; the provider must implement
//     sdk.DataReader): in a fresh instance configured with ReadOnly, each
//     Data read finds the resource: no error, every argument given and
//     every result its data source declares in the answer, the values Want
//     names, the same answer twice, the data folder untouched; through
//     gRPC, Capabilities.ReadData is declared and a result set in the
//     config is refused.
//   - update (when Resource.Update is set): Update succeeds, and Read by the
//     same ID and by type and name finds the same ID with the new attributes.
//   - delete_protected: a Delete carrying ProtectionProtected is refused with
//     an error diagnostic and the resource still exists (skipped by Run).
//   - delete_checks_key: when the provider declares
//     Capabilities.DeleteChecksKey, a Delete whose ExpectedKey is not the
//     resource's key is refused with a conflict diagnostic
//     (sdk.DeleteConflict; sdk.IsConflict) and the resource still exists.
//     Skipped otherwise.
//   - delete: Delete succeeds (carrying, of a provider that declares
//     Capabilities.DeleteChecksKey, the key the resource was created
//     under), then Read by ID, by idempotency key and by type and name all
//     say Exists=false without error.
//   - delete_again: Delete of what is gone succeeds.
//   - create_many_fresh: when the provider implements sdk.BatchCreator, a
//     CreateMany of the resource under a fresh key (after delete) makes it
//     with the configured attributes, Read by that key finds it, and a
//     second CreateMany and a single Create under the key return the same
//     ID. Skipped otherwise.
//
// Every Read, Update and Delete the suite sends carries the resource's Type
// and Name (and Read its Config), as the bulwark host's requests do; a Read
// "by ID" or "by idempotency key" is one whose ID or IdempotencyKey is set.
// Attributes are compared after a JSON round trip, as they travel: a
// configured 2 matches a read 2.0. Only configured attributes are compared;
// computed ones may be anything.
//
// What the suite does not check: concurrent calls, a crash in the middle of a
// call (the restart check only models a new process after a Create that
// finished), and anything about types and attributes the Config does not
// name. Those stay the provider's own tests' job. Nor throttling: the suite
// makes its calls one at a time and does not retry an sdk.Throttled answer
// as the host does; the check that meets one fails naming it, so run the
// suite where the API's quota has room. (That a throttled call does nothing
// is a promise no call from outside can check.)
//
// Every run uses fresh idempotency keys. A resource the suite created is
// deleted when its subtest ends, whatever happened. Resources are created one
// at a time, each under its configured name, so a provider that allows one
// resource per (type, name) passes; with a shared Config.DataDir, none of
// the configured names may already exist there.
package providertest
