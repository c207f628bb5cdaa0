// Package backends opens a stack's storage from the URL that names it, for
// cmd/bulwark (`--state URL`, $BULWARK_STATE): file:// (the default, in
// core), postgres:// (pgstore) and s3:// (s3store). Core never imports a
// database or cloud SDK; this module holds the backends that need one, and
// Open is the storage.Opener that cmd/bulwark hands to core.
package backends

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/bulwark-iac/bulwark/backends/pgstore"
	"github.com/bulwark-iac/bulwark/backends/s3store"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

var _ storage.Opener = Open

// Open opens the backend rawURL names:
//
//	file:///PATH                            the state folder PATH (a bare path is one too)
//	postgres://USER@HOST:PORT/DB?sslmode=…  PostgreSQL (also postgresql://; ?schema=NAME)
//	s3://BUCKET/PREFIX?region=…&endpoint=…  S3 or an S3-compatible server
//
// An error never quotes the URL: it may hold a password.
func Open(ctx context.Context, rawURL string, opts storage.Options) (storage.Backend, error) {
	switch Scheme(rawURL) {
	case "", "file":
		return filestore.Open(ctx, rawURL, opts)
	case "postgres", "postgresql":
		return pgstore.Open(ctx, rawURL, opts)
	case "s3":
		return s3store.Open(ctx, rawURL, opts)
	default:
		return nil, fmt.Errorf("--state: unknown backend %q (want file://DIR, postgres://USER@HOST:PORT/DB or s3://BUCKET/PREFIX)", Scheme(rawURL))
	}
}

// Pooled opens backends as Open does, but shares what connects them
// among everything it opens: one connection pool per PostgreSQL database
// (pgstore.Pools) and one S3 client per region, endpoint and profile
// (s3store.Clients), for a process that opens many (bulwark ui, whose
// every page opens the backends of the stacks it shows; an import's
// claims check, which reads every stack). Close closes the pools. The
// file backend opens as Open opens it.
type Pooled struct {
	pg *pgstore.Pools
	s3 *s3store.Clients
}

// NewPooled returns a Pooled with no pool yet.
func NewPooled() *Pooled { return &Pooled{pg: pgstore.NewPools(), s3: s3store.NewClients()} }

// Open is Open, through the shared pools and clients (a storage.Opener).
func (p *Pooled) Open(ctx context.Context, rawURL string, opts storage.Options) (storage.Backend, error) {
	switch Scheme(rawURL) {
	case "postgres", "postgresql":
		return p.pg.Open(ctx, rawURL, opts)
	case "s3":
		return p.s3.Open(ctx, rawURL, opts)
	default:
		return Open(ctx, rawURL, opts)
	}
}

// Stacks is Stacks, through the shared pools and clients.
func (p *Pooled) Stacks(ctx context.Context, rawURL string) ([]string, error) {
	switch Scheme(rawURL) {
	case "postgres", "postgresql":
		return p.pg.Stacks(ctx, rawURL)
	case "s3":
		return p.s3.Stacks(ctx, rawURL)
	default:
		return Stacks(ctx, rawURL)
	}
}

// Close closes the shared pools.
func (p *Pooled) Close() { p.pg.Close() }

// Scheme is rawURL's scheme, lower-cased ("" for a bare path).
func Scheme(rawURL string) string {
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok || strings.ContainsAny(scheme, "/\\") {
		return ""
	}
	return strings.ToLower(scheme)
}

// Remote reports whether rawURL names a backend off this machine (not a
// file:// URL or a bare path).
func Remote(rawURL string) bool {
	s := Scheme(rawURL)
	return s != "" && s != "file"
}

// Redact returns rawURL without its password (in the user info or a
// query parameter), for messages; a URL that does not parse shows as its
// scheme alone.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Scheme(rawURL) + "://…"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	changed := false
	for k := range q {
		if k2 := strings.ToLower(k); strings.Contains(k2, "password") || strings.Contains(k2, "secret") || strings.Contains(k2, "token") {
			q.Del(k)
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// ClaimsLock tries once to take the claims lock (storage.ClaimsLock) of the
// backend rawURL names, for h: the file backend's state folder's .claims,
// PostgreSQL's advisory lock of the schema, S3's lease object under the
// prefix. Held by another, a *storage.LockedError.
func ClaimsLock(ctx context.Context, rawURL string, h storage.Holder) (storage.ClaimsLock, error) {
	switch Scheme(rawURL) {
	case "", "file":
		return filestore.ClaimsAt(rawURL, h)
	case "postgres", "postgresql":
		return pgstore.ClaimsLock(ctx, rawURL, h)
	case "s3":
		return s3store.ClaimsLock(ctx, rawURL, h)
	default:
		return nil, fmt.Errorf("--state: unknown backend %q (want file://DIR, postgres://USER@HOST:PORT/DB or s3://BUCKET/PREFIX)", Scheme(rawURL))
	}
}

// Stacks lists the stacks the backend at rawURL holds, for the commands
// that look through every stack (ack). The file backend's stacks are its
// folders, which core lists itself; a backend that cannot list them says
// so.
func Stacks(ctx context.Context, rawURL string) ([]string, error) {
	switch Scheme(rawURL) {
	case "postgres", "postgresql":
		return pgstore.Stacks(ctx, rawURL)
	case "s3":
		return s3store.Stacks(ctx, rawURL)
	default:
		return nil, fmt.Errorf("--state %s: this backend cannot list its stacks: give the stack's spec to the command instead", Redact(rawURL))
	}
}
