package localprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/sdk"
)

// keyRoot is the one provider config key.
const keyRoot = "root"

// New returns the local provider. Serve it with sdk.Serve, or call it
// in-process.
func New() sdk.Provider { return &provider{now: time.Now} }

// provider is the local provider. mu guards the root and serialises every
// call that reads or changes folders, so concurrent calls from the host's
// goroutines see one consistent tree.
type provider struct {
	now func() time.Time

	mu          sync.Mutex
	root        string // absolute, symlinks resolved; "" until Configure
	absent      bool   // a read-only session found no root: nothing exists
	pendingFile string // PendingFile, in the root
	// legacyPending is PendingFile in the data folder, where versions
	// before private data kept it ("" without a data folder, or when it
	// is the root's).
	legacyPending string
	readOnly      bool // the host will only read: write nothing anywhere
	// beforeRename, when set (by tests only), is called by Delete with the
	// folder it is about to move out of the way, after it checked it.
	beforeRename func(dir string)
}

var (
	_ sdk.Provider     = (*provider)(nil)
	_ sdk.BatchReader  = (*provider)(nil)
	_ sdk.BatchCreator = (*provider)(nil)
)

// configuredRoot returns the root; p.mu must be held.
func (p *provider) configuredRoot() (string, error) {
	if p.root == "" {
		return "", sdk.Errorf("the local provider is not configured: call Configure first")
	}
	return p.root, nil
}

// writableRoot returns the root for a call that changes something; p.mu
// must be held.
func (p *provider) writableRoot(call string) (string, error) {
	root, err := p.configuredRoot()
	if err != nil {
		return "", err
	}
	if p.readOnly {
		return "", sdk.Errorf("%s: the local provider was configured read-only: it changes nothing", call)
	}
	return root, nil
}

// scan scans the root; p.mu must be held.
func (p *provider) scan() (*inventory, error) {
	if p.absent {
		return &inventory{}, nil
	}
	return scan(p.root)
}

// GetSchema returns the six resource types and the provider config schema,
// and declares the IdempotencyKeys capability: Read reports the key each
// resource was created under, and a Create whose (type, name) or folder is
// taken fails with a conflict.
func (p *provider) GetSchema(context.Context, *sdk.GetSchemaRequest) (*sdk.GetSchemaResponse, error) {
	return &sdk.GetSchemaResponse{
		ProviderName: Name, ProviderVersion: Version, ResourceTypes: resourceTypes(),
		DataSources:  dataSources(),
		Capabilities: sdk.Capabilities{IdempotencyKeys: true, DeleteChecksKey: true},
		ProviderConfig: []sdk.Attribute{
			{Name: keyRoot, Type: sdk.TypeString, Description: "the folder every resource lives under (default: the data folder)"},
		},
	}, nil
}

// Configure sets the root: config "root" (made if missing; relative to the
// working folder) or else the data folder, and finishes the Deletes the
// pending record says were cut short. A read-only session makes nothing and
// finishes nothing: a missing root then holds no resource.
func (p *provider) Configure(_ context.Context, req *sdk.ConfigureRequest) (*sdk.ConfigureResponse, error) {
	cfg, err := normalize(req.Config)
	if err != nil {
		return nil, err
	}
	var ds sdk.Diagnostics
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	root := req.DataDir
	for _, k := range keys {
		if k != keyRoot {
			ds = append(ds, sdk.AttributeErrorf([]string{k}, "unknown provider config key %q (known: %s)", k, keyRoot))
			continue
		}
		s, ok := cfg[k].(string)
		if !ok || s == "" {
			ds = append(ds, sdk.AttributeErrorf([]string{k}, "root must be a non-empty folder path"))
			continue
		}
		root = s
	}
	if ds.HasError() {
		return &sdk.ConfigureResponse{Diagnostics: ds}, nil
	}
	if root == "" {
		return nil, sdk.Errorf("the local provider needs a root or a data folder")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, sdk.AttributeErrorf([]string{keyRoot}, "root %s: %v", root, err)
	}
	readOnly := req.ReadOnly
	absent := false
	if readOnly {
		// Nothing is made: a missing root holds no resource.
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
			absent = true
		}
	} else if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, sdk.AttributeErrorf([]string{keyRoot}, "make root %s: %v", abs, err)
	}
	real := abs
	if !absent {
		if real, err = filepath.EvalSymlinks(abs); err != nil {
			return nil, sdk.AttributeErrorf([]string{keyRoot}, "root %s: %v", abs, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return nil, sdk.AttributeErrorf([]string{keyRoot}, "root %s is not a folder", abs)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.root, p.absent, p.readOnly = real, absent, readOnly
	// The record of what is pending lives in the root, with what it
	// describes: any machine that reaches the root (a share) settles what a
	// crash on another left, and nothing needed lives in a data folder.
	p.pendingFile = filepath.Join(real, PendingFile)
	p.legacyPending = ""
	if req.DataDir != "" {
		if d, err := filepath.EvalSymlinks(req.DataDir); err == nil && d != real {
			p.legacyPending = filepath.Join(d, PendingFile)
		}
	}
	if !readOnly {
		if err := p.adoptLegacyPending(); err != nil {
			return nil, err
		}
		// A Delete cut short is finished now: only folders this provider
		// renamed for removal and recorded, never one that looks like it.
		if err := p.finishDeletes(); err != nil {
			return nil, err
		}
	}
	return &sdk.ConfigureResponse{}, nil
}

// ValidateResource checks that the resource's folder stays inside the root
// (lexically always; following symlinks once the root is known).
func (p *provider) ValidateResource(_ context.Context, req *sdk.ValidateResourceRequest) (*sdk.ValidateResourceResponse, error) {
	if _, err := resourceType(req.Type); err != nil {
		return nil, err
	}
	cfg, err := normalize(req.Config)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _, ds := location(p.root, req.Type, req.Name, cfg)
	return &sdk.ValidateResourceResponse{Diagnostics: ds}, nil
}

// Read finds a resource by id, else by idempotency key (settling a Create
// under that key that stopped half-way), else by type and name: ReadMany
// of the one read.
func (p *provider) Read(ctx context.Context, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	resp, err := p.ReadMany(ctx, &sdk.ReadManyRequest{Reads: []*sdk.ReadRequest{req}})
	if err != nil {
		return nil, err
	}
	return resp.Results[0], nil
}

// ReadMany answers many Reads, each read by id with private data from the
// place it names when that place answers (atPlace), the others from one
// scan of the root, made for the first of them: the reads of a plan of N
// resources read each resource's metadata once, where N scans would read
// it N times. A read by key that finishes a Create stopped half-way adds
// what it finished to the scan (settleCreate), so each read answers as
// Read would have at its turn.
func (p *provider) ReadMany(ctx context.Context, req *sdk.ReadManyRequest) (*sdk.ReadManyResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.configuredRoot(); err != nil {
		return nil, err
	}
	var inv *inventory // scanned once, for the first read its place does not answer
	out := &sdk.ReadManyResponse{Results: make([]*sdk.ReadResponse, len(req.Reads))}
	for i, r := range req.Reads {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.ID != "" {
			if e, ok := p.byPlace(r.ID, r.Private); ok {
				out.Results[i] = readAnswer(e)
				continue
			}
		}
		var err error
		if inv == nil {
			if inv, err = p.scan(); err != nil {
				return nil, err
			}
		}
		if out.Results[i], err = p.readIn(inv, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readIn answers req from inv, a scan made under mu: by id, else by
// idempotency key (settling a Create under that key that stopped
// half-way), else by type and name.
func (p *provider) readIn(inv *inventory, req *sdk.ReadRequest) (*sdk.ReadResponse, error) {
	var e *entry
	var err error
	switch {
	case req.ID != "":
		e = inv.byID(req.ID)
	case req.IdempotencyKey != "":
		if e, err = p.settleCreate(inv, req.IdempotencyKey); err != nil {
			return nil, err
		}
		if e == nil {
			e = inv.byKey(req.IdempotencyKey)
		}
	default:
		e = inv.byTypeName(req.Type, req.Name)
	}
	return readAnswer(e), nil
}

// readAnswer is a Read's answer for e (nil: absent).
func readAnswer(e *entry) *sdk.ReadResponse {
	if e == nil {
		return &sdk.ReadResponse{Exists: false}
	}
	return &sdk.ReadResponse{Exists: true, ID: e.meta.ID, Attributes: e.attributes(), IdempotencyKey: e.meta.IdempotencyKey}
}

// Create makes the resource's folder, or returns the one a Create with the
// same idempotency key made. A (type, name) or a folder already taken, by a
// resource made under another key or by anything this provider did not
// make, is a conflict: the Create fails with an sdk.Conflict diagnostic
// (naming the owner's key when there is one) and touches nothing. The
// folder is built under a temporary name beside its place and renamed into
// place when complete.
func (p *provider) Create(ctx context.Context, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	root, err := p.writableRoot("create " + req.Name)
	if err != nil {
		return nil, err
	}
	inv, err := p.scan()
	if err != nil {
		return nil, err
	}
	return p.createIn(root, inv, req)
}

// CreateMany makes many resources, each as Create makes it, in order, from
// one scan of the root: a batch of N Creates reads each resource's
// metadata once, where N Creates read it N times. Each adds what it made
// to the scan, so the ones after it see it (a second Create of the same
// type and name under another key is a conflict, as it would be alone). A
// Create that fails gets its own error diagnostics and stops none of the
// others; only what fails them all (the root, the scan, the context) fails
// the call.
//
// The scan is as old as the batch: a resource another process (a second
// stack sharing the root) makes meanwhile under another folder is not
// seen by the conflict check until the next scan, as for a single Create
// between its scan and its rename, only for longer. A folder already at a
// Create's place is always seen: that check looks at the folder itself.
func (p *provider) CreateMany(ctx context.Context, req *sdk.CreateManyRequest) (*sdk.CreateManyResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	root, err := p.writableRoot("create")
	if err != nil {
		return nil, err
	}
	inv, err := p.scan()
	if err != nil {
		return nil, err
	}
	out := &sdk.CreateManyResponse{Results: make([]*sdk.CreateResponse, len(req.Creates))}
	for i, r := range req.Creates {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		resp, err := p.createIn(root, inv, r)
		if err != nil {
			resp = &sdk.CreateResponse{Diagnostics: sdk.DiagnosticsFromError(err)}
		}
		out.Results[i] = resp
	}
	return out, nil
}

// createIn makes req's resource under root (writable) from inv, a scan made
// under mu, and adds it to inv.
func (p *provider) createIn(root string, inv *inventory, req *sdk.CreateRequest) (*sdk.CreateResponse, error) {
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
	// Checked again here, whatever ValidateResource said: defence in depth.
	rel, target, ds := location(root, req.Type, req.Name, cfg)
	if ds.HasError() {
		return &sdk.CreateResponse{Diagnostics: ds}, nil
	}
	e, err := p.settleCreate(inv, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if e == nil {
		e = inv.byKey(req.IdempotencyKey)
	}
	if e != nil {
		if e.meta.Type != req.Type || e.meta.Name != req.Name {
			return nil, sdk.Errorf("create %s: idempotency key %q already made %s %s (id %s)", req.Name, req.IdempotencyKey, e.meta.Type, e.meta.Name, e.meta.ID)
		}
		return &sdk.CreateResponse{ID: e.meta.ID, Attributes: e.attributes(), Private: placeOf(e).private()}, nil
	}
	// The identity is taken, under another key or none: a conflict, never
	// claimed, and the folder is left as it is.
	if e := inv.byTypeName(req.Type, req.Name); e != nil {
		return nil, sdk.Conflict(fmt.Sprintf("%s %s already exists (id %s, folder %s)", req.Type, req.Name, e.meta.ID, e.dir), e.meta.IdempotencyKey)
	}
	var pathAttr []string
	if _, ok := cfg[attrPath]; ok {
		pathAttr = []string{attrPath}
	}
	if present(target) {
		d := sdk.Conflict(fmt.Sprintf("folder %s already exists and was not made for %s %s", target, req.Type, req.Name), "")
		// Nothing made it a resource (no MetadataFile), so there is no id to
		// import it by.
		d.Detail = "it was not created by bulwark; it is not claimed, and having no " + MetadataFile + " it cannot be imported: move it away, or give the resource another path"
		if m, err := readMetadata(target); err == nil {
			d = sdk.Conflict(fmt.Sprintf("folder %s already holds %s %s (id %s)", target, m.Type, m.Name, m.ID), m.IdempotencyKey)
		}
		d.AttributePath = pathAttr
		return nil, d
	}
	for dir := filepath.Dir(target); dir != root && inside(root, dir, false); dir = filepath.Dir(dir) {
		if m, err := readMetadata(dir); err == nil {
			return nil, sdk.AttributeErrorf(pathAttr, "folder %s would be inside the folder of %s %s (%s)", rel, m.Type, m.Name, dir)
		}
	}

	id, err := newID(inv, req.Type, req.Name)
	if err != nil {
		return nil, err
	}
	cfg[attrCreatedAt] = p.now().UTC().Format(time.RFC3339Nano)
	m := &metadata{Version: metadataVersion, ID: id, Type: req.Type, Name: req.Name, IdempotencyKey: req.IdempotencyKey, Path: rel, Attributes: cfg}
	if err := p.build(target, m); err != nil {
		return nil, fmt.Errorf("create %s: %w", req.Name, err)
	}
	e = &entry{dir: target, meta: m}
	inv.resources = append(inv.resources, e)
	return &sdk.CreateResponse{ID: id, Attributes: e.attributes(), Private: placeOf(e).private()}, nil
}

// build makes the folder of m at target: parents, then a temporary folder
// (recorded as pending first) holding the seed data and, last, the
// metadata, renamed into place. A crash at any instant leaves either
// nothing, a recorded temporary folder that the next Create or Read with
// the same key settles, or the finished folder. p.mu must be held.
func (p *provider) build(target string, m *metadata) (err error) {
	parent := filepath.Dir(target)
	if err := mkdirAll(p.root, parent); err != nil {
		return err
	}
	tmp, err := freshTransient(parent, tmpPrefix)
	if err != nil {
		return err
	}
	if err := p.editPending(func(rec *pending) { rec.add(pendingEntry{Kind: pendingCreate, Path: tmp, Key: m.IdempotencyKey}) }); err != nil {
		return err
	}
	made, placed := false, false
	defer func() {
		if placed {
			return
		}
		if made {
			os.RemoveAll(tmp)
		}
		_ = p.editPending(func(rec *pending) { rec.drop(tmp) }) // else the next settle drops it
	}()
	if err := mkdir(tmp); err != nil {
		return err
	}
	made = true
	if err := seed(tmp, m); err != nil {
		return err
	}
	if err := writeMetadata(tmp, m); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		return err
	}
	placed = true
	if err := syncDir(parent); err != nil {
		return err
	}
	// The resource is in place: should this save fail, the stale entry
	// names a folder that is gone, and the next settle of the key drops it.
	_ = p.editPending(func(rec *pending) { rec.drop(tmp) })
	return nil
}

// lookup finds the resource an Update or a Delete names: by id at the
// place its private data records when that place answers (atPlace), else
// by id in a scan of the root, else (no id: an Update only, Delete refuses
// that first) by type and name. nil when there is none. p.mu must be held.
func (p *provider) lookup(typ, name, id string, private []byte) (*entry, error) {
	if id != "" {
		if e, ok := p.byPlace(id, private); ok {
			return e, nil
		}
	}
	inv, err := p.scan()
	if err != nil {
		return nil, err
	}
	if id != "" {
		return inv.byID(id), nil
	}
	return inv.byTypeName(typ, name), nil
}

// Update rewrites the resource's metadata with the new in-place
// attributes; it keeps the id and refuses a change to a force_new attribute.
func (p *provider) Update(ctx context.Context, req *sdk.UpdateRequest) (*sdk.UpdateResponse, error) {
	if err := ctx.Err(); err != nil {
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
	if _, err := p.writableRoot("update " + req.Name); err != nil {
		return nil, err
	}
	e, err := p.lookup(req.Type, req.Name, req.ID, req.Private)
	if err != nil {
		return nil, err
	}
	if e == nil || e.meta.Type != req.Type {
		return nil, sdk.Errorf("update %s: %s %s (id %q) does not exist", req.Name, req.Type, req.Name, req.ID)
	}
	if ds := checkForceNew(rt, e.meta.Attributes, cfg); ds.HasError() {
		return &sdk.UpdateResponse{Diagnostics: ds}, nil
	}
	cfg[attrCreatedAt] = e.meta.Attributes[attrCreatedAt]
	m := *e.meta
	m.Attributes = cfg
	if err := writeMetadata(e.dir, &m); err != nil {
		return nil, err
	}
	e.meta = &m
	return &sdk.UpdateResponse{Attributes: e.attributes()}, nil
}

// Delete removes the resource's folder, found by id; deleting what is gone
// succeeds. A request without an id is refused: by type and name alone it
// could reach a folder another stack sharing the root made. It never
// removes anything outside the root, nor a folder that is not one of its
// resources.
func (p *provider) Delete(ctx context.Context, req *sdk.DeleteRequest) (*sdk.DeleteResponse, error) {
	if req.Protection == sdk.ProtectionProtected {
		return nil, sdk.ErrProtectedDelete(req.Type, req.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.ID == "" {
		return nil, sdk.Errorf("delete %s %s: the request carries no id; the local provider deletes only by id, never by type and name (that may be a folder another stack made)", req.Type, req.Name)
	}
	root, err := p.writableRoot("delete " + req.Name)
	if err != nil {
		return nil, err
	}
	if err := p.finishDeletes(); err != nil {
		return nil, err
	}
	e, err := p.lookup(req.Type, req.Name, req.ID, req.Private)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return &sdk.DeleteResponse{}, nil
	}
	if err := checkPlace(req, e); err != nil {
		return nil, err
	}
	if err := checkExpected(req, e.meta, e.dir); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(e.dir)
	if err != nil || !inside(root, e.dir, false) || !inside(root, real, false) {
		return nil, sdk.Errorf("refusing to delete %s: it is not below the root %s", e.dir, root)
	}
	// Rename first (recorded as pending), so a crash mid-removal never
	// leaves a half-removed folder that still looks like the resource; the
	// next call finishes it.
	parent := filepath.Dir(real)
	doomed, err := freshTransient(parent, delPrefix)
	if err != nil {
		return nil, err
	}
	if err := p.editPending(func(rec *pending) {
		rec.add(pendingEntry{Kind: pendingDelete, Path: doomed, ID: e.meta.ID, Key: e.meta.IdempotencyKey})
	}); err != nil {
		return nil, err
	}
	if p.beforeRename != nil {
		p.beforeRename(real)
	}
	if err := os.Rename(real, doomed); err != nil {
		_ = p.editPending(func(rec *pending) { rec.drop(doomed) }) // else the next call drops it: nothing is there
		return nil, fmt.Errorf("delete %s: %w", e.dir, err)
	}
	// What was moved is what was checked? Another process sharing the
	// root may have put another folder in its place between the scan and
	// the rename (this process's mu orders only its own calls): checked
	// again once out of everyone's way, it goes back if it is not the one.
	if err := movedIsChecked(doomed, e.meta, req); err != nil {
		// Back, durably, before the record of the delete goes: a crash
		// in between must not leave it under the .del- name with nothing
		// saying what it is (finishDeletes would still not remove it:
		// stillDoomed).
		if rerr := os.Rename(doomed, real); rerr != nil {
			err = fmt.Errorf("%w; and it could not be moved back from %s: %v (it is left there, not deleted)", err, doomed, rerr)
		} else if serr := syncDir(parent); serr != nil {
			return nil, fmt.Errorf("%w; moved back to %s, not yet durably: %v", err, real, serr)
		}
		_ = p.editPending(func(rec *pending) { rec.drop(doomed) })
		return nil, err
	}
	if err := syncDir(parent); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(doomed); err != nil {
		return &sdk.DeleteResponse{Diagnostics: sdk.Diagnostics{{
			Severity: sdk.SeverityWarning,
			Summary:  fmt.Sprintf("%s %s is deleted, but its folder could not be removed entirely", req.Type, req.Name),
			Detail:   fmt.Sprintf("%v; the next call removes %s", err, doomed),
		}}}, nil
	}
	if err := syncDir(parent); err != nil {
		return nil, err
	}
	return &sdk.DeleteResponse{}, p.editPending(func(rec *pending) { rec.drop(doomed) })
}

// Import reads a resource by id (at its recorded place: see scan) for the
// host to take over and, when the request carries a claim key, stamps it
// in the resource's MetadataFile as its idempotency key
// (docs/architecture.md, "Claims"): only on a resource that carries no key, a
// released one, the claim itself or the key the host says it replaces.
// Anything else is a conflict, and the folder is left as it is.
func (p *provider) Import(ctx context.Context, req *sdk.ImportRequest) (*sdk.ImportResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.ClaimKey == "" {
		if _, err := p.configuredRoot(); err != nil {
			return nil, err
		}
	} else if _, err := p.writableRoot("import " + req.Name); err != nil {
		return nil, err
	}
	inv, err := p.scan()
	if err != nil {
		return nil, err
	}
	e := inv.byID(req.ID)
	if e == nil || e.meta.Type != req.Type {
		return &sdk.ImportResponse{Exists: false}, nil
	}
	claimed := false
	if req.ClaimKey != "" {
		if !sdk.Claimable(e.meta.IdempotencyKey, req.ClaimKey, req.ReplacesKey) {
			return nil, sdk.Conflict(fmt.Sprintf("import %s: %s %s (id %s, folder %s) is claimed by another stack or import: bulwark does not stamp a second claim on it", req.Name, e.meta.Type, e.meta.Name, e.meta.ID, e.dir), e.meta.IdempotencyKey)
		}
		if err := p.setKey(e, req.ClaimKey); err != nil {
			return nil, fmt.Errorf("import %s: %w", req.Name, err)
		}
		claimed = true
	}
	return &sdk.ImportResponse{Exists: true, ID: e.meta.ID, Attributes: e.attributes(), IdempotencyKey: e.meta.IdempotencyKey, Claimed: claimed, Private: placeOf(e).private()}, nil
}

// Release gives up the claim req.Key on the resource with req.ID (at its
// recorded place): from then on its MetadataFile carries
// sdk.ReleasedKey(req.Key). A resource that is gone, or already released
// under that key, is released; one that carries another key is a
// conflict, left as it is.
func (p *provider) Release(ctx context.Context, req *sdk.ReleaseRequest) (*sdk.ReleaseResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.writableRoot("release " + req.Name); err != nil {
		return nil, err
	}
	inv, err := p.scan()
	if err != nil {
		return nil, err
	}
	e := inv.byID(req.ID)
	switch {
	case e == nil, e.meta.IdempotencyKey == sdk.ReleasedKey(req.Key):
		return &sdk.ReleaseResponse{Released: true}, nil
	case e.meta.IdempotencyKey != req.Key:
		return nil, sdk.Conflict(fmt.Sprintf("release %s: %s %s (id %s, folder %s) does not carry the claim %s", req.Name, e.meta.Type, e.meta.Name, e.meta.ID, e.dir, req.Key), e.meta.IdempotencyKey)
	}
	if err := p.setKey(e, sdk.ReleasedKey(req.Key)); err != nil {
		return nil, fmt.Errorf("release %s: %w", req.Name, err)
	}
	return &sdk.ReleaseResponse{Released: true}, nil
}

// setKey rewrites e's MetadataFile (atomically) with key as its
// idempotency key; p.mu must be held.
func (p *provider) setKey(e *entry, key string) error {
	if e.meta.IdempotencyKey == key {
		return nil
	}
	m := *e.meta
	m.IdempotencyKey = key
	if err := writeMetadata(e.dir, &m); err != nil {
		return err
	}
	e.meta = &m
	return nil
}

// place is the provider's private data for a resource (the contract's
// private bytes, which the host stores with it and hands back): the place
// it lives at, relative to the root, and the key it carries (its Create's,
// or the claim an import stamped). A Delete checks that what the id holds
// is still there and still carries that key: defence in depth behind the
// host's own check, as the aws provider's.
type place struct {
	Path string `json:"path"`
	Key  string `json:"key"`
}

func placeOf(e *entry) place { return place{Path: e.meta.Path, Key: e.meta.IdempotencyKey} }

func (pl place) private() []byte {
	b, err := json.Marshal(pl)
	if err != nil {
		panic(err) // two strings: always encodes
	}
	return b
}

// checkExpected refuses the Delete of a resource that does not carry the
// key the host expects (DeleteRequest.ExpectedKey, Capabilities.
// DeleteChecksKey); none expected, nothing to check.
func checkExpected(req *sdk.DeleteRequest, m *metadata, dir string) error {
	if req.ExpectedKey == "" || m.IdempotencyKey == req.ExpectedKey {
		return nil
	}
	return sdk.DeleteConflict(fmt.Sprintf("delete %s: %s %s (id %s, folder %s)", req.Name, m.Type, m.Name, m.ID, dir), m.IdempotencyKey)
}

// movedIsChecked reports, for a folder Delete moved out of the way
// (doomed), whether it is still the resource it checked: the same id and
// key, and the key the host expects.
func movedIsChecked(doomed string, checked *metadata, req *sdk.DeleteRequest) error {
	m, err := readMetadata(doomed)
	if err != nil {
		return sdk.Errorf("delete %s: what was moved out of %s for deletion is no longer the resource checked (%v): not deleting it", req.Name, checked.Path, err)
	}
	if m.ID != checked.ID || m.IdempotencyKey != checked.IdempotencyKey {
		return sdk.DeleteConflict(fmt.Sprintf("delete %s: the folder at %s was replaced during the delete by %s %s (id %s)", req.Name, checked.Path, m.Type, m.Name, m.ID), m.IdempotencyKey)
	}
	return checkExpected(req, m, doomed)
}

// checkPlace refuses a Delete of e when the request's private data names
// another place or key: what the recorded id holds is no longer what this
// resource was (its claim released and taken by another stack, say). A
// request without private data (recorded before it was kept) is not
// checked here.
func checkPlace(req *sdk.DeleteRequest, e *entry) error {
	var pl place
	if len(req.Private) == 0 || json.Unmarshal(req.Private, &pl) != nil {
		return nil
	}
	switch {
	case pl.Path != "" && pl.Path != e.meta.Path:
		return sdk.Errorf("delete %s: id %s lives at %s, not at %s where it was recorded: not deleting it", req.Name, req.ID, e.meta.Path, pl.Path)
	case pl.Key != "" && pl.Key != e.meta.IdempotencyKey:
		d := sdk.Conflict(fmt.Sprintf("delete %s: folder %s carries key %q, not %q, the one this resource was recorded under: not deleting it", req.Name, e.dir, e.meta.IdempotencyKey, pl.Key), e.meta.IdempotencyKey)
		d.Detail = "nothing was deleted; `bulwark state forget` stops managing the resource without touching it"
		return d
	}
	return nil
}
