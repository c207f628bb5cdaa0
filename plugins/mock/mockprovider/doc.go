// Package mockprovider is the bulwark provider "mock" (version 0.1.0): CI's
// workhorse, a simulated cloud with fault injection.
//
// # Resources
//
// Types s3_bucket, dynamodb_table, network, compute, load_balancer and
// generic. Every type takes the optional attributes size (number, updated in
// place), zone (string, force_new), secret (string, sensitive, updated in
// place: the host never shows it) and tags (a map of strings, updated in
// place; a value that is not a string is an error diagnostic on
// [tags KEY]); s3_bucket also bucket (string, force_new), dynamodb_table
// also table and hash_key (strings, force_new). Every resource has the
// computed attributes created_at (RFC 3339, UTC) and arn
// ("mock:<type>:<name>:<id>", derived from the id, so a replace changes it:
// what a spec references as ${NAME.arn}). The attributes Read, Create and
// Update return are the configured values (nil values dropped) plus
// created_at and arn. Ids look like "mock-<type>-<name>-<8 hex>".
//
// # The world
//
// The world lives in WorldFile (world.json) in the data folder the host
// passes to Configure, so it survives between runs and idempotence is
// observable; the config key world names another folder to keep it in
// (made with mode 0700 if missing; relative to the plugin's working folder,
// which is the host's), so two stacks, two state backends or two machines
// share one reality. It holds every resource (id, type, name, idempotency key,
// attributes) and the fail_delete counters. A resource "made out of band"
// is one a test writes into it with an empty idempotency_key, e.g.
// {"id": "oob-1", "type": "network", "name": "net", "idempotency_key": "",
// "attributes": {}}: Read reports no key for it, and a Create of its type
// and name is a conflict saying bulwark did not make it (write it while no
// command runs: a running provider keeps the world in memory, but notices a
// new world.json at its next call).
//
// The provider process keeps the world in memory, indexed, so a call costs
// the same whatever the world's size. A change is appended to LogFile
// (world.log, one JSON line per resource put or deleted or counter set,
// mode 0600) and fsynced before the call returns; concurrent changes share
// one fsync. The world is world.json with world.log's lines applied; when
// the provider process ends normally (the host ends it after every
// command), and whenever the log holds as many lines as the world has
// resources, world.json is rewritten atomically (temporary file in the same
// folder, fsync, rename, fsync the folder; mode 0600) and the log removed.
// So a process killed mid-run (kill -9, crash_create) leaves its changes in
// world.log, and the next one reads them; a torn last line (an append the
// kill cut, never acknowledged) is dropped. A call stats both files and
// reads what another process added (or a new world.json), unless a refresh
// began after the call arrived (of many Reads in flight, one stats for
// all). The calls of one process run side by side, as a cloud's do: Reads
// share the world in memory, and changes made together are committed as
// one group (one refresh, one append, one fsync), each applied in turn as
// if alone. Every change holds an exclusive flock on the world folder
// (taken on the folder itself, so it writes nothing), so processes sharing
// a world never lose each other's changes.
// The fail_delete counters of a shared world are shared too.
//
// # Guarantees
//
//   - One resource per (type, name). Create under an idempotency key already
//     used returns the resource that key made (no second resource); Create of
//     a (type, name) that exists under another key (or none: a resource put
//     in a shared world by hand) fails with an sdk.Conflict diagnostic naming
//     that key, and never claims or changes the resource. GetSchema declares
//     this, and the key on Read, as the IdempotencyKeys capability.
//   - Import (sdk.Importer) reads by id and, given a claim key, stamps it as
//     the resource's key, only over no key, a released one, the claim itself
//     or the key the host replaces (else sdk.Conflict); Release
//     (sdk.Releaser) turns the key it is given into sdk.ReleasedKey of it
//     (another key: sdk.Conflict). Both are one change of the world.
//   - The data source lookup (sdk.DataReader) reads a resource of the world
//     by type and name (and zone, when two zones hold one): its id, arn,
//     size, zone, tags, created_at and secret (sensitive). None is an
//     error naming what was looked for; it changes nothing.
//   - ReadMany (sdk.BatchReader: Serve declares Capabilities.ReadMany)
//     answers each read as Read would, in one call: latency_ms is slept
//     once for the whole batch; ValidateMany (sdk.BatchValidator) does the
//     same for ValidateResource.
//   - CreateMany (sdk.BatchCreator: Serve declares Capabilities.CreateMany)
//     answers each Create as a single Create made in the request's order
//     would, each with its own result, and makes them in ONE change of the
//     world (one flock, one append to LogFile, one fsync). latency_ms is
//     slept once for the batch (each Create waits it, as alone);
//     fail_create fails only its own Creates; crash_create exits once what
//     the Create it names made is durable, with what the ones before it
//     made (the ones after it are never made), replying to none of them.
//   - Read finds by id when the request has one, else by idempotency key,
//     else by (type, name), and reports the key the resource was created
//     under. Absent is Exists=false with no error.
//   - A read-only session (Configure's ReadOnly: the host only plans) writes
//     nothing anywhere: the world folder is not made, the fail_delete
//     counters are not armed, and Create, Update and Delete are refused.
//   - Update keeps the id and created_at and refuses a change to a force_new
//     attribute (that is a replace, not an Update).
//   - Delete by id (a request without one is refused: by (type, name) alone
//     it could reach another stack's resource); deleting what is gone
//     succeeds. A Delete carrying ProtectionProtected is refused, as
//     sdk.Serve already does before the provider sees it. A Delete with
//     an expected key (Capabilities.DeleteChecksKey, which the mock
//     announces) deletes only what carries that key, looked at and
//     removed under the world's lock: anything else is a conflict
//     (sdk.DeleteConflict) and stays.
//   - Calls before Configure fail with an error diagnostic.
//
// # Without its batch calls
//
// WithoutBatches returns the mock with ReadMany, ValidateMany and
// CreateMany hidden: sdk.Serve then declares none of them, and the host
// makes one Read, ValidateResource and Create per resource, as it must with
// the real providers (aws, Terraform's), none of which has batch
// calls. The executables serve it when the environment variable
// BULWARK_MOCK_BATCH (EnvBatch) is "off" ("on" or unset: the batching mock;
// any other value: the process exits 2 before serving); the host passes
// its environment to its plugins, so BULWARK_MOCK_BATCH=off bulwark apply …
// is enough. The benchmark harness (tools/bench) measures latency on both.
//
// # Without its own validation
//
// The mock validates one thing its schema cannot say: a tag's value is a
// string (ValidateResource answers it, and Create and Update refuse it).
// WithSchemaValidation drops that check and makes the mock an
// sdk.SchemaValidator: sdk.Serve declares Capabilities.SchemaValidation,
// and the host, checking the schema itself, never asks it to validate.
// The executables make it so when the environment variable
// BULWARK_MOCK_VALIDATE (EnvValidate) is "schema" ("own" or unset: the
// mock with its check; any other value: the process exits 2), with or
// without its batch calls.
//
// # The call log
//
// With the environment variable BULWARK_MOCK_CALLS (EnvCalls) naming a
// file, the executables append a line to it for every call they answer but
// Configure: the time it came, the call, how many resources it carries (a
// batch call's count), the resource's name. The benchmark counts a
// command's calls per resource from it and sees the gaps between waves
// (bench/README.md). Unset: no log.
//
// # Holding a call
//
// With the environment variable BULWARK_MOCK_HOLD (EnvHold) naming a
// folder, a test keeps a chosen call in flight for as long as it likes,
// where a latency_ms sleep would only hope the call is still running when
// the test acts. Each call but Configure is named CALL-NAME-N (HoldName):
// the call as the call log names it, the resource it names, and its
// arrival number among that process's calls of that kind naming that
// resource (CALL-N for GetSchema and the batch calls, which name none).
// If the folder holds CALL-NAME-N.hold when the call arrives, the call
// makes CALL-NAME-N.begun there (it is in flight), then waits, before
// latency_ms and before doing anything, until the .hold file is removed or
// its context ends (it then fails with the context's error, having changed
// nothing). E.g. Delete-a-1.hold keeps the first Delete of a open;
// ValidateResource-a-2.hold the second validation of a. Unset: nothing is
// held and no file is looked at; a folder that does not exist makes the
// process exit 2 before serving.
//
// # Provider config
//
// The fault-injection keys are keyed by resource name.
//
//   - fail_create: [compute] — every Create of compute fails with
//     "injected failure: create compute" and makes nothing. A Create whose
//     idempotency key already made the resource still returns it. The bare
//     name of a count or for_each resource (worker) names every one of its
//     instances (worker[a], worker[0]); worker[a] names that instance only.
//     crash_create matches names the same way.
//   - fail_delete: {network: 1} — the next n Deletes naming network fail
//     with "injected failure: delete network", whether or not it exists.
//     The count is kept in the world, so it is consumed across runs: the
//     counter is armed with n the first time Configure sees the name with
//     that value; a Configure with the same value keeps what is left; a
//     different value re-arms it; a config that no longer names it forgets
//     it (naming it again re-arms it).
//   - keep_delete: [compute] — every Delete of compute answers ok and
//     leaves it in place, as a cloud that accepted a delete and did not
//     carry it out: a Read by its id still finds it, so the host's Verify
//     of the Delete fails (a teardown halts there and keeps its record).
//     An armed fail_delete counter is consumed first. Names match as for
//     fail_create.
//   - crash_create: [compute] — Create records compute in the world (so Read
//     by its idempotency key finds it: a half-done Create with a decidable
//     outcome), then exits the process with status CrashExitCode (3) without
//     replying. The exit goes through the provider's exit hook (os.Exit
//     unless WithExit replaces it). A later Create with the same key returns
//     the recorded resource without crashing.
//   - latency_ms: 5 — every call but Configure first sleeps that long; a
//     cancelled context ends the sleep and the call fails with the
//     context's error before doing anything. A Create or Delete that asks
//     for its read-back (sdk.Capabilities.CreateReadsBack and
//     DeleteReadsBack: the host does) takes twice that: sdk.Serve answers
//     it with this provider's Read, which sleeps too, as a cloud's create
//     and the read after it are two API calls.
//   - rate_limit: 50 — a write quota, as a cloud's write APIs have one:
//     at most 50 Creates, Updates and Deletes a second (each Create of a
//     CreateMany counts as one), from a token bucket holding a second's
//     worth (at least 1) and full at Configure. A call past it is answered
//     sdk.Throttled with RetryAfter the time until the next token, after
//     latency_ms like any answer, and changes nothing; the host backs off
//     and sends it again. Reads, validations, Import and Release are not
//     limited: a cloud's quotas on its reads are far above those on its
//     writes, and the write path is what a large apply or teardown runs
//     into (the benchmark's "flat 1,000 against a mock limited to 50 calls
//     a second"). A number >= 0, fractions allowed; 0 is no limit. The
//     quota is the process's: processes sharing a world each have one.
//   - world: DIR — keep the world in DIR instead of the data folder (see
//     The world).
//   - token: "..." — a credential, as a cloud provider takes one: accepted
//     and unused; the config schema marks it sensitive, so the host never
//     shows it.
//
// GetSchema describes these keys (types; token sensitive) in
// ProviderConfig. Any other provider config key is rejected with a
// diagnostic whose attribute path is the key.
package mockprovider
