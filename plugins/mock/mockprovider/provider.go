package mockprovider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
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

// provider is the mock. mu guards the config and the world in memory, so
// concurrent calls from the host's goroutines see one world; the latency
// sleep, and the fsync that makes a change durable, happen outside it. A
// flock on the world folder (see worldLock) serialises the changes of
// processes sharing a world; see worldStore for how each keeps its copy in
// memory up to date.
type provider struct {
	exit func(code int)
	now  func() time.Time
	// types is resourceTypes by name, built once: a call looks its type
	// up here rather than building the whole schema again. Never changed.
	types map[string]sdk.ResourceType
	// schemaOnly: the mock has no validation of its own (no tags check),
	// and says so (sdk.SchemaValidator). Never changed after New.
	schemaOnly bool

	mu         sync.Mutex
	configured bool
	readOnly   bool   // the host will only read: write nothing anywhere
	dir        string // the folder the world lives in
	faults     faults
	quota      *bucket  // rate_limit's; nil: none
	calls      *callLog // WithCallLog's; nil: none. Never changed after New
	holds      *holds   // WithHold's; nil: none. Never changed after New
	store      *worldStore
	lk         worldLock // the world folder's flock
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
	p.mu.Lock()
	d := p.faults.latency
	p.mu.Unlock()
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
	p.mu.Lock()
	q := p.quota
	p.mu.Unlock()
	granted, wait := q.take(time.Now(), n)
	return granted, func(what string) sdk.Diagnostic {
		return sdk.Throttled(wait, "%s: rate exceeded (rate_limit %g a second); retry after %s", what, q.rate, wait)
	}
}

// world returns the world, up to date; p.mu must be held.
func (p *provider) world() (*world, error) {
	if !p.configured {
		return nil, errNotConfigured()
	}
	if err := p.store.refresh(); err != nil {
		return nil, err
	}
	return p.store.w, nil
}

// change runs fn on the world, up to date, under p.mu and the world
// folder's lock, and makes what fn changed durable (even when fn also
// returns an error) before it returns. fn records its changes through the
// world's methods (put, remove, the counters).
func (p *provider) change(fn func(w *world) error) error {
	p.mu.Lock()
	mine, err := p.changeLocked(fn)
	p.mu.Unlock()
	if serr := p.store.syncTo(mine, p.mu.Lock, p.mu.Unlock); serr != nil {
		return serr
	}
	return err
}

func (p *provider) changeLocked(fn func(w *world) error) (int64, error) {
	if !p.configured {
		return 0, errNotConfigured()
	}
	if p.readOnly {
		return 0, sdk.Errorf("the mock provider was configured read-only: it changes nothing")
	}
	unlock, err := p.lk.lock(p.dir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := p.store.refresh(); err != nil {
		return 0, err
	}
	err = fn(p.store.w)
	mine, cerr := p.store.commit()
	if cerr != nil {
		return 0, cerr
	}
	return mine, err
}

// Close folds the changes this process logged into WorldFile (see
// LogFile). sdk.Serve calls it when the host disconnects.
func (p *provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.configured || p.readOnly || p.store == nil {
		return nil
	}
	defer p.lk.close()
	unlock, err := p.lk.lock(p.dir)
	if err != nil {
		return err
	}
	defer unlock()
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
		Capabilities:   sdk.Capabilities{IdempotencyKeys: true},
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
	p.mu.Lock()
	if p.store == nil || p.store.dir != dir {
		if p.store != nil && p.store.logf != nil {
			p.store.logf.Close()
		}
		p.store = &worldStore{dir: dir}
	}
	p.configured, p.readOnly, p.dir, p.faults = true, req.ReadOnly, dir, f
	p.quota = nil
	if f.rateLimit > 0 {
		p.quota = newBucket(f.rateLimit, time.Now())
	}
	p.mu.Unlock()
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
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.world()
	if err != nil {
		return nil, err
	}
	return w.read(req), nil
}

// ReadMany is many Reads in one call: latency_ms is slept once, and the
// world brought up to date once.
func (p *provider) ReadMany(ctx context.Context, req *sdk.ReadManyRequest) (*sdk.ReadManyResponse, error) {
	if err := p.arrive(ctx, "ReadMany", len(req.Reads), ""); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.world()
	if err != nil {
		return nil, err
	}
	out := &sdk.ReadManyResponse{Results: make([]*sdk.ReadResponse, len(req.Reads))}
	for i, r := range req.Reads {
		out.Results[i] = w.read(r)
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

// apply makes the Create on w (up to date, under p.mu and the world's
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
	if p.faults.failsCreate(req.Name) {
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
	c.crash = p.faults.crashesCreate(req.Name)
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
// resource another stack sharing the world made. An armed fail_delete
// counter fails the call first.
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
	err := p.change(func(w *world) error {
		if w.consumeFailDelete(req.Name) {
			return sdk.Errorf("injected failure: delete %s", req.Name)
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
		p.mu.Lock()
		defer p.mu.Unlock()
		w, err := p.world()
		if err != nil {
			return nil, err
		}
		return found(w.byIDOf(req.ID), false), nil
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
