// Package s3store keeps a stack's state, journal, revisions, backups and
// lock in an S3 bucket (AWS or an S3-compatible server), behind
// storage.Backend, on aws-sdk-go-v2. No DynamoDB table is needed: the lock
// and every state write are S3 conditional writes.
//
// # URL and credentials
//
//	s3://BUCKET/PREFIX?region=eu-west-1&endpoint=https://s3.example:9000&profile=team&lease=60s
//
// The bucket must exist (bulwark never creates or configures it; turn its
// versioning on, as for Terraform's s3 backend, to keep every object's
// history). A stack's objects live under PREFIX/STACK/, so one prefix holds
// many stacks, as a --state-dir does. region, endpoint (an S3-compatible
// server or an emulator: path-style addressing), profile (a shared-config
// profile) and lease (how long a lock lives without renewal; 60s by
// default, at least 3s) are the only parameters: any other is refused, so a
// key pasted into the URL is never taken, stored or echoed. Credentials
// come from the SDK's standard chain (environment, shared files and
// profile, SSO, web identity, container and instance roles), are resolved
// when the backend is opened (none found is said as such, naming every
// source the chain tried and how to give one), and never appear in a
// message: Location is the URL as given, not re-encoded. A bucket that
// does not exist is said to be so on every path, read or write.
//
// # Objects (under PREFIX/STACK/)
//
//   - stack.json: the stack's identity (name, lineage), written once, with
//     If-None-Match: *, by the first durable write; `bulwark state migrate`
//     adds moved_to (If-Match), and Load and Lock then refuse with
//     storage.ErrMoved naming the new place.
//   - lock.json: the lock: the holder (operation, pid, host, since), the
//     lease's end (until), a random token, and what identifies the holder's
//     process on its machine (boot id, pid namespace, start time); once its
//     holder let it go, marked released (it is never deleted).
//   - snapshot.json: the state as of WAL sequence number seq, and the
//     journal up to it (compacted), sensitive values sealed, and the fences
//     (the WAL objects of takeovers, kept); rewritten by Checkpoint only,
//     with If-Match on the ETag it read (If-None-Match: * for the first).
//   - wal/SEQ (SEQ zero-padded to 20 digits): one object per durable write,
//     holding the journal records and the state changes of the Commits it
//     groups (a delta: the resources put and deleted and the metadata, if
//     any), written with If-None-Match: *. Its size is what it carries:
//     a Commit costs one PUT whatever the stack's size or history.
//   - revisions/N, backups/NAME: revision bodies and backups (sealed).
//
// Every object but lock.json is a checksummed record (core/storage's
// Enclose: {"checksum":"sha256:…","record":…}, object format 2), checked
// on every read (Disclose): an object edited by hand, or damaged, is
// refused with an error naming the backend, the stack and the object's
// key, and where good copies are (an earlier version, by bucket versioning,
// or a backup). A stack an older bulwark wrote (its stack.json has no
// checksum) is read without them, and its next Lock adds them: a snapshot
// of what it loaded, every revision and backup, then stack.json (a crash
// midway leaves stack.json as it was, and the next Lock does it again).
//
// Load reads stack.json, snapshot.json, then the WAL objects after the
// snapshot's seq, in order (fetched in parallel): the state and journal are
// the snapshot's with each segment applied. Checkpoint folds the WAL into
// a new snapshot and deletes the segments it holds but the fences (a
// reader that meets a gap, a checkpoint having run meanwhile, starts
// again).
//
// # The lock, its lease and fencing
//
// Lock creates lock.json with If-None-Match: *: of N machines racing,
// exactly one gets 200, the others 412 and read the holder to name it
// (exit 4). The holder renews its lease in the background (every lease/3,
// If-Match on its own ETag). A lock whose lease ran out, or whose holder is
// a process of this machine that no longer runs (same boot id and pid
// namespace, the pid gone or started at another time: a kill -9 here is
// resumed at once, not a lease later), is stale: Lock takes it over with
// If-Match on the ETag it read (one taker wins), and Writer.Stale names the
// old holder.
//
// The takeover is journaled, and the record is the fence: the taker writes
// the next WAL object (a record of kind "lock", status "taken_over", naming
// the old holder) before anything else. The old holder, if it is only
// paused and not dead, can then write nothing: its next WAL object's key is
// taken, so its PUT gets 412, read as a lost race (storage.ErrLost), as is
// a 404, a 409 (ConditionalRequestConflict) or a 412 on any conditional
// write. A Checkpoint never deletes a WAL object that holds a takeover's
// record (the snapshot lists them), so that key stays taken however much
// of the WAL around it is folded. Every other write (a revision's body, a
// backup, the snapshot, stack.json) first reads lock.json and is refused
// with ErrLost unless it still carries the writer's token. Writer.Lost
// closes when a renewal fails to find this holder's lock (412, 404:
// another holder, or none) or the lease runs out without a renewal
// getting through; every later call fails with ErrLost before it writes
// anything. The lease is only how others learn a holder is dead:
// correctness comes from the conditional writes and the token, so clock
// skew between machines can make a takeover early, never a lost write.
// Every decision about a lease (its end, whether it ran out) is made on
// the backend's clock (storage.Options.Now).
//
// Release never deletes lock.json: it overwrites it, with If-Match on the
// ETag it read and only when that record carries its token, with the same
// record marked released, which Lock then takes as free. Nothing rests on
// a conditional DELETE, whose condition some S3-compatible servers ignore
// (MinIO was seen to delete on a wrong If-Match): a holder displaced
// without knowing it (a pause inside Release, a clock behind the taker's)
// would delete its successor's lock.
//
// # Guarantees (storage's, here)
//
//   - Durable before acknowledged: Commit returns once its WAL object's PUT
//     answered 200. Concurrent Commits of one Writer share one object (group
//     commit).
//   - Atomic: a Commit's records and its change are in one object: both are
//     visible after it, or neither.
//   - A write that fails in a way that leaves its outcome unknown (a
//     timeout, a 5xx after the SDK's retries) is looked up by key: if the
//     object is there with this writer's token it was written; if not, the
//     Writer is unusable from then on (a later object could not be ordered
//     after an unknown one), and the operation stops; resume goes on from
//     what is stored.
//   - Lineage: every WAL object and the snapshot carry the stack's lineage;
//     one that differs from stack.json's is refused (ErrLineage).
//
// # Costs
//
// Per Commit: one PUT (the WAL object; the first Commit of a stack also
// writes stack.json). Per Lock: a PUT (plus a GET and, for a takeover, a
// PUT and the fence), and a Load (the snapshot plus the WAL since it).
// Per Checkpoint: one PUT of the snapshot (state and the retained journal:
// bounded by retention, not by history), and a DeleteObjects of the
// segments it folded; only when the journal compacts or the WAL since the
// snapshot is long (100 objects or 4 MiB): otherwise Load is cheap already
// and nothing is written, so a no-op apply costs two small PUTs.
package s3store
