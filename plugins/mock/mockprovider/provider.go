package mockprovider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulwark-iac/bulwark/sdk"
)

// CrashExitCode is the exit status of a process that crash_create stops in
// the middle of a Create.
const CrashExitCode = 3

// Option changes how a provider made by New behaves.
type Option func(*provider)

// WithExit replaces os.Exit as the function crash_create calls, so that an
// in-process test can observe the crash without losing its process. When
// the function returns, Create returns an error diagnostic instead of a
// reply.
func WithExit(exit func(code int)) Option {
	return func(p *provider) { p.exit = exit }
}

// WithSchemaValidation makes a mock with no validation of its own: the
// schema is all there is (its tags check is off), and it says so
// (sdk.SchemaValidator), so the host validates its configs with no call.
func WithSchemaValidation() Option {
	return func(p *provider) { p.schemaOnly = true }
}

// WithClock replaces time.Now as the source of created_at.
func WithClock(now func() time.Time) Option {
	return func(p *provider) { p.now = now }
}

// New returns the mock provider. Serve it with sdk.Serve, or call it
// in-process.
func New(opts ...Option) sdk.Provider {
	p := &provider{exit: os.Exit, now: time.Now, types: map[string]sdk.ResourceType{}}
	for _, rt := range resourceTypes() {
		p.types[rt.Name] = rt
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// provider is the mock. Its calls run side by side, as a cloud's do; what
// they share is kept short:
//
//   - sess, the configuration (faults, latency, quota, world folder), is
//     read without a lock: Configure replaces it whole;
//   - mu guards the world in memory (store, lk): a Read holds it shared,
//     only to look the world up, and skips the stats of the world's files
//     when a refresh began after the Read arrived (fresh, arrivals; see
//     view);
//   - changes are committed in groups (see change): the change whose turn
//     it is to commit takes every change queued by then and makes them
//     under mu and the world folder's flock with one refresh and one append
//     to the log, then the group shares one fsync, made outside every lock
//     but syncMu.
//
// The latency sleep happens outside every lock. A flock on the world folder
// (see worldLock) serialises the changes of processes sharing a world; see
// worldStore for how each keeps its copy in memory up to date.
type provider struct {
	exit func(code int)
	now  func() time.Time
	// types is resourceTypes by name, built once: a call looks its type
	// up here rather than building the whole schema again. Never changed.
	types map[string]sdk.ResourceType
	// schemaOnly: the mock has no validation of its own (no tags check),
	// and says so (sdk.SchemaValidator). Never changed after New.
	schemaOnly bool
	calls      *callLog // WithCallLog's; nil: none. Never changed after New
	holds      *holds   // WithHold's; nil: none. Never changed after New

	sess atomic.Pointer[session] // nil: not configured

	// wmu is held by the change committing a group, and by Configure and
	// Close, so few goroutines ever wait for mu as writers: readers are
	// not queued behind a line of writers.
	wmu sync.Mutex
	// qmu guards queue, the changes waiting to be committed, and
	// committing: a change is committing a group (it will hand the commit
	// to queue's first when it is done).
	qmu        sync.Mutex
	queue      []*pending
	committing bool

	mu    sync.RWMutex
	store *worldStore
	lk    worldLock // the world folder's flock
	// fresh is what arrivals counted when the latest refresh of store
	// began: a view whose ticket is at most fresh arrived before it, so
	// the world in memory is as new as the files were after it arrived.
	fresh    int64
	arrivals atomic.Int64
}

// session is what Configure set: never changed once stored in sess.
type session struct {
	readOnly bool   // the host will only read: write nothing anywhere
	dir      string // the folder the world lives in
	faults   faults
	quota    *bucket // rate_limit's; nil: none
}

// pending is a change queued for the next group commit.
type pending struct {
	fn func(w *world) error
	// wake is closed when the change is made, or when it is handed the
	// commit of the queue (done is then false).
	wake chan struct{}
	// Set by the commit that made it, before wake is closed: done, the
	// change's error and its append's number for syncTo.
	done bool
	err  error
	mine int64
}

var (
	_ sdk.Provider       = (*provider)(nil)
	_ sdk.Closer         = (*provider)(nil)
	_ sdk.BatchReader    = (*provider)(nil)
	_ sdk.BatchValidator = (*provider)(nil)
	_ sdk.BatchCreator   = (*provider)(nil)
)

// arrive is how every call but Configure begins: it is noted in the call
// log, held while a hold file names it (see EnvHold), then slowed by
// latency_ms. An error (ctx ended) fails the call before it does anything.
func (p *provider) arrive(ctx context.Context, call string, n int, name string) error {
	p.calls.note(call, n, name)
	if err := p.holds.wait(ctx, call, name); err != nil {
		return err
	}
	return p.wait(ctx)
}

// wait sleeps for the configured latency, or until ctx is done.
func (p *provider) wait(ctx context.Context) error {
	var d time.Duration
	if s := p.sess.Load(); s != nil {
		d = s.faults.latency
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return ctx.Err()
}

// admit takes n tokens of the write quota (rate_limit) for n mutating
// calls: granted is how many may go (the first ones); refuse(what) is the
// diagnostic each of the others is answered, with the time until the next
// token as its RetryAfter. A throttled call changes nothing.
func (p *provider) admit(n int) (granted int, refuse func(what string) sdk.Diagnostic) {
	var q *bucket
	if s := p.sess.Load(); s != nil {
		q = s.quota
	}
	granted, wait := q.take(time.Now(), n)
	return granted, func(what string) sdk.Diagnostic {
		return sdk.Throttled(wait, "%s: rate exceeded (rate_limit %g a second); retry after %s", what, q.rate, wait)
	}
}

// faults returns the configured faults (none before Configure).
func (p *provider) faults() faults {
	if s := p.sess.Load(); s != nil {
		return s.faults
	}
	return faults{}
}

// view runs fn on the world, up to date as of a moment after the call
// arrived, with mu held shared: fn must only look. The files are stated
// (and what changed read) only when no refresh began since the call
// arrived: of many Reads in flight together, one refreshes for all.
func (p *provider) view(fn func(w *world)) error {
	if p.sess.Load() == nil {
		return errNotConfigured()
	}
	ticket := p.arrivals.Add(1)
	p.mu.RLock()
	if p.store.w != nil && p.fresh >= ticket {
		fn(p.store.w)
		p.mu.RUnlock()
		return nil
	}
	p.mu.RUnlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store.w == nil || p.fresh < ticket {
		if err := p.refreshLocked(); err != nil {
			return err
		}
	}
	fn(p.store.w)
	return nil
}

// refreshLocked brings the world in memory up to date with the files and
// records the arrivals it covers; mu must be held exclusively.
func (p *provider) refreshLocked() error {
	seen := p.arrivals.Load()
	if err := p.store.refresh(); err != nil {
		p.fresh = 0
		return err
	}
	p.fresh = seen
	return nil
}

// change runs fn on the world, up to date, under mu and the world folder's
// lock, and makes what fn changed durable (even when fn also returns an
// error) before it returns. fn records its changes through the world's
// methods (put, remove, the counters).
//
// Changes made at the same time are committed as a group. Each queues its
// fn; when no change is committing, it commits: it takes the whole queue
// (its own fn first) and runs each fn in turn on the world, refreshed once
// under the flock, then appends their records to the log in one write.
// Each fn sees the world as the ones before it left it, as if they had run
// one after the other. It then wakes the group, and hands the commit to
// the first change queued meanwhile, if any. One fsync makes the group
// durable, outside every lock.
func (p *provider) change(fn func(w *world) error) error {
	c := &pending{fn: fn, wake: make(chan struct{})}
	p.qmu.Lock()
	p.queue = append(p.queue, c)
	lead := !p.committing
	p.committing = true
	p.qmu.Unlock()
	if !lead {
		<-c.wake
		lead = !c.done // handed the commit
	}
	if lead {
		p.qmu.Lock()
		group := p.queue
		p.queue = nil
		p.qmu.Unlock()
		p.wmu.Lock()
		p.mu.Lock()
		p.commitLocked(group)
		p.mu.Unlock()
		p.wmu.Unlock()
		p.qmu.Lock()
		if len(p.queue) > 0 {
			close(p.queue[0].wake)
		} else {
			p.committing = false
		}
		p.qmu.Unlock()
		for _, o := range group {
			if o != c {
				close(o.wake)
			}
		}
	}
	if serr := p.store.syncTo(c.mine, p.mu.RLock, p.mu.RUnlock); serr != nil {
		return serr
	}
	return c.err
}

// commitLocked makes the group's changes, in order, as one change of the
// world (wmu and mu held). An error of the world itself (no session, the
// flock, the files) is every change's; fn's own error is its change's.
func (p *provider) commitLocked(group []*pending) {
	mine, err := p.changeLocked(group)
	for _, c := range group {
		c.done, c.mine = true, mine
		if err != nil {
			c.err = err
		}
	}
}

func (p *provider) changeLocked(group []*pending) (int64, error) {
	s := p.sess.Load()
	if s == nil {
		return 0, errNotConfigured()
	}
	if s.readOnly {
		return 0, sdk.Errorf("the mock provider was configured read-only: it changes nothing")
	}
	unlock, err := p.lk.lock(s.dir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := p.refreshLocked(); err != nil {
		return 0, err
	}
	for _, c := range group {
		c.err = c.fn(p.store.w)
	}
	mine, cerr := p.store.commit()
	if cerr != nil {
		p.fresh = 0
		return 0, cerr
	}
	return mine, nil
}

// Close folds the changes this process logged into WorldFile (see
// LogFile). sdk.Serve calls it when the host disconnects.
func (p *provider) Close() error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sess.Load()
	if s == nil || s.readOnly || p.store == nil {
		return nil
	}
	defer p.lk.close()
	unlock, err := p.lk.lock(s.dir)
	if err != nil {
		return err
	}
	defer unlock()
	p.fresh = 0
	return p.store.close()
}

func errDeleteWithoutID(req *sdk.DeleteRequest) error {
	return sdk.Errorf("delete %s %s: the request carries no id; the mock deletes only by id, never by type and name (that may be a resource another stack made)", req.Type, req.Name)
}

func errNotConfigured() error {
	return sdk.Errorf("the mock provider is not configured: call Configure first")
}

// GetSchema returns the six resource types and the provider config schema,
// and declares the IdempotencyKeys capability: Read reports the key each
// resource was created under, and a Create of a taken (type, name) fails
// with a conflict.
func (p *provider) GetSchema(ctx context.Context, _ *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	if err := p.arrive(ctx, "GetSchema", 1, ""); err != nil {
		return nil, err
	}
	return &sdk.GetSchemaResponse{
		ProviderName: Name, ProviderVersion: Version, ResourceTypes: resourceTypes(),
		DataSources:    dataSources(),
		Capabilities:   sdk.Capabilities{IdempotencyKeys: true, DeleteChecksKey: true},
		ProviderConfig: configSchema(),
	}, nil
}

// Configure parses the fault config, adopts the world folder (config world,
// else the data folder) and arms the fail_delete counters. A read-only
// session writes nothing: the world folder is not made, the counters are
// not armed (only Deletes consume them), and every change is refused. It is
// the one call latency_ms does not slow down.
func (p *provider) Configure(_ context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	f, ds := parseConfig(req.Config)
	if ds.HasError() {
		return &sdk.ConfigureResponse{Diagnostics: ds}, nil
	}
	dir, err := worldDir(f.world, req.DataDir, req.ReadOnly)
	if err != nil {
		return nil, err
	}
	sess := &session{readOnly: req.ReadOnly, dir: dir, faults: f}
	if f.rateLimit > 0 {
		sess.quota = newBucket(f.rateLimit, time.Now())
	}
	p.wmu.Lock()
	p.mu.Lock()
	if p.store == nil || p.store.dir != dir {
		if p.store != nil && p.store.logf != nil {
			p.store.logf.Close()
		}
		p.store = &worldStore{dir: dir}
		p.fresh = 0
	}
	p.sess.Store(sess)
	p.mu.Unlock()
	p.wmu.Unlock()
	if req.ReadOnly {
		return &sdk.ConfigureResponse{Diagnostics: ds}, nil
	}
	err = p.change(func(w *world) error { w.armFailDelete(f.failDelete); return nil })
	if err != nil {
		return nil, err
	}
	return &sdk.ConfigureResponse{Diagnostics: ds}, nil
}

// worldDir returns the folder the world lives in: world (absolute; made
// with mode 0700 when missing, unless readOnly) when the config names one,
// else the data folder, which must exist.
func worldDir(world, dataDir string, readOnly bool) (string, error) {
	if world == "" {
		if dataDir == "" {
			return "", sdk.Errorf("the mock provider needs a data folder (or a world folder in its config)")
		}
		if fi, err := os.Stat(dataDir); err != nil {
			return "", sdk.Errorf("data folder: %v", err)
		} else if !fi.IsDir() {
			return "", sdk.Errorf("data folder %s is not a folder", dataDir)
		}
		return dataDir, nil
	}
	abs, err := filepath.Abs(world)
	if err != nil {
		return "", sdk.AttributeErrorf([]string{keyWorld}, "world %s: %v", world, err)
	}
	if readOnly {
		// A missing world is an empty one.
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			return abs, nil
		}
	} else if err := os.MkdirAll(abs, dirMode); err != nil {
		return "", sdk.AttributeErrorf([]string{keyWorld}, "make the world folder %s: %v", abs, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", sdk.AttributeErrorf([]string{keyWorld}, "world %s is not a folder", abs)
	}
	return abs, nil
}

// ValidateResource accepts any configuration of a known type whose tags
// are strings (the schema says only that tags is a map); with
// WithSchemaValidation, any configuration: the schema check sdk.Serve
// applies is all there is.
func (p *provider) ValidateResource(ctx context.Context, req *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	if err := p.arrive(ctx, "ValidateResource", 1, req.Name); err != nil {
		return nil, err
	}
	if _, err := p.resourceType(req.Type); err != nil {
		return nil, err
	}
	return &sdk.ValidateResourceResponse{Diagnostics: p.ownChecks(req.Config)}, nil
}

// ownChecks is the mock's validation beyond the schema, which
// ValidateResource, Create and Update make: the tags' values are strings;
// none with WithSchemaValidation (a tag may then be any value).
func (p *provider) ownChecks(cfg sdk.Attributes) sdk.Diagnostics {
	if p.schemaOnly {
		return nil
	}
	return checkTags(cfg)
}

// ValidatesBySchema reports whether the mock was made WithSchemaValidation:
// sdk.Serve then declares Capabilities.SchemaValidation, and the host
// never calls ValidateResource or ValidateMany to validate.
func (p *provider) ValidatesBySchema() bool { return p.schemaOnly }

// ValidateMany is many ValidateResources in one call: latency_ms is slept
// once. An unknown type fails its own result, not the call.
func (p *provider) ValidateMany(ctx context.Context, req *sdk.ValidateManyRequest) (*sdk.ValidateManyResponse, error) {
	if err := p.arrive(ctx, "ValidateMany", len(req.Resources), ""); err != nil {
		return nil, err
	}
	out := &sdk.ValidateManyResponse{Results: make([]*sdk.ValidateResourceResponse, len(req.Resources))}
	for i, r := range req.Resources {
		if _, err := p.resourceType(r.Type); err != nil {
			out.Results[i] = &sdk.ValidateResourceResponse{Diagnostics: sdk.DiagnosticsFromError(err)}
			continue
		}
		out.Results[i] = &sdk.ValidateResourceResponse{Diagnostics: p.ownChecks(r.Config)}
	}
	return out, nil
}

// Read finds a resource by id, else by idempotency key, else by type and
// name.
func (p *provider) Read(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	if err := p.arrive(ctx, "Read", 1, req.Name); err != nil {
		return nil, err
	}
	var resp *sdk.ReadResponse
	if err := p.view(func(w *world) { resp = w.read(req) }); err != nil {
		return nil, err
	}
	return resp, nil
}

// ReadMany is many Reads in one call: latency_ms is slept once, and the
// world brought up to date once.
func (p *provider) ReadMany(ctx context.Context, req *sdk.ReadManyRequest) (*sdk.ReadManyResponse, error) {
	if err := p.arrive(ctx, "ReadMany", len(req.Reads), ""); err != nil {
		return nil, err
	}
	out := &sdk.ReadManyResponse{Results: make([]*sdk.ReadResponse, len(req.Reads))}
	err := p.view(func(w *world) {
		for i, r := range req.Reads {
			out.Results[i] = w.read(r)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// read answers one Read.
func (w *world) read(req *sdk.ReadRequest) *sdk.ReadResponse {
	var r *resource
	switch {
	case req.ID != "":
		r = w.byIDOf(req.ID)
	case req.IdempotencyKey != "":
		r = w.byKeyOf(req.IdempotencyKey)
	default:
		r = w.byTypeName(req.Type, req.Name, zoneOf(req.Config))
	}
	if r == nil {
		return &sdk.ReadResponse{Exists: false}
	}
	return &sdk.ReadResponse{Exists: true, ID: r.ID, Attributes: r.attributes(), IdempotencyKey: r.IdempotencyKey}
}

// Create makes a resource, or returns the one a Create with the same
// idempotency key made. A (type, name) taken by a resource made under
// another key, or none, is a conflict: the Create fails with an
// sdk.Conflict diagnostic naming that key, and the resource is untouched.
func (p *provider) Create(ctx context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	if err := p.arrive(ctx, "Create", 1, req.Name); err != nil {
		return nil, err
	}
	if n, refuse := p.admit(1); n == 0 {
		return nil, refuse("create " + req.Name)
	}
	c, err := p.prepareCreate(req)
	if err != nil {
		return nil, err
	}
	if c.resp != nil {
		return c.resp, nil
	}
	err = p.change(func(w *world) error {
		c.apply(p, w)
		return c.err
	})
	if err != nil {
		return nil, err
	}
	if c.crash {
		// The resource is recorded: the host finds it by the key after the
		// crash. Exit without replying.
		p.exit(CrashExitCode)
		return nil, sdk.Errorf("injected crash: create %s (the exit hook returned)", req.Name)
	}
	return c.resp, nil
}

// CreateMany is many Creates in one call and ONE change of the world: one
// lock, one append to the log, one fsync for them all. latency_ms is slept
// once (each Create waits it, as it would alone, side by side); fail_create
// fails its own Creates, each in its own result; crash_create exits the
// process once the Create it names has made its resource durable (with
// the ones before it; the ones after it are never made), replying nothing,
// as a Create that crashes. The Creates are made in the request's order, so
// one of them meets what an earlier one made as it would meet a single
// Create made before it (its key: the same resource; its name: a
// conflict).
func (p *provider) CreateMany(ctx context.Context, req *sdk.CreateManyRequest) (*sdk.CreateManyResponse, error) {
	if err := p.arrive(ctx, "CreateMany", len(req.Creates), ""); err != nil {
		return nil, err
	}
	out := &sdk.CreateManyResponse{Results: make([]*sdk.CreateResponse, len(req.Creates))}
	cs := make([]*creation, len(req.Creates))
	due := false
	// Each Create takes a token of the quota, as it would alone: those
	// past it are answered throttled and make nothing.
	granted, refuse := p.admit(len(req.Creates))
	for i, r := range req.Creates {
		if i >= granted {
			out.Results[i] = &sdk.CreateResponse{Diagnostics: sdk.Diagnostics{refuse("create " + r.Name)}}
			continue
		}
		c, err := p.prepareCreate(r)
		switch {
		case err != nil:
			out.Results[i] = &sdk.CreateResponse{Diagnostics: sdk.DiagnosticsFromError(err)}
		case c.resp != nil:
			out.Results[i] = c.resp
		default:
			cs[i], due = c, true
		}
	}
	if !due {
		return out, nil
	}
	var crashed *creation
	err := p.change(func(w *world) error {
		for _, c := range cs {
			if c == nil {
				continue
			}
			if c.apply(p, w); c.crash {
				crashed = c
				return nil // the Creates after it never start
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if crashed != nil {
		// What it made is recorded, and what the Creates before it made:
		// the host finds each by its key after the crash.
		p.exit(CrashExitCode)
		return nil, sdk.Errorf("injected crash: create %s (the exit hook returned)", crashed.req.Name)
	}
	for i, c := range cs {
		if c == nil {
			continue
		}
		if c.err != nil {
			out.Results[i] = &sdk.CreateResponse{Diagnostics: sdk.DiagnosticsFromError(c.err)}
			continue
		}
		out.Results[i] = c.resp
	}
	return out, nil
}

// creation is one Create on its way: what prepareCreate checked, then what
// apply made of it.
type creation struct {
	req *sdk.CreateRequest
	cfg sdk.Attributes // normalized
	// The outcome: resp, or err; crash when crash_create names what this
	// Create just made.
	resp  *sdk.CreateResponse
	err   error
	crash bool
}

// prepareCreate checks req without the world: an error, or a creation
// whose resp is already the answer (a config the tags check refuses), or
// one to apply.
func (p *provider) prepareCreate(req *sdk.CreateRequest) (*creation, error) {
	if _, err := p.resourceType(req.Type); err != nil {
		return nil, err
	}
	if req.IdempotencyKey == "" {
		return nil, sdk.Errorf("create %s: the request carries no idempotency key", req.Name)
	}
	if ds := p.ownChecks(req.Config); ds.HasError() {
		return &creation{req: req, resp: &sdk.CreateResponse{Diagnostics: ds}}, nil
	}
	cfg, err := normalize(req.Config)
	if err != nil {
		return nil, err
	}
	return &creation{req: req, cfg: cfg}, nil
}

// apply makes the Create on w (up to date, under mu and the world's
// lock), setting its outcome.
func (c *creation) apply(p *provider, w *world) {
	req := c.req
	if r := w.byKeyOf(req.IdempotencyKey); r != nil {
		if r.Type != req.Type || r.Name != req.Name {
			c.err = sdk.Errorf("create %s: idempotency key %q already made %s %s (id %s)", req.Name, req.IdempotencyKey, r.Type, r.Name, r.ID)
			return
		}
		c.resp = &sdk.CreateResponse{ID: r.ID, Attributes: r.attributes()}
		return
	}
	if p.faults().failsCreate(req.Name) {
		c.err = sdk.Errorf("injected failure: create %s", req.Name)
		return
	}
	if r := w.byTypeName(req.Type, req.Name, zoneOf(c.cfg)); r != nil {
		// Taken under another key (or none): a conflict, never claimed.
		c.err = sdk.Conflict(fmt.Sprintf("%s %s already exists (id %s)", req.Type, req.Name, r.ID), r.IdempotencyKey)
		return
	}
	id, err := w.newID(req.Type, req.Name)
	if err != nil {
		c.err = err
		return
	}
	c.cfg[attrCreatedAt] = p.now().UTC().Format(time.RFC3339Nano)
	made := &resource{ID: id, Type: req.Type, Name: req.Name, IdempotencyKey: req.IdempotencyKey, Attributes: c.cfg}
	w.put(made)
	c.resp = &sdk.CreateResponse{ID: made.ID, Attributes: made.attributes()}
	c.crash = p.faults().crashesCreate(req.Name)
}

// Update changes a resource's in-place attributes; it keeps the id and
// refuses a change to a force_new attribute.
func (p *provider) Update(ctx context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	if err := p.arrive(ctx, "Update", 1, req.Name); err != nil {
		return nil, err
	}
	if n, refuse := p.admit(1); n == 0 {
		return nil, refuse("update " + req.Name)
	}
	rt, err := p.resourceType(req.Type)
	if err != nil {
		return nil, err
	}
	if ds := p.ownChecks(req.Config); ds.HasError() {
		return &sdk.UpdateResponse{Diagnostics: ds}, nil
	}
	cfg, err := normalize(req.Config)
	if err != nil {
		return nil, err
	}
	resp := &sdk.UpdateResponse{}
	err = p.change(func(w *world) error {
		r := w.byTypeName(req.Type, req.Name, zoneOf(cfg))
		if req.ID != "" {
			r = w.byIDOf(req.ID)
		}
		if r == nil || r.Type != req.Type {
			return sdk.Errorf("update %s: %s %s (id %q) does not exist", req.Name, req.Type, req.Name, req.ID)
		}
		if resp.Diagnostics = checkForceNew(rt, r.Attributes, cfg); resp.Diagnostics.HasError() {
			return nil
		}
		cfg[attrCreatedAt] = r.Attributes[attrCreatedAt]
		changed := *r
		changed.Attributes = cfg
		w.put(&changed)
		resp.Attributes = changed.attributes()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Delete removes a resource by id; deleting what is gone succeeds. A
// request without an id is refused: by type and name alone it could reach a
// resource another stack sharing the world made. A request with an
// expected key deletes only a resource that carries exactly that key,
// looked at and removed under the world's lock (which every process
// sharing the world takes), so no Import or Create can take it over in
// between; anything else is a conflict and left as it is. An armed
// fail_delete counter fails the call next; a name keep_delete lists is
// answered ok and left in place (a delete the cloud accepted and did not
// carry out).
func (p *provider) Delete(ctx context.Context, req *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	if req.Protection == sdk.ProtectionProtected {
		return nil, sdk.ErrProtectedDelete(req.Type, req.Name)
	}
	if req.ID == "" {
		return nil, errDeleteWithoutID(req)
	}
	if err := p.arrive(ctx, "Delete", 1, req.Name); err != nil {
		return nil, err
	}
	if n, refuse := p.admit(1); n == 0 {
		return nil, refuse("delete " + req.Name)
	}
	keep := p.faults().keepsDelete(req.Name)
	err := p.change(func(w *world) error {
		if r := w.byIDOf(req.ID); r != nil && req.ExpectedKey != "" && r.IdempotencyKey != req.ExpectedKey {
			return sdk.DeleteConflict(fmt.Sprintf("delete %s: %s %s (id %s)", req.Name, r.Type, r.Name, r.ID), r.IdempotencyKey)
		}
		if w.consumeFailDelete(req.Name) {
			return sdk.Errorf("injected failure: delete %s", req.Name)
		}
		if keep {
			return nil
		}
		w.remove(req.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &sdk.DeleteResponse{}, nil
}

// Import reads a resource by id for the host to take over and, when the
// request carries a claim key, stamps it on the resource as its idempotency
// key (docs/architecture.md, "Claims"): only on a resource that carries no
// key, a released one, the claim itself or the key the host says it replaces.
// Anything else is a conflict, and the resource is left as it is.
func (p *provider) Import(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	if err := p.arrive(ctx, "Import", 1, req.Name); err != nil {
		return nil, err
	}
	found := func(r *resource, claimed bool) *sdk.ImportResponse {
		if r == nil || r.Type != req.Type {
			return &sdk.ImportResponse{Exists: false}
		}
		return &sdk.ImportResponse{Exists: true, ID: r.ID, Attributes: r.attributes(), IdempotencyKey: r.IdempotencyKey, Claimed: claimed}
	}
	if req.ClaimKey == "" {
		var resp *sdk.ImportResponse
		if err := p.view(func(w *world) { resp = found(w.byIDOf(req.ID), false) }); err != nil {
			return nil, err
		}
		return resp, nil
	}
	var resp *sdk.ImportResponse
	err := p.change(func(w *world) error {
		r := w.byIDOf(req.ID)
		if r == nil || r.Type != req.Type {
			resp = found(nil, false)
			return nil
		}
		if !sdk.Claimable(r.IdempotencyKey, req.ClaimKey, req.ReplacesKey) {
			return sdk.Conflict(fmt.Sprintf("import %s: %s %s (id %s) is claimed by another stack or import: bulwark does not stamp a second claim on it", req.Name, r.Type, r.Name, r.ID), r.IdempotencyKey)
		}
		if r.IdempotencyKey != req.ClaimKey {
			claimed := *r
			claimed.IdempotencyKey = req.ClaimKey
			w.put(&claimed)
			r = &claimed
		}
		resp = found(r, true)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Release gives up the claim req.Key on the resource with req.ID: from
// then on it carries sdk.ReleasedKey(req.Key). A resource that is gone, or
// already released under that key, is released; one that carries another
// key is a conflict, left as it is.
func (p *provider) Release(ctx context.Context, req *sdk.ReleaseRequest) (*sdk.ReleaseResponse, error) {
	if err := p.arrive(ctx, "Release", 1, req.Name); err != nil {
		return nil, err
	}
	err := p.change(func(w *world) error {
		r := w.byIDOf(req.ID)
		switch {
		case r == nil, r.IdempotencyKey == sdk.ReleasedKey(req.Key):
			return nil
		case r.IdempotencyKey != req.Key:
			return sdk.Conflict(fmt.Sprintf("release %s: %s %s (id %s) does not carry the claim %s", req.Name, r.Type, r.Name, r.ID, req.Key), r.IdempotencyKey)
		}
		released := *r
		released.IdempotencyKey = sdk.ReleasedKey(req.Key)
		w.put(&released)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &sdk.ReleaseResponse{Released: true}, nil
}
