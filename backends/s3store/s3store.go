package s3store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
)

// DefaultLease is how long a lock lives without a renewal.
const DefaultLease = 60 * time.Second

// minLease is the shortest lease a URL may ask for.
const minLease = 3 * time.Second

// fetchers is how many WAL objects Load fetches at once.
const fetchers = 16

// Object names under a stack's prefix.
const (
	identityKey = "stack.json"
	lockKey     = "lock.json"
	snapshotKey = "snapshot.json"
	walDir      = "wal/"
	revisionDir = "revisions/"
	backupDir   = "backups/"
)

// kindLock is the journal record kind of a lock taken over.
const kindLock = "lock"

// format is the version of the objects this package writes. Version 2:
// every object the state is read from (stack.json, snapshot.json, the WAL,
// revisions, backups) is a checksummed record (storage.Enclose), checked on
// every read. A stack whose stack.json has no checksum was written by an
// older bulwark: its objects are read without one, and its next Lock
// rewrites them with theirs (writer.upgrade).
const format = 2

// Backend is one stack's home in an S3 bucket: the shared remote.Backend
// over this package's client (its reads and its lock). It is safe for
// concurrent use.
type Backend struct {
	*remote.Backend
	c *client
}

// client is what is S3's: the objects read in the shape they are stored
// (remote.Source: identity, snapshot and WAL), and the lease whose writer
// is a remote.Client.
type client struct {
	s3     *s3.Client
	bucket string
	prefix string // the stack's: PREFIX/STACK/
	loc    string
	lease  time.Duration
	opts   storage.Options
	now    func() time.Time
}

var (
	_ storage.Backend = (*Backend)(nil)
	_ remote.Source   = (*client)(nil)
)

// Settings are what a URL says, beyond the bucket and the prefix.
type Settings struct {
	Region   string
	Endpoint string
	Profile  string
	Lease    time.Duration
}

// ParseURL splits an s3:// URL into bucket, prefix and settings. Its
// errors never quote a parameter's value.
func ParseURL(raw string) (bucket, prefix string, s Settings, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", s, errors.New("s3 backend: the URL does not parse (want s3://BUCKET/PREFIX?region=…)")
	}
	if u.Scheme != "s3" {
		return "", "", s, fmt.Errorf("s3 backend: URL scheme %q, want s3://", u.Scheme)
	}
	if u.User != nil {
		return "", "", s, errors.New("s3 backend: the URL carries credentials: bulwark takes them only from the AWS SDK's standard chain (AWS_PROFILE, AWS_ACCESS_KEY_ID, SSO, roles)")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "", "", s, errors.New("s3 backend: the URL has a fragment (#…): remove it (want s3://BUCKET/PREFIX?region=…)")
	}
	bucket = u.Host
	if bucket == "" {
		return "", "", s, errors.New("s3 backend: the URL names no bucket (want s3://BUCKET/PREFIX)")
	}
	prefix = strings.Trim(u.Path, "/")
	s.Lease = DefaultLease
	for k, vs := range u.Query() {
		v := ""
		if len(vs) > 0 {
			v = vs[len(vs)-1]
		}
		switch k {
		case "region":
			s.Region = v
		case "endpoint":
			e, perr := url.Parse(v)
			if perr != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil {
				return "", "", s, errors.New("s3 backend: endpoint must be an http:// or https:// URL without credentials")
			}
			s.Endpoint = v
		case "profile":
			s.Profile = v
		case "lease":
			d, perr := time.ParseDuration(v)
			if perr != nil || d < minLease {
				return "", "", s, fmt.Errorf("s3 backend: lease must be a duration of at least %s (like 60s)", minLease)
			}
			s.Lease = d
		default:
			return "", "", s, fmt.Errorf("s3 backend: unknown URL parameter %q (known: region, endpoint, profile, lease)", k)
		}
	}
	return bucket, prefix, s, nil
}

// Open opens the stack opts.Stack under the bucket and prefix rawURL names
// (see the package doc). It checks the bucket can be reached; nothing about
// the stack is read or written yet.
func Open(ctx context.Context, rawURL string, opts storage.Options) (*Backend, error) {
	if opts.Stack == "" {
		return nil, errors.New("s3 backend: no stack name")
	}
	bucket, prefix, s, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	client, err := newClient(ctx, s)
	if err != nil {
		return nil, err
	}
	// The location is the URL as the user gave it (ParseURL refused
	// anything secret in it): what messages print is what they typed, not
	// a re-encoding of it (endpoint=http%3A%2F%2F…).
	return New(client, bucket, prefix, rawURL, s.Lease, opts)
}

// Clients shares one S3 client per region, endpoint and profile among the
// backends it opens and the listings it makes, for a process that opens
// many (bulwark ui: every page opens the backend of each stack it shows).
// Open makes a client each time: it loads the AWS configuration, resolves
// the credentials and dials S3 afresh (against AWS, a TLS handshake per
// open); a shared client keeps its connections and its credentials (the
// SDK refreshes them before they expire). Every read still goes to S3.
// Safe for concurrent use.
type Clients struct {
	mu      sync.Mutex
	clients map[clientKey]*s3.Client
}

// clientKey is what a client depends on of a URL's settings.
type clientKey struct{ region, endpoint, profile string }

// NewClients returns an empty Clients.
func NewClients() *Clients { return &Clients{clients: map[clientKey]*s3.Client{}} }

// client is c's client for s, made on first use.
func (c *Clients) client(ctx context.Context, s Settings) (*s3.Client, error) {
	k := clientKey{s.Region, s.Endpoint, s.Profile}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[k]; ok {
		return cl, nil
	}
	cl, err := newClient(ctx, s)
	if err != nil {
		return nil, err
	}
	c.clients[k] = cl
	return cl, nil
}

// Open is s3store.Open with c's client for the URL's settings.
func (c *Clients) Open(ctx context.Context, rawURL string, opts storage.Options) (*Backend, error) {
	if opts.Stack == "" {
		return nil, errors.New("s3 backend: no stack name")
	}
	client, bucket, prefix, s, err := c.forURL(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return New(client, bucket, prefix, rawURL, s.Lease, opts)
}

// Stacks is s3store.Stacks with c's client for the URL's settings.
func (c *Clients) Stacks(ctx context.Context, rawURL string) ([]string, error) {
	client, bucket, prefix, s, err := c.forURL(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return stacks(ctx, client, bucket, prefix, s, rawURL)
}

// forURL is c's client for rawURL's settings, and what ParseURL returns.
func (c *Clients) forURL(ctx context.Context, rawURL string) (*s3.Client, string, string, Settings, error) {
	bucket, prefix, s, err := ParseURL(rawURL)
	if err != nil {
		return nil, "", "", s, err
	}
	client, err := c.client(ctx, s)
	return client, bucket, prefix, s, err
}

// newClient makes the S3 client a URL's settings ask for: the SDK's
// standard chain for credentials, path-style addressing on an endpoint.
func newClient(ctx context.Context, s Settings) (*s3.Client, error) {
	var lo []func(*config.LoadOptions) error
	if s.Region != "" {
		lo = append(lo, config.WithRegion(s.Region))
	}
	if s.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(s.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("s3 backend: load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("s3 backend: no AWS region: add ?region=… to the URL, or set AWS_REGION")
	}
	// The credentials are resolved now (the SDK caches them; its first
	// request would resolve them anyway), so that none found is said as
	// such, naming every source the chain tried and how to give one, where
	// the SDK's own error names only the last it tried (EC2 IMDS).
	if cfg.Credentials != nil {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			return nil, noCredentials(s, err)
		}
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if s.Endpoint != "" {
			o.BaseEndpoint = aws.String(s.Endpoint)
		}
		if o.BaseEndpoint != nil {
			o.UsePathStyle = true // an S3-compatible server or an emulator
		}
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return client, nil
}

// Stacks lists the stacks under the bucket and prefix rawURL names, for
// the commands that take no spec (doctor, ack), as pgstore.Stacks does for
// a database: each folder of the prefix that holds a stack.json of the
// stack it is named after. A stack moved elsewhere (state migrate) is left
// out. Nothing is written.
func Stacks(ctx context.Context, rawURL string) ([]string, error) {
	bucket, prefix, s, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	client, err := newClient(ctx, s)
	if err != nil {
		return nil, err
	}
	return stacks(ctx, client, bucket, prefix, s, rawURL)
}

// stacks is Stacks's listing, through client; loc is the URL as given.
func stacks(ctx context.Context, client *s3.Client, bucket, prefix string, s Settings, loc string) ([]string, error) {
	under := ""
	if prefix != "" {
		under = prefix + "/"
	}
	var names []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(under), Delimiter: aws.String("/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if apiCode(err) == "NoSuchBucket" {
				err = fmt.Errorf("bucket %s does not exist (%s): %w", bucket, noBucketHint, err)
			}
			return nil, fmt.Errorf("s3 backend %s: list stacks: %w", loc, err)
		}
		for _, cp := range page.CommonPrefixes {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), under), "/"))
		}
	}
	var out []string
	for _, name := range names {
		if name == "" {
			continue
		}
		b, err := New(client, bucket, prefix, loc, s.Lease, storage.Options{Stack: name})
		if err != nil {
			return nil, err
		}
		id, _, _, err := b.c.readIdentity(ctx)
		if errors.Is(err, storage.ErrIntegrity) {
			// Listed: what reads it (doctor) says what is wrong with it.
			out = append(out, name)
			continue
		}
		if err != nil {
			return nil, err
		}
		if id == nil || id.Stack != name || id.MovedTo != "" {
			continue // not a stack of bulwark's, or one moved away
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// New is Open with a client of the caller's (tests, a caller with its own
// SDK configuration).
func New(s3c *s3.Client, bucket, prefix, location string, lease time.Duration, opts storage.Options) (*Backend, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	p := opts.Stack + "/"
	if prefix != "" {
		p = prefix + "/" + p
	}
	c := &client{s3: s3c, bucket: bucket, prefix: p, loc: location, lease: lease, opts: opts, now: now}
	return &Backend{Backend: remote.NewBackend(c, opts), c: c}, nil
}

// noCredentials says that the SDK's credential chain found none: which
// sources it tried, in its order, and how to give one.
func noCredentials(s Settings, err error) error {
	profile := s.Profile
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	return fmt.Errorf("s3 backend: no AWS credentials found; the AWS SDK's standard chain tried, in order: "+
		"the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), "+
		"the shared files (~/.aws/credentials and ~/.aws/config, or AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE; profile %q) with their SSO, credential_process and role settings, "+
		"web identity (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN), "+
		"the container role (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI) "+
		"and the EC2 instance role (IMDS); "+
		"give one: export AWS_PROFILE=NAME (after `aws configure` or `aws sso login`) or &profile=NAME in the URL, or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the last source's answer: %w)", profile, err)
}

// Location is the URL the backend was opened with.
func (b *client) Location() string { return b.loc }

// Wrap names the backend in err (remote.Source). A state that does not
// open is said as this backend always said it ("load", where pgstore says
// "load state").
func (b *client) Wrap(what string, err error) error {
	if what == "load state" {
		what = "load"
	}
	return b.wrap(what, err)
}

// Close releases nothing: the SDK's client holds idle connections only.
func (b *client) Close() error { return nil }

func (b *client) key(name string) string { return b.prefix + name }

func walKey(seq int64) string { return walDir + fmt.Sprintf("%020d", seq) }

func (b *client) wrap(what string, err error) error {
	return fmt.Errorf("s3 backend %s: %s: %w", b.loc, what, err)
}

// apiCode is an S3 error's code ("" for none), branched on rather than Go
// types: several S3 errors come back untyped.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// lostRace reports whether a conditional write's error says another writer
// got there first: 412 (precondition failed), 409 (a concurrent
// conditional write, as AWS documents) and 404 (If-Match on a key that is
// gone: real S3 answers that where gofakes3 answers 412).
func lostRace(err error) bool {
	switch apiCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "NotFound", "412", "409":
		return true
	}
	return false
}

func notFound(err error) bool {
	switch apiCode(err) {
	case "NoSuchKey", "NotFound", "404":
		return true
	}
	return false
}

// object is what a GET returned.
type object struct {
	body []byte
	etag string
	size int64
	meta map[string]string
}

// get reads an object; nil, nil when there is none.
func (b *client) get(ctx context.Context, name string) (*object, error) {
	out, err := b.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.key(name))})
	if err != nil {
		if apiCode(err) == "NoSuchBucket" {
			return nil, b.wrap("read "+name, b.noBucket(err))
		}
		if notFound(err) {
			return nil, nil
		}
		return nil, b.wrap("read "+name, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, b.wrap("read "+name, err)
	}
	return &object{body: body, etag: aws.ToString(out.ETag), size: int64(len(body)), meta: out.Metadata}, nil
}

// restoreHint is where good copies of a stack's objects are.
const restoreHint = "an earlier version of the object (bucket versioning), or the backups that backend keeps for this stack (bulwark doctor lists them)"

// at names object name of the stack for an integrity error.
func (b *client) at(name string) storage.Where {
	return storage.Where{Backend: b.loc, Stack: b.opts.Stack, Record: fmt.Sprintf("object %s (bucket %s)", b.key(name), b.bucket), Restore: restoreHint}
}

// record reads object name, a checksummed record, and checks it: its body
// is the record. nil, nil when there is none. With legacy (a stack an
// older bulwark wrote), a record without a checksum is taken as it is.
func (b *client) record(ctx context.Context, name string, legacy bool) (*object, error) {
	o, err := b.get(ctx, name)
	if err != nil || o == nil {
		return nil, err
	}
	if legacy {
		o.body, _, err = storage.DiscloseLegacy(o.body, b.at(name))
	} else {
		o.body, err = storage.Disclose(o.body, b.at(name))
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// putRecord writes v as object name, a checksummed record (storage.Enclose),
// under c; it returns the new ETag and the bytes stored.
func (b *client) putRecord(ctx context.Context, name string, v any, c cond, meta map[string]string) (string, []byte, error) {
	body, err := storage.MarshalEnclosed(v)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", name, err)
	}
	tag, err := b.put(ctx, name, body, c, meta)
	return tag, body, err
}

// readIdentity reads stack.json (nil when there is none), and whether it
// is an older bulwark's, without a checksum (legacy: the stack's other
// objects may have none either).
func (b *client) readIdentity(ctx context.Context) (id *identity, etag string, legacy bool, err error) {
	o, err := b.get(ctx, identityKey)
	if err != nil || o == nil {
		return nil, "", false, err
	}
	rec, legacy, err := storage.DiscloseLegacy(o.body, b.at(identityKey))
	if err != nil {
		return nil, "", false, err
	}
	var v identity
	if err := json.Unmarshal(rec, &v); err != nil {
		return nil, "", false, b.wrap("load", fmt.Errorf("%s does not parse: %v: %w", b.key(identityKey), err, state.ErrCorrupt))
	}
	return &v, o.etag, legacy, nil
}

// noBucketHint says what to do about a bucket that does not exist.
const noBucketHint = "bulwark does not create it: create it, with versioning on, as for Terraform's s3 backend, or fix the bucket in the URL"

// noBucket is the error of a call that found no bucket, read or write.
func (b *client) noBucket(err error) error {
	return fmt.Errorf("bucket %s does not exist (%s): %w", b.bucket, noBucketHint, err)
}

// cond is a PUT's condition.
type cond struct {
	ifNoneMatch bool   // create only
	ifMatch     string // replace only this version
}

// put writes an object, under cond; it returns the new ETag.
func (b *client) put(ctx context.Context, name string, body []byte, c cond, meta map[string]string) (string, error) {
	in := &s3.PutObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.key(name)),
		Body: bytes.NewReader(body), ContentType: aws.String("application/json"), Metadata: meta}
	if c.ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if c.ifMatch != "" {
		in.IfMatch = aws.String(c.ifMatch)
	}
	out, err := b.s3.PutObject(ctx, in)
	if err != nil {
		if apiCode(err) == "NoSuchBucket" {
			// Said as the read path says it (the caller names the write).
			return "", b.noBucket(err)
		}
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// list returns the keys (relative to the stack's prefix) under dir, after
// startAfter when set, in order.
func (b *client) list(ctx context.Context, dir, startAfter string) ([]types.Object, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(b.key(dir))}
	if startAfter != "" {
		in.StartAfter = aws.String(b.key(startAfter))
	}
	var out []types.Object
	p := s3.NewListObjectsV2Paginator(b.s3, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if apiCode(err) == "NoSuchBucket" {
				err = b.noBucket(err)
			}
			return nil, b.wrap("list "+dir, err)
		}
		for _, o := range page.Contents {
			o.Key = aws.String(strings.TrimPrefix(aws.ToString(o.Key), b.prefix))
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return aws.ToString(out[i].Key) < aws.ToString(out[j].Key) })
	return out, nil
}

// deleteKeys deletes objects, up to 1000 a call.
func (b *client) deleteKeys(ctx context.Context, names []string) error {
	for len(names) > 0 {
		n := min(len(names), 1000)
		ids := make([]types.ObjectIdentifier, 0, n)
		for _, k := range names[:n] {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(b.key(k))})
		}
		out, err := b.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b.bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return b.wrap("delete", err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return b.wrap("delete", fmt.Errorf("%d object(s) not deleted, first %s: %s", len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Code)))
		}
		names = names[n:]
	}
	return nil
}

// identity is stack.json.
type identity struct {
	Format  int       `json:"format"`
	Stack   string    `json:"stack"`
	Lineage string    `json:"lineage"`
	Created time.Time `json:"created"`
	// MovedTo is where `bulwark state migrate` moved the stack (a URL
	// without credentials); Load and Lock then refuse with ErrMoved.
	MovedTo string `json:"moved_to,omitempty"`
}

// snapshot is snapshot.json: the state (sealed) as of WAL object Seq, and
// the journal up to it.
type snapshot struct {
	Format  int              `json:"format"`
	Stack   string           `json:"stack"`
	Lineage string           `json:"lineage"`
	Seq     int64            `json:"seq"`
	State   *state.State     `json:"state"`
	Journal []journal.Record `json:"journal,omitempty"`
	// Fences are the WAL objects that hold a takeover's record: the
	// displaced holder's next write is to that key, and finds it taken.
	// A Checkpoint never deletes them (one small object per takeover), so
	// a holder displaced without knowing it cannot write there after the
	// WAL around them was folded into a snapshot.
	Fences []int64 `json:"fences,omitempty"`
}

// segment is one WAL object: the Commits of one durable write, in order.
type segment struct {
	Format  int     `json:"format"`
	Seq     int64   `json:"seq"`
	Lineage string  `json:"lineage"`
	Token   string  `json:"token"` // the writer's (its lock's token)
	Entries []entry `json:"entries"`
}

// entry is one Commit in a segment: its records and its change (sealed).
type entry struct {
	Records []journal.Record  `json:"records,omitempty"`
	Put     []*state.Resource `json:"put,omitempty"`
	Delete  []string          `json:"delete,omitempty"`
	Meta    *storage.Meta     `json:"meta,omitempty"`
}

func (e entry) changes() bool { return len(e.Put) > 0 || len(e.Delete) > 0 || e.Meta != nil }

// fences reports whether sg holds a takeover's record (snapshot.Fences).
func (sg *segment) fences() bool {
	for _, e := range sg.Entries {
		for _, r := range e.Records {
			if r.Kind == kindLock {
				return true
			}
		}
	}
	return false
}

// loaded is a stack as stored: its state (opened), journal, and where the
// WAL is.
type loaded struct {
	id       *identity // nil: nothing was ever written
	idETag   string
	st       *state.State
	recs     []journal.Record
	seq      int64  // the last WAL object applied
	snapSeq  int64  // the snapshot's
	snapETag string // "" when there is no snapshot
	snapSize int64
	walBytes int64
	walCount int
	fences   []int64 // see snapshot.Fences
	legacy   bool    // an older bulwark's stack: objects without checksums
}

// load reads the stack: identity, snapshot, then the WAL after it. A gap
// (a checkpoint deleted segments between the snapshot read and the
// listing) makes it start again.
func (b *client) load(ctx context.Context) (*loaded, error) {
	var last error
	for range 5 {
		l, err := b.loadOnce(ctx)
		if !errors.Is(err, errGap) {
			return l, err
		}
		last = err
	}
	return nil, b.wrap("load", last)
}

// loadOpen is load with the state opened and its levels checked: the
// state a writer starts from (remote.Backend does the same for Load).
func (b *client) loadOpen(ctx context.Context) (*loaded, error) {
	l, err := b.load(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := state.OpenState(l.st, b.opts.Sealing); err != nil {
		return nil, b.wrap("load", err)
	}
	if err := state.CheckLevels(b.key(snapshotKey), l.st); err != nil {
		return nil, err
	}
	return l, nil
}

var errGap = errors.New("the write-ahead log changed while it was read")

func (b *client) loadOnce(ctx context.Context) (*loaded, error) {
	l := &loaded{st: &state.State{Version: state.Version, Stack: b.opts.Stack, Resources: map[string]*state.Resource{}}}
	idp, idTag, legacy, err := b.readIdentity(ctx)
	if err != nil {
		return nil, err
	}
	l.legacy = legacy
	if idp != nil {
		id := *idp
		if id.Stack != b.opts.Stack {
			return nil, b.wrap("load", fmt.Errorf("%s names stack %q, not %q: %w", b.key(identityKey), id.Stack, b.opts.Stack, storage.ErrLineage))
		}
		if err := storage.CheckMoved(b.opts, b.loc, id.MovedTo, b.key(identityKey)+" (the objects here stay for reference)"); err != nil {
			return nil, err
		}
		l.idETag = idTag
		l.id = &id
		l.st.Lineage = id.Lineage
	}
	so, err := b.record(ctx, snapshotKey, legacy)
	if err != nil {
		return nil, err
	}
	if so != nil {
		var sn snapshot
		if err := json.Unmarshal(so.body, &sn); err != nil || sn.State == nil {
			return nil, b.wrap("load", fmt.Errorf("%s does not parse (%v): %w; restore an earlier version of it (bucket versioning) or a backup under %s", b.key(snapshotKey), err, state.ErrCorrupt, b.key(backupDir)))
		}
		if sn.Stack != b.opts.Stack || l.id == nil || sn.Lineage != l.id.Lineage {
			return nil, b.wrap("load", fmt.Errorf("%s is stack %q of lineage %s, not this stack's (%s): a foreign state was put in its place: %w", b.key(snapshotKey), sn.Stack, sn.Lineage, lineageOf(l.id), storage.ErrLineage))
		}
		if sn.State.Resources == nil {
			sn.State.Resources = map[string]*state.Resource{}
		}
		l.st, l.recs, l.seq, l.snapSeq, l.snapETag, l.snapSize = sn.State, sn.Journal, sn.Seq, sn.Seq, so.etag, so.size
		l.fences = sn.Fences
		l.st.Stack, l.st.Lineage = b.opts.Stack, sn.Lineage
	}
	objs, err := b.list(ctx, walDir, walKey(l.seq))
	if err != nil {
		return nil, err
	}
	segs, err := b.fetch(ctx, objs, l.seq, legacy)
	if err != nil {
		return nil, err
	}
	for _, sg := range segs {
		if l.id == nil || sg.Lineage != l.id.Lineage {
			return nil, b.wrap("load", fmt.Errorf("%s is of lineage %s, not this stack's (%s): %w", b.key(walKey(sg.Seq)), sg.Lineage, lineageOf(l.id), storage.ErrLineage))
		}
		if sg.fences() {
			l.fences = append(l.fences, sg.Seq)
		}
		for _, e := range sg.Entries {
			l.recs = append(l.recs, e.Records...)
			if e.changes() {
				storage.Change{Put: e.Put, Delete: e.Delete, Meta: e.Meta}.Apply(l.st)
			}
		}
		l.seq = sg.Seq
	}
	for _, o := range objs {
		l.walBytes += aws.ToInt64(o.Size)
	}
	l.walCount = len(segs)
	return l, nil
}

func lineageOf(id *identity) string {
	if id == nil {
		return "none yet"
	}
	return id.Lineage
}

// fetch gets the WAL objects listed, in parallel, and checks they follow
// after one another from after.
func (b *client) fetch(ctx context.Context, objs []types.Object, after int64, legacy bool) ([]*segment, error) {
	segs := make([]*segment, len(objs))
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchers)
	for i, o := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			name := aws.ToString(o.Key)
			ob, err := b.record(ctx, name, legacy)
			switch {
			case err != nil:
				errs[i] = err
			case ob == nil:
				errs[i] = errGap // deleted by a checkpoint since the listing
			default:
				var sg segment
				if err := json.Unmarshal(ob.body, &sg); err != nil {
					errs[i] = b.wrap("load", fmt.Errorf("%s does not parse: %v: %w", b.key(name), err, state.ErrCorrupt))
					return
				}
				segs[i] = &sg
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, err
		}
		if want := after + int64(i) + 1; segs[i].Seq != want || aws.ToString(objs[i].Key) != walKey(want) {
			if i == 0 {
				return nil, errGap
			}
			return nil, b.wrap("load", fmt.Errorf("write-ahead log object %s holds seq %d where %d was expected: %w", aws.ToString(objs[i].Key), segs[i].Seq, want, state.ErrCorrupt))
		}
	}
	return segs, nil
}

// State returns the state as of the last acknowledged Commit, as stored
// (sealed): the snapshot and the WAL after it, each object's checksum,
// order and lineage checked.
func (b *client) State(ctx context.Context) (*state.State, string, error) {
	l, err := b.load(ctx)
	if err != nil {
		return nil, "", err
	}
	return l.st, b.key(snapshotKey), nil
}

// Journal returns the journal's records, oldest first (a takeover's record
// of kind "lock" among them; records of kind state, which only the file
// backend writes, left out). Nothing stored is ever unparsable here: a WAL
// object that does not parse fails the whole read, naming it.
func (b *client) Journal(ctx context.Context) ([]journal.Record, []*journal.CorruptError, error) {
	l, err := b.loadOpen(ctx)
	if err != nil {
		return nil, nil, err
	}
	return slices.DeleteFunc(l.recs, func(r journal.Record) bool { return r.Kind == journal.KindState }), nil, nil
}

// Holder reads lock.json: who holds the lock (nil: nobody, or a lock its
// holder released). A holder whose lease ran out is returned too, with its
// Until in the past.
func (b *client) Holder(ctx context.Context) (*storage.Holder, error) {
	lr, _, err := b.readLock(ctx)
	if err != nil || lr == nil || lr.Released {
		return nil, err
	}
	h := lr.Holder
	return &h, nil
}

// Inspect is Holder that tells a live holder from a stale one (its
// process gone from this machine, or its lease run out), which the next
// Lock takes over at once: what doctor says of the lock.
func (b *Backend) Inspect(ctx context.Context) (live, stale *storage.Holder, err error) {
	return b.c.inspect(ctx)
}

func (b *client) inspect(ctx context.Context) (live, stale *storage.Holder, err error) {
	lr, _, err := b.readLock(ctx)
	if err != nil || lr == nil || lr.Released {
		return nil, nil, err
	}
	h := lr.Holder
	if b.stale(lr) != "" {
		return nil, &h, nil
	}
	return &h, nil, nil
}

// revision is a revisions/N object.
type revision struct {
	Body storage.RevisionBody `json:"body"`
}

// Revision returns revision n's body as stored (sealed).
func (b *client) Revision(ctx context.Context, n int) (*storage.RevisionBody, error) {
	_, _, legacy, err := b.readIdentity(ctx)
	if err != nil {
		return nil, err
	}
	o, err := b.record(ctx, revisionKey(n), legacy)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("revision %d of %s: %w", n, b.loc, storage.ErrNotFound)
	}
	var r revision
	if err := json.Unmarshal(o.body, &r); err != nil {
		return nil, b.wrap(fmt.Sprintf("revision %d", n), fmt.Errorf("does not parse: %v: %w", err, state.ErrCorrupt))
	}
	return &r.Body, nil
}

func revisionKey(n int) string { return revisionDir + fmt.Sprintf("%010d", n) }

// backup is a backups/NAME object.
type backup struct {
	Format int          `json:"format"`
	Name   string       `json:"name"`
	Time   time.Time    `json:"time"`
	State  *state.State `json:"state"`
}

// Backups lists the backups, oldest first.
func (b *client) Backups(ctx context.Context) ([]storage.BackupInfo, error) {
	objs, err := b.list(ctx, backupDir, "")
	if err != nil {
		return nil, err
	}
	var out []storage.BackupInfo
	for _, o := range objs {
		name := strings.TrimPrefix(aws.ToString(o.Key), backupDir)
		h, err := b.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.key(backupDir + name))})
		if notFound(err) {
			continue // pruned meanwhile
		}
		if err != nil {
			return nil, b.wrap("backup "+name, err)
		}
		info := storage.BackupInfo{Name: name, Bytes: aws.ToInt64(o.Size)}
		info.Time, _ = time.Parse(time.RFC3339Nano, h.Metadata["time"])
		info.Serial, _ = strconv.ParseInt(h.Metadata["serial"], 10, 64)
		out = append(out, info)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Backup reads one backup as stored (its object's checksum checked), with
// the stack's lineage now (stack.json's).
func (b *client) Backup(ctx context.Context, name string) (*remote.StoredBackup, error) {
	if !validName(name) {
		return nil, fmt.Errorf("backup %q of %s: %w", name, b.loc, storage.ErrNotFound)
	}
	id, _, legacy, err := b.readIdentity(ctx)
	if err != nil {
		return nil, err
	}
	o, err := b.record(ctx, backupDir+name, legacy)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("backup %s of %s: %w", name, b.loc, storage.ErrNotFound)
	}
	var bk backup
	if err := json.Unmarshal(o.body, &bk); err != nil || bk.State == nil {
		return nil, b.wrap("backup "+name, fmt.Errorf("does not parse (%v): %w", err, state.ErrCorrupt))
	}
	sb := &remote.StoredBackup{State: bk.State, Where: fmt.Sprintf("%s (object %s, bucket %s)", b.loc, b.key(backupDir+name), b.bucket)}
	if id != nil {
		sb.Lineage = id.Lineage
	}
	return sb, nil
}

// validName: a backup's name is an operation id, never a path.
func validName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/\\") && path.Clean(name) == name && name != "." && name != ".."
}

// Stats are the sizes doctor shows.
func (b *client) Stats(ctx context.Context) (storage.Stats, error) {
	l, err := b.loadOpen(ctx)
	if err != nil {
		return storage.Stats{}, err
	}
	s := storage.Stats{StateBytes: l.snapSize, JournalBytes: l.walBytes, Resources: len(l.st.Resources), Revisions: len(l.st.Revisions)}
	for _, r := range l.recs {
		if r.Kind != journal.KindState {
			s.JournalRecords++
		}
	}
	whole := map[string]bool{}
	for _, r := range l.recs {
		switch r.Kind {
		case journal.KindSummary:
			s.SummarizedOps += max(r.Repeated, 1) // a collapsed line counts its operations
		case journal.KindOp:
			whole[r.Op] = true
		}
	}
	s.WholeOps = len(whole)
	revs, err := b.list(ctx, revisionDir, "")
	if err != nil {
		return s, err
	}
	for _, o := range revs {
		s.RevisionBytes += aws.ToInt64(o.Size)
	}
	bks, err := b.list(ctx, backupDir, "")
	if err != nil {
		return s, err
	}
	s.Backups = len(bks)
	for _, o := range bks {
		s.BackupBytes += aws.ToInt64(o.Size)
	}
	return s, nil
}
