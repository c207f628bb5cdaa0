// Package localprovider is the bulwark provider "local" (version 0.1.0):
// each resource is a folder on the local disk, under a root folder.
//
// # Config
//
// The provider config takes one optional key, root: the folder every
// resource lives under (made with mode 0700 if missing; a relative root is
// relative to the plugin's working folder, which is the host's). It defaults
// to the data folder the host passes to Configure. Any other key is rejected
// with a diagnostic whose attribute path is the key.
//
// # Resources
//
// Types s3_bucket, dynamodb_table, network, compute, load_balancer and
// generic. Every type takes the optional attributes size (number, updated in
// place), zone (string, force_new) and path (string, force_new); s3_bucket
// also bucket (string, force_new), dynamodb_table also table and hash_key
// (strings, force_new). Computed: created_at (RFC 3339, UTC) and folder (the
// folder's absolute path). The attributes Read, Create and Update return are
// the configured values (nil values dropped) plus the computed ones, so a
// spec can reference them (zone: "${data.folder}"). Ids look
// like "local-<type>-<name>-<8 hex>" and are stable: they are stored.
//
// A resource's folder is <root>/<type>/<name>, or <root>/<path> when path is
// set. It holds MetadataFile (.bulwark.json: id, type, name, idempotency
// key, path, attributes), which is what makes a folder a resource. The
// durable types are seeded on Create like their aws counterparts: s3_bucket
// with objects/seed.txt (an object), dynamodb_table with rows/seed.json
// (one JSON row keyed by hash_key, "id" by default).
//
// # Data sources
//
// file (sdk.DataReader) reads a regular file under the root by path
// (relative, slash separated): content (null when not UTF-8),
// content_base64, sha256 (hex) and size, at most MaxDataFileSize bytes. It
// never leaves the root: the path is checked as a resource's is (no
// absolute path, no .., no name starting with "."), then opened through an
// os.Root on the root, refusing any symbolic link on the way or at the end,
// a file with more than one hard link, and anything not a regular file (a
// folder, a fifo, a device), checked on what was opened, without blocking.
// It writes nothing, so a read-only session (a plan) reads too.
//
// # Reads
//
// Every call answers from the folders as they are, never from a cache
// another process's change would make stale. A Read, Update or Delete by
// id that carries the resource's private data (its place and key, as
// Create and Import return them) reads the folder at that place and the
// folders on the way to it, and decides from them alone when they answer
// as a walk of the root would (atPlace says when). Anything else walks the
// root and reads every resource's metadata, so it costs as much as the
// root holds; the many Reads of a plan come as ReadMany (sdk.BatchReader)
// and the Creates of an apply as CreateMany (sdk.BatchCreator), which walk
// it at most once for all of them.
//
// # Guarantees
//
//   - A folder never escapes the root. A path that is absolute, has a ..
//     component, or resolves through a symlink to outside the root is
//     rejected with a diagnostic on ["path"], by ValidateResource and again
//     by Create (ValidateResource before Configure can only check the path
//     lexically: the symlinks are followed once the root is known). Folder names starting with "." are reserved for the
//     provider. A resource folder is never made inside another one, and an
//     existing folder that is not the resource's is never adopted.
//   - Everything is written atomically (temporary file in the same folder,
//     fsync, rename, fsync the folder); files have mode 0600, folders 0700.
//   - Create is crash-safe: the folder is built as .tmp-<16 random hex>
//     beside its place, metadata last, then renamed into place. A temporary
//     folder left by a crash is settled by the next Create or Read with the
//     same key: finished (renamed into place) when its metadata was written,
//     else removed.
//   - The provider removes only what it made and recorded. Before it makes
//     a temporary folder, or renames a resource's folder for removal, it
//     records the folder in PendingFile, in the root (so any machine that
//     reaches the root settles what a crash on another left; the data folder
//     holds nothing this provider needs; an older version's record there is
//     moved into the root), changed under a flock of the root's
//     .bulwark-local-pending.lock, and it settles or removes only the folders that
//     record lists, below the root, real folders (never symlinks). A user's
//     folder that merely looks like one of its own (.del-0123456789abcdef)
//     is never touched, nor is a leftover of an older version that did not
//     record it.
//   - A read-only session (Configure's ReadOnly: the host only plans)
//     writes nothing anywhere: the root is not made, nothing is settled or
//     removed (Read by key reports an interrupted Create whose metadata
//     was written as the resource it will be), and Create, Update and
//     Delete are refused.
//   - One resource per (type, name), and per folder. Create under an
//     idempotency key already used returns the resource that key made (no
//     second resource). Create of a (type, name) that exists under another
//     key (a second stack sharing the root), or into a folder that exists
//     already (a resource's, or anything a user put there), fails with an
//     sdk.Conflict diagnostic naming the owner's key when there is one, and
//     touches nothing: nothing is ever adopted. GetSchema declares this, and
//     the key on Read, as the IdempotencyKeys capability, and describes the
//     provider config (root) in ProviderConfig.
//   - Read finds by id when the request has one, else by idempotency key,
//     else by (type, name), scanning the metadata files under the root
//     (symlinks are not followed; dot-folders are skipped) unless the
//     place the private data names answers, and reports the
//     key the resource was created under (or claimed by an import). Absent
//     is Exists=false with no error.
//   - A resource is found only at the place its MetadataFile records (its
//     path): a copy of a resource folder (cp -a root/shared/data
//     root/backup-of-data), or one moved by hand, holds the same id and key
//     but is a stranger, never read, updated or deleted by any call.
//   - Import (sdk.Importer) reads by id and, given a claim key, stamps it in
//     the MetadataFile as the resource's key, only over no key, a released
//     one, the claim itself or the key the host replaces (else
//     sdk.Conflict); Release (sdk.Releaser) rewrites a key it is given as
//     sdk.ReleasedKey of it (another key: sdk.Conflict).
//   - Update rewrites the metadata; it keeps the id and created_at and refuses
//     a change to a force_new attribute.
//   - Delete finds the resource by id (a request without one is refused:
//     by (type, name) alone it could reach another stack's folder), renames its folder to .del-<16 random hex> (recorded) and
//     removes it (os.RemoveAll); a removal cut short is finished by the
//     next Configure or Delete that is not read-only.
//     Deleting what is gone succeeds. It refuses anything outside the root,
//     and a Delete carrying ProtectionProtected (as sdk.Serve already does).
//     A Delete with an expected key (Capabilities.DeleteChecksKey, which
//     the provider announces) deletes only a folder carrying that key, and
//     checks the folder again once it is renamed out of everyone's way: a
//     folder another process put in its place before the rename is renamed
//     back and the Delete fails with a conflict (sdk.DeleteConflict). The
//     pending record names the id and key checked, and finishing a removal
//     cut short removes a folder only if it is still that resource.
//   - A mutex serialises the calls of one process; one process per root at a
//     time is assumed (the host's stack lock).
package localprovider
