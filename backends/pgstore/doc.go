// Package pgstore keeps a stack's state, journal, revisions, backups and
// lock in PostgreSQL, behind storage.Backend, on github.com/jackc/pgx/v5.
//
// The URL is libpq's (postgres://USER@HOST:PORT/DB?sslmode=…), and so are
// the credentials: PGPASSWORD, ~/.pgpass, PGSERVICE and the other PG*
// variables fill in what the URL leaves out (pgx's ParseConfig reads them).
// A password is never printed: Location drops it, and every error this
// package returns has it masked. One query parameter is bulwark's own and is
// not sent to the server: schema=NAME (default "bulwark"), the PostgreSQL
// schema that holds the tables, so one database can hold several bulwark
// installations side by side. Several stacks live in one schema, keyed by
// the stack's name. A connection attempt gives up after 15 s unless
// ?connect_timeout=N or $PGCONNECT_TIMEOUT says otherwise.
//
// Tables (schema version 2, created and migrated by Open itself under a
// transaction-level advisory lock, the version recorded in schema_version):
// stacks (one row per stack: lineage, serial, the metadata, the lock epoch,
// moved_to), resources (one row per resource), journal (one row per record,
// ordered by seq), revisions (the spec bodies), backups, and locks (the
// holder row). Bodies are JSON in bytea columns, sensitive values sealed;
// bytea so that a value with a NUL, or a database in a non-UTF-8 encoding,
// round-trips exactly. Since schema version 2, every body the state is
// read from (a resource, the stack's metadata, a revision, a backup) is a
// checksummed record (core/storage's Enclose), checked on every read
// (Disclose): a row edited by hand is refused with an error naming the row
// (table, stack, name) and how to recover, and a backup never copies one.
// The migration to version 2 adds the checksums of the bodies an older
// bulwark wrote, computed by the server over their bytes. Journal rows
// carry no state and no checksum, as the file backend's lines carry none
// (only their state changes do).
//
// Guarantees (storage's, here):
//
//   - Every Commit is one committed transaction: its journal records, its
//     resource upserts and deletes and its metadata, and nothing else, so its
//     cost is what it carries, never the stack's size. Concurrent Commits of
//     one Writer share one transaction (group commit): none is acknowledged
//     before that transaction committed.
//   - The lock is a session-level advisory lock (pg_try_advisory_lock on a
//     key hashed from the schema and the stack's name) taken on a connection
//     of its own, kept idle, plus a holder row (operation, pid, host, since,
//     and the server pid of that connection). The server drops the advisory
//     lock the moment it sees the connection close: a holder killed with
//     kill -9, or whose connection was cut, loses it then; a machine that
//     vanishes is found out by TCP keepalives (set to about 30 s on the lock
//     connection). A holder row whose server pid does not hold the lock is
//     stale, and never names a live holder.
//   - Fencing: each write's transaction first updates the stack's row on the
//     condition that the lock epoch is still this Writer's and that this
//     Writer's lock connection still holds the advisory lock (pg_locks). A
//     Writer that lost its lock writes nothing: the transaction is rolled
//     back and the call fails with storage.ErrLost. Lost() closes as soon as
//     the lock connection reports its end.
//
// Where Terraform's pg backend takes its lock through a database/sql pool
// (so a later query may run on another connection) and cannot name the
// holder, this package holds the lock on one connection and names it.
package pgstore
