package stack_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/pluginhost/grpcv1"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// fakeTypes are the resource types of the fake provider's schema.
var fakeTypes = []string{"network", "compute", "s3_bucket", "dynamodb_table", "generic"}

// fakeResource is one resource in a fake world.
type fakeResource struct {
	ID    string
	Type  string
	Name  string
	Key   string // idempotency key of the Create that made it
	Attrs map[string]any
}

// fakeCall is one Create, Update or Delete request the fake received.
type fakeCall struct {
	Name       string
	Type       string
	ID         string // Delete/Update: the id asked for; Create: the id made ("" on failure)
	Key        string // Create only
	Protection protection.Level
	Config     map[string]any // Create/Update: the config asked for
	Private    string         // Update/Delete: the private data handed back
	Observed   bool           // Delete: DeleteRequest.Observed
	// ExpectedKey is DeleteRequest.ExpectedKey (Delete only).
	ExpectedKey string
	Err         error // what the fake answered
}

// fakeWorld is what the in-process provider remembers between runs, like the
// mock plugin's data folder: the same world is handed to every Start of a
// test. It is safe for concurrent use.
//
// Like the real mock it reads by id, else by idempotency key, else by (type,
// name); a Create under a key already used returns what that key made; a
// Delete of what is gone succeeds. Unlike the real plugin (where sdk.Serve
// does it) it does NOT refuse a Delete that carries ProtectionProtected: a
// test must see every Delete the core sends.
type fakeWorld struct {
	mu          sync.Mutex
	resources   map[string]*fakeResource // by id
	seq         int
	failCreate  map[string]bool // Create of these names fails, every time
	failDelete  map[string]int  // the next n Deletes of these names fail
	keepDelete  map[string]bool // Delete of these names answers ok and removes nothing
	failReadIDs map[string]bool // a Read by id of these names fails, every time
	creates     []fakeCall
	updates     []fakeCall
	deletes     []fakeCall
	starts      []pluginhost.Config
	importCalls int
	claims      []fakeCall // the Imports that stamped a claim
	noRelease   bool       // Release answers as a provider that cannot
	// legacy makes the providers behave as one written before keys were
	// reported: no Capabilities.IdempotencyKeys, no key on Read.
	legacy bool
	// keyless makes the providers behave as one built for Terraform: no
	// key at all (Capabilities.Keyless), and a Read by key fails.
	keyless bool
	// conflictID makes a Create whose identity is taken answer the id of
	// what holds it beside its Conflict error.
	conflictID bool
	// coexist: a resource's identity is (type, name, zone), and the schema
	// says so (providers.Coexistence), so a zone change replaces creating first.
	coexist bool
	// onCreate, when set, is called (without the lock) at the start of every
	// Create, so a test can hold an operation in the middle of a step.
	onCreate func(name string)
	// onDelete, likewise, at the start of every Delete.
	onDelete func(name string)
	// heldBack names the resources whose Create is held back as the
	// plugin host's gate holds a throttled provider's calls: it waits for
	// its SendStop (providers.SendStop) to stop, then gives up unsent
	// (providers.ErrNotSent), never reaching the world; heldWaiting gets
	// the name as it starts waiting (as it goes on, without a SendStop).
	heldBack    map[string]bool
	heldWaiting chan string
	// onRead, likewise, at the start of every Read.
	onRead func(name string)
	// onImport, likewise, at the start of every Import.
	onImport func(name string)
	// readPrivate is the private data the last Read of each name by id
	// carried.
	readPrivate map[string]string
	// readBack, when set, makes the providers announce
	// Capabilities.CreateReadsBack and answers a Create that asks with
	// what it returns for the resource made (nil: no read-back).
	readBack func(made *fakeResource) *providers.ReadResponse
	// deleteBack, likewise, makes them announce
	// Capabilities.DeleteReadsBack and answers a Delete that asks with what
	// it returns for the name deleted.
	deleteBack func(name string) *providers.ReadResponse
	// readsAnswerPrivate makes a Read by id answer private data of its
	// own ("read ID"), as a Terraform-protocol adapter answers its
	// envelope.
	readsAnswerPrivate bool
	// unasked makes Create, Update and Delete answer their read-backs
	// (readBack, updateBack, deleteBack) whether asked or not, and the
	// providers announce neither capability: as a Terraform-protocol
	// adapter, whose read-back is what its apply answered, at no call.
	unasked bool
	// updateBack answers every Update with what it returns for the
	// resource updated (UpdateResponse.ReadBack; nil: none).
	updateBack func(updated *fakeResource) *providers.ReadResponse
	// readsByID counts the Reads by id (a Verify's, a Check's of a
	// recorded resource).
	readsByID int
	// dataSources makes the providers offer the data source "lookup"
	// (Capabilities.ReadData), which reads a resource of the world by
	// type and name: as the mock plugin's.
	dataSources bool
	// dataReads are the names of the data entries read, in order.
	dataReads []string
	// onReadData, when set, is called (without the lock) at the start of
	// every ReadData.
	onReadData func(name string)
	// validations lists the names of the ValidateResource calls, in order.
	validations []string
	// version is the providers' version (the schema's; "" is 0.0.1).
	version string
	// warnOn: a config with this size gets a warning from ValidateResource.
	warnOn any
	// schemaValidated makes the providers announce
	// Capabilities.SchemaValidation: their validation is their schema.
	schemaValidated bool
	// checksKeys makes the providers announce Capabilities.DeleteChecksKey
	// and honour DeleteRequest.ExpectedKey under the world's lock, as the
	// mock plugin does.
	checksKeys bool
}

// ChecksKeys makes the providers' Deletes check the key they are given
// (Capabilities.DeleteChecksKey).
func (w *fakeWorld) ChecksKeys() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checksKeys = true
}

// SchemaValidated makes the providers say their validation is their
// schema (Capabilities.SchemaValidation).
func (w *fakeWorld) SchemaValidated() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.schemaValidated = true
}

// Validations returns the names of the ValidateResource calls so far.
func (w *fakeWorld) Validations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.validations)
}

// DataSources makes the providers offer the data source "lookup".
func (w *fakeWorld) DataSources() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dataSources = true
}

// DataReads returns the names of the data entries read so far.
func (w *fakeWorld) DataReads() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.dataReads)
}

// OnReadData sets the hook called at the start of every ReadData.
func (w *fakeWorld) OnReadData(f func(name string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onReadData = f
}

// fakeLookup is the fake's data source: a resource of the world by type and
// name; secret (sensitive) is derived from its id.
var fakeLookup = providers.DataSourceType{Name: "lookup", Description: "an existing resource, by type and name", Attributes: []providers.Attribute{
	{Name: "type", Type: providers.TypeString, Required: true},
	{Name: "name", Type: providers.TypeString, Required: true},
	{Name: "id", Type: providers.TypeString, Computed: true},
	{Name: "arn", Type: providers.TypeString, Computed: true},
	{Name: "size", Type: providers.TypeNumber, Computed: true},
	{Name: "zone", Type: providers.TypeString, Computed: true},
	{Name: "tags", Type: providers.TypeMap, Computed: true},
	{Name: "secret", Type: providers.TypeString, Computed: true, Sensitive: true},
}}

func newFakeWorld() *fakeWorld {
	return &fakeWorld{resources: map[string]*fakeResource{}, failCreate: map[string]bool{}, failDelete: map[string]int{}, readPrivate: map[string]string{}}
}

// FailCreate makes every Create of the named resources fail.
// Coexist makes two resources of one (type, name) in two zones able to
// exist at once, and the schema say so.
func (w *fakeWorld) Coexist() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.coexist = true
}

func (w *fakeWorld) FailCreate(names ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range names {
		w.failCreate[n] = true
	}
}

// OnCreate sets the hook called at the start of every Create.
func (w *fakeWorld) OnCreate(f func(name string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onCreate = f
}

// OnImport sets the hook called at the start of every Import.
func (w *fakeWorld) OnImport(f func(name string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onImport = f
}

// OnRead sets the hook called at the start of every Read.
func (w *fakeWorld) OnRead(f func(name string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onRead = f
}

// OnDelete sets the hook called at the start of every Delete.
// HoldBack holds back the Creates of names (see heldBack); each sends its
// name on the returned channel as it starts waiting.
func (w *fakeWorld) HoldBack(names ...string) <-chan string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.heldBack = map[string]bool{}
	for _, n := range names {
		w.heldBack[n] = true
	}
	w.heldWaiting = make(chan string, len(names))
	return w.heldWaiting
}

func (w *fakeWorld) OnDelete(f func(name string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onDelete = f
}

// SetKey gives the resources named name another idempotency key behind
// bulwark's back (as if another stack now held what the name holds).
func (w *fakeWorld) SetKey(name, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.resources {
		if r.Name == name {
			r.Key = key
		}
	}
}

// ClearFaults disarms every fault.
func (w *fakeWorld) ClearFaults() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failCreate = map[string]bool{}
	w.failDelete = map[string]int{}
	w.failReadIDs = nil
	w.keepDelete = nil
}

// FailNextDeletes makes the next n Deletes naming name fail (added to what
// is armed already).
// FailReadsByID makes every Read by id of these names fail.
func (w *fakeWorld) FailReadsByID(names ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failReadIDs == nil {
		w.failReadIDs = map[string]bool{}
	}
	for _, n := range names {
		w.failReadIDs[n] = true
	}
}

func (w *fakeWorld) FailNextDeletes(name string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failDelete[name] += n
}

// KeepDeletes makes every Delete of names answer ok and leave the resource
// in place (as the mock's keep_delete), so the Verify after it fails.
func (w *fakeWorld) KeepDeletes(names ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keepDelete == nil {
		w.keepDelete = map[string]bool{}
	}
	for _, n := range names {
		w.keepDelete[n] = true
	}
}

// Creates, Updates and Deletes return copies of what was recorded.
func (w *fakeWorld) Creates() []fakeCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.creates)
}

func (w *fakeWorld) Updates() []fakeCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.updates)
}

func (w *fakeWorld) Deletes() []fakeCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.deletes)
}

// Calls returns how many Creates, Updates and Deletes were recorded, to mark
// where an operation starts.
func (w *fakeWorld) Calls() (creates, updates, deletes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.creates), len(w.updates), len(w.deletes)
}

// ByName returns a copy of the resource named name (any type), or nil.
func (w *fakeWorld) ByName(name string) *fakeResource {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.resources {
		if r.Name == name {
			c := *r
			c.Attrs = maps.Clone(r.Attrs)
			return &c
		}
	}
	return nil
}

// Snapshot returns a copy of every resource, by id.
func (w *fakeWorld) Snapshot() map[string]fakeResource {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]fakeResource{}
	for id, r := range w.resources {
		c := *r
		c.Attrs = maps.Clone(r.Attrs)
		out[id] = c
	}
	return out
}

// Names returns the names of every resource in the world, sorted.
func (w *fakeWorld) Names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.resources {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}

// SetAttr changes an attribute behind bulwark's back (drift).
func (w *fakeWorld) SetAttr(name, key string, v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.resources {
		if r.Name == name {
			r.Attrs[key] = v
		}
	}
}

// imports counts the Import calls.
func (w *fakeWorld) imports() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.importCalls
}

// Put makes a resource behind bulwark's back (out of band), under key ("":
// none), and returns its id.
func (w *fakeWorld) Put(typ, name, key string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	id := fmt.Sprintf("oob-%s-%s-%d", typ, name, w.seq)
	w.resources[id] = &fakeResource{ID: id, Type: typ, Name: name, Key: key, Attrs: map[string]any{}}
	return id
}

// Remove deletes a resource behind bulwark's back (drift).
func (w *fakeWorld) Remove(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, r := range w.resources {
		if r.Name == name {
			delete(w.resources, id)
		}
	}
}

// Starter returns an Options.Starter that starts providers on this world.
func (w *fakeWorld) Starter() func() stack.Starter {
	return func() stack.Starter { return fakeStarter{w} }
}

type fakeStarter struct{ w *fakeWorld }

func (s fakeStarter) Start(_ context.Context, cfg pluginhost.Config) (stack.Provider, error) {
	s.w.mu.Lock()
	s.w.starts = append(s.w.starts, cfg)
	s.w.mu.Unlock()
	return &fakeProvider{w: s.w, source: cfg.Source}, nil
}

func (fakeStarter) Close() {}

// fakeProvider is one started provider on a fake world.
type fakeProvider struct {
	w      *fakeWorld
	source string
}

var _ stack.Provider = (*fakeProvider)(nil)

// ReadsMany: the fake offers no ReadMany call (batching does), so ReadMany
// reads one after the other, as the plugin host does for such a provider.
func (p *fakeProvider) ReadsMany() bool { return false }

func (p *fakeProvider) ReadMany(ctx context.Context, reqs []*providers.ReadRequest) ([]pluginhost.ReadResult, error) {
	out := make([]pluginhost.ReadResult, len(reqs))
	for i, r := range reqs {
		out[i].Response, out[i].Err = p.Read(ctx, r)
	}
	return out, nil
}

// ValidatesMany: as ReadsMany, for ValidateMany.
func (p *fakeProvider) ValidatesMany() bool { return false }

func (p *fakeProvider) ValidateMany(ctx context.Context, reqs []*providers.ValidateResourceRequest) ([]pluginhost.ValidateResult, error) {
	out := make([]pluginhost.ValidateResult, len(reqs))
	for i, r := range reqs {
		out[i].Diagnostics, out[i].Err = p.ValidateResource(ctx, r)
	}
	return out, nil
}

func (p *fakeProvider) Source() string { return p.source }

func (p *fakeProvider) Protocol() int { return grpcv1.ProtocolVersion }

func (p *fakeProvider) Schema() *providers.GetSchemaResponse {
	var rts []providers.ResourceType
	p.w.mu.Lock()
	coexist := p.w.coexist
	p.w.mu.Unlock()
	for _, t := range fakeTypes {
		rt := providers.ResourceType{Name: t, Attributes: []providers.Attribute{
			{Name: "size", Type: providers.TypeNumber},
			{Name: "zone", Type: providers.TypeString, ForceNew: true},
		}}
		if coexist {
			rt.Coexistence = providers.Coexistence{WhenDiffers: []string{"zone"}}
		}
		rts = append(rts, rt)
	}
	p.w.mu.Lock()
	legacy, keyless := p.w.legacy || p.w.keyless, p.w.keyless
	readsBack, deletesBack := p.w.readBack != nil && !p.w.unasked, p.w.deleteBack != nil && !p.w.unasked
	data, schemaOnly, checksKeys := p.w.dataSources, p.w.schemaValidated, p.w.checksKeys
	p.w.mu.Unlock()
	p.w.mu.Lock()
	version := cmp.Or(p.w.version, "0.0.1")
	p.w.mu.Unlock()
	sc := &providers.GetSchemaResponse{ProviderName: "fake", ProviderVersion: version, ResourceTypes: rts,
		Capabilities: providers.Capabilities{IdempotencyKeys: !legacy, Keyless: keyless, Import: true, CreateReadsBack: readsBack, DeleteReadsBack: deletesBack, ReadData: data, SchemaValidation: schemaOnly, DeleteChecksKey: checksKeys}}
	if data {
		sc.DataSources = []providers.DataSourceType{fakeLookup}
	}
	return sc
}

func (p *fakeProvider) ValidateResource(_ context.Context, req *providers.ValidateResourceRequest) (providers.Diagnostics, error) {
	if !slices.Contains(fakeTypes, req.Type) {
		return nil, fmt.Errorf("unknown resource type %q", req.Type)
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	p.w.validations = append(p.w.validations, req.Name)
	if p.w.warnOn != nil && fmt.Sprint(req.Config["size"]) == fmt.Sprint(p.w.warnOn) {
		return providers.Diagnostics{{Severity: providers.SeverityWarning, Summary: "size is unusual", AttributePath: []string{"size"}}}, nil
	}
	return nil, nil
}

// find is Read's lookup; w.mu must be held.
func (w *fakeWorld) find(id, key, typ, name string, cfg map[string]any) *fakeResource {
	switch {
	case id != "":
		return w.resources[id]
	case key != "":
		for _, r := range w.resources {
			if r.Key == key {
				return r
			}
		}
		return nil
	}
	return w.byTypeName(typ, name, cfg)
}

// byTypeName finds by identity: (type, name), and the zone cfg gives when
// resources coexist.
func (w *fakeWorld) byTypeName(typ, name string, cfg map[string]any) *fakeResource {
	for _, r := range w.resources {
		if r.Type == typ && r.Name == name && (!w.coexist || fmt.Sprint(r.Attrs["zone"]) == fmt.Sprint(cfg["zone"])) {
			return r
		}
	}
	return nil
}

func (p *fakeProvider) Read(_ context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	p.w.mu.Lock()
	hook := p.w.onRead
	p.w.mu.Unlock()
	if hook != nil {
		hook(req.Name)
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	if p.w.keyless && req.ID == "" {
		// As tfplugin.Adapter: nothing to look up by but the state's id.
		if req.IdempotencyKey != "" {
			return nil, errors.New("the provider takes no idempotency key")
		}
		return &providers.ReadResponse{}, nil
	}
	if req.ID != "" {
		p.w.readPrivate[req.Name] = string(req.Private)
		p.w.readsByID++
		if p.w.failReadIDs[req.Name] {
			return nil, fmt.Errorf("read %s: the API is unavailable", req.Name)
		}
	}
	r := p.w.find(req.ID, req.IdempotencyKey, req.Type, req.Name, req.Config)
	if r == nil {
		return &providers.ReadResponse{}, nil
	}
	key := r.Key
	if p.w.legacy || p.w.keyless {
		key = ""
	}
	resp := &providers.ReadResponse{Exists: true, ID: r.ID, Attributes: maps.Clone(r.Attrs), IdempotencyKey: key}
	if p.w.readsAnswerPrivate {
		resp.Private = []byte("read " + r.ID)
	}
	return resp, nil
}

func (p *fakeProvider) Import(_ context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error) {
	p.w.mu.Lock()
	hook := p.w.onImport
	p.w.mu.Unlock()
	if hook != nil {
		hook(req.Name)
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	p.w.importCalls++
	r := p.w.resources[req.ID]
	if r == nil || r.Type != req.Type {
		return &providers.ImportResponse{}, nil
	}
	if p.w.legacy || p.w.keyless {
		// A provider written before keys: it reports none, stamps none.
		return &providers.ImportResponse{Exists: true, ID: r.ID, Attributes: maps.Clone(r.Attrs)}, nil
	}
	claimed := false
	if req.ClaimKey != "" {
		if !providers.Claimable(r.Key, req.ClaimKey, req.ReplacesKey) {
			return nil, providers.Conflict(fmt.Sprintf("%s %s carries another claim", r.Type, r.Name), r.Key)
		}
		r.Key, claimed = req.ClaimKey, true
		p.w.claims = append(p.w.claims, fakeCall{Name: req.Name, Type: r.Type, ID: r.ID, Key: req.ClaimKey})
	}
	return &providers.ImportResponse{Exists: true, ID: r.ID, Attributes: maps.Clone(r.Attrs), IdempotencyKey: r.Key, Claimed: claimed}, nil
}

// ReadData reads the data source lookup: the resource of the world of the
// given type and name (an error diagnostic when there is none).
func (p *fakeProvider) ReadData(_ context.Context, req *providers.ReadDataRequest) (*providers.ReadDataResponse, error) {
	p.w.mu.Lock()
	hook := p.w.onReadData
	p.w.mu.Unlock()
	if hook != nil {
		hook(req.Name)
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	if !p.w.dataSources {
		return nil, fmt.Errorf("read data %s: %w", req.Name, providers.ErrUnsupported)
	}
	p.w.dataReads = append(p.w.dataReads, req.Name)
	if req.Type != "lookup" {
		return nil, fmt.Errorf("unknown data source type %q", req.Type)
	}
	typ, _ := req.Config["type"].(string)
	name, _ := req.Config["name"].(string)
	r := p.w.byTypeName(typ, name, nil)
	if r == nil {
		return &providers.ReadDataResponse{Diagnostics: providers.Diagnostics{providers.Errorf("no %s named %q", typ, name)}}, nil
	}
	attrs := map[string]any{"type": typ, "name": name, "id": r.ID, "arn": fmt.Sprintf("mock:%s:%s:%s", typ, name, r.ID), "secret": "s3cr3t-of-" + r.ID}
	for _, k := range []string{"size", "zone", "tags"} {
		if v, ok := r.Attrs[k]; ok {
			attrs[k] = v
		}
	}
	return &providers.ReadDataResponse{Attributes: attrs}, nil
}

// Release gives up a claim as the real providers do: what carries the key
// carries it released from then on. A legacy fake cannot.

func (p *fakeProvider) Release(_ context.Context, req *providers.ReleaseRequest) (*providers.ReleaseResponse, error) {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	if p.w.legacy || p.w.keyless || p.w.noRelease {
		return nil, fmt.Errorf("release %s: %w", req.Name, providers.ErrReleaseUnsupported)
	}
	r := p.w.resources[req.ID]
	switch {
	case r == nil, r.Key == providers.ReleasedKey(req.Key):
	case r.Key != req.Key:
		return nil, providers.Conflict(fmt.Sprintf("%s %s carries another claim", r.Type, r.Name), r.Key)
	default:
		r.Key = providers.ReleasedKey(req.Key)
	}
	return &providers.ReleaseResponse{Released: true}, nil
}

func (p *fakeProvider) Create(ctx context.Context, req *providers.CreateRequest) (resp *providers.CreateResponse, err error) {
	cfg := normalizeAttrs(req.Config)
	p.w.mu.Lock()
	hook := p.w.onCreate
	held, waiting := p.w.heldBack[req.Name], p.w.heldWaiting
	p.w.mu.Unlock()
	if held {
		waiting <- req.Name
	}
	if stop := providers.SendStopOf(ctx).Stopped(); held && stop != nil {
		select {
		case <-stop:
			return nil, fmt.Errorf("create %s: waiting for the provider's rate limit: %w", req.Name, providers.ErrNotSent)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if hook != nil {
		hook(req.Name)
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	call := fakeCall{Name: req.Name, Type: req.Type, Key: req.IdempotencyKey, Protection: req.Protection, Config: maps.Clone(cfg)}
	defer func() {
		call.Err = err
		if resp != nil {
			call.ID = resp.ID
		}
		p.w.creates = append(p.w.creates, call)
	}()
	if req.IdempotencyKey != "" {
		for _, r := range p.w.resources {
			if r.Key == req.IdempotencyKey {
				if r.Type != req.Type || r.Name != req.Name {
					return nil, fmt.Errorf("create %s: key %q already made %s %s", req.Name, req.IdempotencyKey, r.Type, r.Name)
				}
				return &providers.CreateResponse{ID: r.ID, Attributes: maps.Clone(r.Attrs), Private: fakePrivate(r)}, nil
			}
		}
	}
	if p.w.failCreate[req.Name] {
		return nil, fmt.Errorf("injected failure: create %s", req.Name)
	}
	if r := p.w.byTypeName(req.Type, req.Name, cfg); r != nil {
		if p.w.conflictID {
			// The id of what holds the identity beside the conflict, as a
			// careless provider might answer.
			return &providers.CreateResponse{ID: r.ID, Attributes: maps.Clone(r.Attrs)},
				providers.Diagnostics{providers.Conflict(fmt.Sprintf("%s %s already exists", req.Type, req.Name), r.Key)}
		}
		return nil, fmt.Errorf("%s %s already exists (id %s)", req.Type, req.Name, r.ID)
	}
	p.w.seq++
	r := &fakeResource{ID: fmt.Sprintf("fake-%s-%s-%d", req.Type, req.Name, p.w.seq), Type: req.Type, Name: req.Name, Key: req.IdempotencyKey, Attrs: cfg}
	p.w.resources[r.ID] = r
	resp = &providers.CreateResponse{ID: r.ID, Attributes: maps.Clone(r.Attrs), Private: fakePrivate(r)}
	if (req.ReadBack || p.w.unasked) && p.w.readBack != nil {
		resp.ReadBack = p.w.readBack(r)
	}
	return resp, nil
}

func (p *fakeProvider) Update(_ context.Context, req *providers.UpdateRequest) (resp *providers.UpdateResponse, err error) {
	cfg := normalizeAttrs(req.Config)
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	call := fakeCall{Name: req.Name, Type: req.Type, ID: req.ID, Protection: req.Protection, Config: maps.Clone(cfg), Private: string(req.Private)}
	defer func() {
		call.Err = err
		p.w.updates = append(p.w.updates, call)
	}()
	r := p.w.byTypeName(req.Type, req.Name, cfg)
	if req.ID != "" {
		r = p.w.resources[req.ID]
	}
	if r == nil || r.Type != req.Type {
		return nil, fmt.Errorf("update %s: %s (id %q) does not exist", req.Name, req.Type, req.ID)
	}
	if !reflect.DeepEqual(r.Attrs["zone"], cfg["zone"]) {
		return nil, fmt.Errorf("update %s: zone is force_new: %v -> %v", req.Name, r.Attrs["zone"], cfg["zone"])
	}
	r.Attrs = cfg
	resp = &providers.UpdateResponse{Attributes: maps.Clone(cfg)}
	if p.w.updateBack != nil {
		resp.ReadBack = p.w.updateBack(r)
	}
	return resp, nil
}

func (p *fakeProvider) Delete(_ context.Context, req *providers.DeleteRequest) (resp *providers.DeleteResponse, err error) {
	p.w.mu.Lock()
	hook := p.w.onDelete
	p.w.mu.Unlock()
	if hook != nil {
		hook(req.Name)
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	call := fakeCall{Name: req.Name, Type: req.Type, ID: req.ID, Protection: req.Protection, Private: string(req.Private), Observed: req.Observed, ExpectedKey: req.ExpectedKey}
	defer func() {
		call.Err = err
		p.w.deletes = append(p.w.deletes, call)
	}()
	// Deliberately no refusal of ProtectionProtected here: see fakeWorld.
	if p.w.failDelete[req.Name] > 0 {
		p.w.failDelete[req.Name]--
		return nil, fmt.Errorf("injected failure: delete %s", req.Name)
	}
	r := p.w.byTypeName(req.Type, req.Name, req.Attributes)
	if req.ID != "" {
		r = p.w.resources[req.ID]
	}
	if r != nil && req.ExpectedKey != "" && r.Key != req.ExpectedKey {
		return nil, providers.Diagnostics{{Severity: providers.SeverityError, Summary: "delete " + req.Name + ": carries " + r.Key, Code: providers.CodeConflict}}
	}
	if r != nil && !p.w.keepDelete[req.Name] {
		delete(p.w.resources, r.ID)
	}
	resp = &providers.DeleteResponse{}
	if (req.ReadBack || p.w.unasked) && p.w.deleteBack != nil {
		resp.ReadBack = p.w.deleteBack(req.Name)
	}
	return resp, nil
}

// fakePrivate is the private data the fake keeps with what it made: its
// id and the key it was made under.
func fakePrivate(r *fakeResource) []byte { return []byte("made " + r.ID + " under " + r.Key) }

// ReadPrivate is the private data the last Read of name by id carried.
func (w *fakeWorld) ReadPrivate(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.readPrivate[name]
}

// normalizeAttrs is a JSON round trip without nil values, as over the wire.
func normalizeAttrs(a map[string]any) map[string]any {
	out := map[string]any{}
	if len(a) == 0 {
		return out
	}
	b, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	for k, v := range m {
		if v != nil {
			out[k] = v
		}
	}
	return out
}

// names returns the names of calls, in order.
func names(calls []fakeCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Name
	}
	return out
}

// succeeded keeps the calls the fake answered without an error.
func succeeded(calls []fakeCall) []fakeCall {
	var out []fakeCall
	for _, c := range calls {
		if c.Err == nil {
			out = append(out, c)
		}
	}
	return out
}
