package pgstore

import "strings"

// queries are the package's SQL, with the schema's quoted name in place.
type queries struct {
	readStack, readResources, readJournal, readRevision, listBackups, readBackup, stats, holder string

	ensureStack, takeover, setLineage, putHolder, oldHolder, dropHolder, lastLineage string
	fenceCommit, fence                                                               string
	insertJournal, upsertResources, deleteResources                                  string
	putRevision, deleteRevision                                                      string
	backupExists, nextBackupSeq, insertBackup, pruneBackups                          string
	newestBackupSerial, dropBackup, replaceBackup                                    string
	journalOps, journalOf, deleteOps                                                 string
	readSerial, markMoved                                                            string
}

// heldBy is true when server process $pid holds the stack's advisory lock,
// whose key shows in pg_locks as classid $cls, objid $obj.
const heldBy = `EXISTS (SELECT 1 FROM pg_locks p WHERE p.locktype = 'advisory'
	AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND p.classid = $cls::bigint::oid AND p.objid = $obj::bigint::oid AND p.objsubid = 1 AND p.granted AND p.pid = $pid)`

func held(cls, obj, pid string) string {
	return strings.NewReplacer("$cls", cls, "$obj", obj, "$pid", pid).Replace(heldBy)
}

func newQueries(s string) queries {
	r := strings.NewReplacer("{{s}}", s)
	q := func(sql string) string { return r.Replace(sql) }
	return queries{
		readStack:     q(`SELECT lineage, serial, journal_seq, lock_epoch, meta, moved_to FROM {{s}}.stacks WHERE stack = $1`),
		readResources: q(`SELECT name, body FROM {{s}}.resources WHERE stack = $1`),
		readJournal:   q(`SELECT seq, body FROM {{s}}.journal WHERE stack = $1 ORDER BY seq`),
		readRevision:  q(`SELECT body FROM {{s}}.revisions WHERE stack = $1 AND n = $2`),
		listBackups:   q(`SELECT name, taken, serial, octet_length(body) FROM {{s}}.backups WHERE stack = $1 ORDER BY seq`),
		readBackup:    q(`SELECT body, lineage FROM {{s}}.backups WHERE stack = $1 AND name = $2`),
		stats: q(`SELECT
	(SELECT coalesce(sum(octet_length(body)), 0) FROM {{s}}.resources WHERE stack = $1)
		+ (SELECT coalesce(sum(coalesce(octet_length(meta), 0)), 0) FROM {{s}}.stacks WHERE stack = $1),
	(SELECT count(*) FROM {{s}}.resources WHERE stack = $1),
	(SELECT coalesce(sum(octet_length(body)), 0) FROM {{s}}.journal WHERE stack = $1),
	(SELECT count(*) FROM {{s}}.journal WHERE stack = $1),
	(SELECT coalesce(sum(octet_length(body)), 0) FROM {{s}}.revisions WHERE stack = $1),
	(SELECT count(*) FROM {{s}}.revisions WHERE stack = $1),
	(SELECT coalesce(sum(octet_length(body)), 0) FROM {{s}}.backups WHERE stack = $1),
	(SELECT count(*) FROM {{s}}.backups WHERE stack = $1),
	(SELECT count(*) FILTER (WHERE NOT summary) FROM (SELECT bool_or(kind = 'summary') AS summary FROM {{s}}.journal WHERE stack = $1 GROUP BY op) o),
	(SELECT coalesce(sum(greatest(coalesce((convert_from(body, 'UTF8')::jsonb->>'repeated')::int, 1), 1)), 0)::bigint FROM {{s}}.journal WHERE stack = $1 AND kind = 'summary')`),
		holder: q(`SELECT l.op, l.pid, l.host, l."user", l.since FROM pg_locks p
	LEFT JOIN {{s}}.locks l ON l.stack = $1 AND l.backend_pid = p.pid
	WHERE p.locktype = 'advisory' AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND p.classid = $2::bigint::oid AND p.objid = $3::bigint::oid AND p.objsubid = 1 AND p.granted`),

		ensureStack: q(`INSERT INTO {{s}}.stacks (stack) VALUES ($1) ON CONFLICT (stack) DO NOTHING`),
		takeover:    q(`UPDATE {{s}}.stacks SET lock_epoch = lock_epoch + 1 WHERE stack = $1 RETURNING lock_epoch`),
		setLineage:  q(`UPDATE {{s}}.stacks SET lineage = $2 WHERE stack = $1`),
		putHolder: q(`INSERT INTO {{s}}.locks (stack, op, pid, host, "user", since, backend_pid) VALUES ($1, $2, $3, $4, $5, $6, pg_backend_pid())
	ON CONFLICT (stack) DO UPDATE SET op = excluded.op, pid = excluded.pid, host = excluded.host, "user" = excluded."user", since = excluded.since, backend_pid = excluded.backend_pid`),
		oldHolder:   q(`SELECT op, pid, host, "user", since FROM {{s}}.locks WHERE stack = $1`),
		dropHolder:  q(`DELETE FROM {{s}}.locks WHERE stack = $1 AND backend_pid = pg_backend_pid()`),
		lastLineage: q(`SELECT lineage FROM {{s}}.journal WHERE stack = $1 AND lineage <> '' ORDER BY seq DESC LIMIT 1`),

		// The fence of a Commit: the stack's row is updated (and so
		// row-locked until the transaction ends); when the lock epoch is no
		// longer this Writer's, its lock connection no longer holds the
		// advisory lock, or the serial is not the one it last wrote, the
		// new serial is NULL, which the column refuses (23502): the error
		// aborts the whole batch, sent as one implicit transaction, so a
		// Commit is one round trip and a fenced-off one writes nothing.
		fenceCommit: q(`UPDATE {{s}}.stacks SET serial = CASE WHEN lock_epoch = $2 AND serial = $7 AND moved_to IS NULL AND ` + held("$8", "$9", "$10") + `
	THEN $3::bigint END, journal_seq = $4, lineage = $5, meta = coalesce($6, meta), updated = now()
	WHERE stack = $1`),
		fence: q(`UPDATE {{s}}.stacks SET updated = now()
	WHERE stack = $1 AND lock_epoch = $2 AND moved_to IS NULL AND ` + held("$3", "$4", "$5")),

		insertJournal: q(`INSERT INTO {{s}}.journal (stack, seq, op, kind, lineage, body)
	SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::bytea[])`),
		upsertResources: q(`INSERT INTO {{s}}.resources (stack, name, body) SELECT $1, * FROM unnest($2::text[], $3::bytea[])
	ON CONFLICT (stack, name) DO UPDATE SET body = excluded.body`),
		deleteResources: q(`DELETE FROM {{s}}.resources WHERE stack = $1 AND name = ANY($2::text[])`),

		putRevision: q(`INSERT INTO {{s}}.revisions (stack, n, body) VALUES ($1, $2, $3)
	ON CONFLICT (stack, n) DO UPDATE SET body = excluded.body`),
		deleteRevision: q(`DELETE FROM {{s}}.revisions WHERE stack = $1 AND n = $2`),

		backupExists:       q(`SELECT count(*) FROM {{s}}.backups WHERE stack = $1 AND name = $2`),
		nextBackupSeq:      q(`SELECT coalesce(max(seq), 0) + 1 FROM {{s}}.backups WHERE stack = $1`),
		insertBackup:       q(`INSERT INTO {{s}}.backups (stack, name, seq, taken, serial, lineage, body) VALUES ($1, $2, $3, $4, $5, $6, $7)`),
		newestBackupSerial: q(`SELECT serial FROM {{s}}.backups WHERE stack = $1 ORDER BY seq DESC LIMIT 1`),
		dropBackup:         q(`DELETE FROM {{s}}.backups WHERE stack = $1 AND name = $2`),
		replaceBackup:      q(`UPDATE {{s}}.backups SET body = $3 WHERE stack = $1 AND name = $2`),
		pruneBackups: q(`DELETE FROM {{s}}.backups WHERE stack = $1 AND name IN
	(SELECT name FROM {{s}}.backups WHERE stack = $1 ORDER BY seq DESC OFFSET $2)`),

		journalOps: q(`SELECT op, min(seq), bool_or(kind = 'summary') FROM {{s}}.journal WHERE stack = $1 GROUP BY op ORDER BY min(seq)`),
		journalOf:  q(`SELECT seq, op, body FROM {{s}}.journal WHERE stack = $1 AND op = ANY($2::text[]) ORDER BY seq`),
		deleteOps:  q(`DELETE FROM {{s}}.journal WHERE stack = $1 AND op = ANY($2::text[])`),

		readSerial: q(`SELECT serial, journal_seq FROM {{s}}.stacks WHERE stack = $1`),
		markMoved:  q(`UPDATE {{s}}.stacks SET moved_to = $2, updated = now() WHERE stack = $1`),
	}
}
