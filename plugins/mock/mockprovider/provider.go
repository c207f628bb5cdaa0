package mockprovider

import (
	"context"
	"fmt"
	"os"
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

// WithClock replaces time.Now as the source of created_at.
func WithClock(now func() time.Time) Option {
	return func(p *provider) { p.now = now }
}

// New returns the mock provider. Serve it with sdk.Serve, or call it
// in-process.
func New(opts ...Option) sdk.Provider {
	p := &provider{exit: os.Exit, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

// provider is the mock. mu guards the config and every read-modify-write of
// the world file, so concurrent calls from the host's goroutines see one
// world; the latency sleep happens outside it.
type provider struct {
	exit func(code int)
	now  func() time.Time

	mu         sync.Mutex
	configured bool
	dataDir    string
	faults     faults
}

var _ sdk.Provider = (*provider)(nil)

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

// world loads the world; p.mu must be held.
func (p *provider) world() (*world, error) {
	if !p.configured {
		return nil, sdk.Errorf("the mock provider is not configured: call Configure first")
	}
	return loadWorld(p.dataDir)
}

// GetSchema returns the six resource types.
func (p *provider) GetSchema(ctx context.Context, _ *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	return &sdk.GetSchemaResponse{ProviderName: Name, ProviderVersion: Version, ResourceTypes: resourceTypes()}, nil
}

// Configure parses the fault config, adopts the data folder and arms the
// fail_delete counters. It is the one call latency_ms does not slow down.
func (p *provider) Configure(_ context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	f, ds := parseConfig(req.Config)
	if ds.HasError() {
		return &sdk.ConfigureResponse{Diagnostics: ds}, nil
	}
	if req.DataDir == "" {
		return nil, sdk.Errorf("the mock provider needs a data folder")
	}
	if fi, err := os.Stat(req.DataDir); err != nil {
		return nil, sdk.Errorf("data folder: %v", err)
	} else if !fi.IsDir() {
		return nil, sdk.Errorf("data folder %s is not a folder", req.DataDir)
	}
	err := func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.configured, p.dataDir, p.faults = true, req.DataDir, f
		w, err := p.world()
		if err != nil {
			return err
		}
		if w.armFailDelete(f.failDelete) {
			return w.save(p.dataDir)
		}
		return nil
	}()
	if err != nil {
		return nil, err
	}
	return &sdk.ConfigureResponse{Diagnostics: ds}, nil
}

// ValidateResource accepts any configuration of a known type: the schema
// check sdk.Serve applies is all the mock needs.
func (p *provider) ValidateResource(ctx context.Context, req *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	if _, err := resourceType(req.Type); err != nil {
		return nil, err
	}
	return &sdk.ValidateResourceResponse{}, nil
}

// Read finds a resource by id, else by idempotency key, else by type and
// name.
func (p *provider) Read(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.world()
	if err != nil {
		return nil, err
	}
	var r *resource
	switch {
	case req.ID != "":
		r = w.byID(req.ID)
	case req.IdempotencyKey != "":
		r = w.byKey(req.IdempotencyKey)
	default:
		r = w.byTypeName(req.Type, req.Name)
	}
	if r == nil {
		return &sdk.ReadResponse{Exists: false}, nil
	}
	return &sdk.ReadResponse{Exists: true, ID: r.ID, Attributes: r.attributes()}, nil
}

// Create makes a resource, or returns the one a Create with the same
// idempotency key made.
func (p *provider) Create(ctx context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	if _, err := resourceType(req.Type); err != nil {
		return nil, err
	}
	if req.IdempotencyKey == "" {
		return nil, sdk.Errorf("create %s: the request carries no idempotency key", req.Name)
	}
	cfg, err := normalize(req.Config)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.world()
	if err != nil {
		return nil, err
	}
	if r := w.byKey(req.IdempotencyKey); r != nil {
		if r.Type != req.Type || r.Name != req.Name {
			return nil, sdk.Errorf("create %s: idempotency key %q already made %s %s (id %s)", req.Name, req.IdempotencyKey, r.Type, r.Name, r.ID)
		}
		return &sdk.CreateResponse{ID: r.ID, Attributes: r.attributes()}, nil
	}
	if p.faults.failsCreate(req.Name) {
		return nil, sdk.Errorf("injected failure: create %s", req.Name)
	}
	if r := w.byTypeName(req.Type, req.Name); r != nil {
		return nil, sdk.Diagnostic{
			Severity: sdk.SeverityError,
			Summary:  fmt.Sprintf("%s %s already exists (id %s)", req.Type, req.Name, r.ID),
			Detail:   "another Create (idempotency key " + r.IdempotencyKey + ") made it; read it by id or delete it first",
		}
	}
	id, err := w.newID(req.Type, req.Name)
	if err != nil {
		return nil, err
	}
	cfg[attrCreatedAt] = p.now().UTC().Format(time.RFC3339Nano)
	r := &resource{ID: id, Type: req.Type, Name: req.Name, IdempotencyKey: req.IdempotencyKey, Attributes: cfg}
	w.Resources = append(w.Resources, r)
	if err := w.save(p.dataDir); err != nil {
		return nil, err
	}
	if p.faults.crashesCreate(req.Name) {
		// The resource is recorded: the host finds it by the key after the
		// crash. Exit without replying.
		p.exit(CrashExitCode)
		return nil, sdk.Errorf("injected crash: create %s (the exit hook returned)", req.Name)
	}
	return &sdk.CreateResponse{ID: r.ID, Attributes: r.attributes()}, nil
}

// Update changes a resource's in-place attributes; it keeps the id and
// refuses a change to a force_new attribute.
func (p *provider) Update(ctx context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	rt, err := resourceType(req.Type)
	if err != nil {
		return nil, err
	}
	cfg, err := normalize(req.Config)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.world()
	if err != nil {
		return nil, err
	}
	r := w.byTypeName(req.Type, req.Name)
	if req.ID != "" {
		r = w.byID(req.ID)
	}
	if r == nil || r.Type != req.Type {
		return nil, sdk.Errorf("update %s: %s %s (id %q) does not exist", req.Name, req.Type, req.Name, req.ID)
	}
	if ds := checkForceNew(rt, r.Attributes, cfg); ds.HasError() {
		return &sdk.UpdateResponse{Diagnostics: ds}, nil
	}
	cfg[attrCreatedAt] = r.Attributes[attrCreatedAt]
	r.Attributes = cfg
	if err := w.save(p.dataDir); err != nil {
		return nil, err
	}
	return &sdk.UpdateResponse{Attributes: r.attributes()}, nil
}

// Delete removes a resource by id (by type and name when the request has no
// id); deleting what is gone succeeds. An armed fail_delete counter fails
// the call first.
func (p *provider) Delete(ctx context.Context, req *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	if req.Protection == sdk.ProtectionProtected {
		return nil, sdk.ErrProtectedDelete(req.Type, req.Name)
	}
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.world()
	if err != nil {
		return nil, err
	}
	if w.consumeFailDelete(req.Name) {
		if err := w.save(p.dataDir); err != nil {
			return nil, err
		}
		return nil, sdk.Errorf("injected failure: delete %s", req.Name)
	}
	r := w.byTypeName(req.Type, req.Name)
	if req.ID != "" {
		r = w.byID(req.ID)
	}
	if r == nil {
		return &sdk.DeleteResponse{}, nil
	}
	w.remove(r.ID)
	if err := w.save(p.dataDir); err != nil {
		return nil, err
	}
	return &sdk.DeleteResponse{}, nil
}
