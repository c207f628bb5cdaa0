package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/pgstore/pgtest"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/storagetest"
)

// The storage conformance suite, on PostgreSQL: each home is a URL with a
// schema of its own.
func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Factory{
		New: func(t *testing.T) string { return pgtest.URL(t) },
		Open: func(ctx context.Context, home string, o storage.Options) (storage.Backend, error) {
			return pgstore.Open(ctx, home, o)
		},
		// What a person copying a state over another would do: the stack's
		// row and its resources, from one schema to the other.
		CopyState: func(t *testing.T, from, to string) {
			ctx := context.Background()
			conn := rawConn(t, from)
			f, d := pgx.Identifier{schemaOf(t, from)}.Sanitize(), pgx.Identifier{schemaOf(t, to)}.Sanitize()
			for _, q := range []string{
				`DELETE FROM ` + d + `.resources WHERE stack = $1`,
				`UPDATE ` + d + `.stacks t SET lineage = f.lineage, serial = f.serial, meta = f.meta FROM ` + f + `.stacks f WHERE t.stack = $1 AND f.stack = $1`,
				`INSERT INTO ` + d + `.resources SELECT * FROM ` + f + `.resources WHERE stack = $1`,
			} {
				if _, err := conn.Exec(ctx, q, storagetest.Stack); err != nil {
					t.Fatal(err)
				}
			}
		},
		Tamper: func(t *testing.T, home, old, new string) {
			ctx := context.Background()
			conn := rawConn(t, home)
			s := pgx.Identifier{schemaOf(t, home)}.Sanitize()
			for _, q := range []string{
				`UPDATE ` + s + `.resources SET body = convert_to(replace(convert_from(body, 'UTF8'), $1, $2), 'UTF8')`,
				`UPDATE ` + s + `.stacks SET meta = convert_to(replace(convert_from(meta, 'UTF8'), $1, $2), 'UTF8') WHERE meta IS NOT NULL`,
			} {
				if _, err := conn.Exec(ctx, q, old, new); err != nil {
					t.Fatal(err)
				}
			}
		},
		Raw: func(t *testing.T, home string) []byte {
			ctx := context.Background()
			conn := rawConn(t, home)
			s := pgx.Identifier{schemaOf(t, home)}.Sanitize()
			var all []byte
			for _, table := range []string{"stacks", "resources", "journal", "revisions", "backups", "locks"} {
				rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT t::text FROM %s.%s t`, s, table))
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var text string
					if err := rows.Scan(&text); err != nil {
						t.Fatal(err)
					}
					all = append(all, text...)
				}
				rows.Close()
				// bytea shows as hex in text: the bodies, decoded.
				col := "body"
				if table == "stacks" {
					col = "coalesce(meta, '')"
				} else if table == "locks" {
					continue
				}
				rows, err = conn.Query(ctx, fmt.Sprintf(`SELECT %s FROM %s.%s`, col, s, table))
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var b []byte
					if err := rows.Scan(&b); err != nil {
						t.Fatal(err)
					}
					all = append(all, b...)
				}
				rows.Close()
			}
			return all
		},
		// A cut connection: the server ends the lock's session (and waits
		// until it has ended, so the lock is gone when Steal returns).
		Steal: func(t *testing.T, home string) {
			ctx := context.Background()
			conn := rawConn(t, home)
			var ok bool
			err := conn.QueryRow(ctx, `SELECT pg_terminate_backend(backend_pid, 10000) FROM `+
				pgx.Identifier{schemaOf(t, home)}.Sanitize()+`.locks WHERE stack = $1`, storagetest.Stack).Scan(&ok)
			if err != nil || !ok {
				t.Fatalf("terminate the lock's session: %v %v", ok, err)
			}
		},
	})
}
