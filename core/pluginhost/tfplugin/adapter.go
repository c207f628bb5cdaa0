package tfplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// TerraformVersion is the version the host gives a provider's
// ConfigureProvider as Terraform's own: the protocol features it behaves as
// (the newest Terraform whose protocol the host speaks).
const TerraformVersion = "1.11.4"

// Adapter is a Terraform-protocol provider as the host drives every
// provider (providers.Interface): each of bulwark's calls becomes the calls
// Terraform makes for the same step.
//
//   - Read is ReadResource of the state recorded, upgraded first through
//     the provider (UpgradeResourceState, which Terraform calls on every
//     refresh; here for a state written at an older schema version, see
//     prior), then, given a Config, the provider's own plan toward it
//     (PlanResourceChange): ReadResponse.Planned says which attributes that
//     plan changes and which force a replace, so the provider's defaults
//     and normalisation are its own, not a diff of bulwark's.
//   - Create, Update and Delete plan and apply (PlanResourceChange, then
//     ApplyResourceChange). An Update applies the plan its Check's Read
//     made when its request is that plan's byte for byte (see plans):
//     the provider plans an update once, not twice.
//   - The resource's Terraform state rides in the private data the host
//     keeps with each resource (sealed in the state like a sensitive value,
//     since it may hold secrets), beside the provider's own private data
//     and the schema version it was written at: Read, Update and Delete get
//     it back. A resource with no private data (imported by id) is read by
//     its id.
//
// These providers take no idempotency key and stamp nothing bulwark can
// read (Capabilities.IdempotencyKeys is false, Keyless is true): a Read
// asked to find what a Create under a key made cannot, and says so, never
// answering "nothing there" (which would let a resume make a second one).
type Adapter struct {
	p       *Provider
	name    string
	version string
	// providerConfig is the configuration Configure gave the provider
	// (Terraform's JSON encoding), part of every noChangeKey: a provider's
	// plan may depend on it (default tags, a region). Nil before Configure.
	providerConfig atomic.Pointer[[]byte]
	// plans are the plans of in-place changes that Reads made, for the
	// Updates that apply exactly them (see plans).
	plans plans
}

// NewAdapter wraps p; name and version are the provider's (from its source
// address and the version found), for GetSchema.
func NewAdapter(p *Provider, name, version string) *Adapter {
	return &Adapter{p: p, name: name, version: version}
}

var _ providers.Interface = (*Adapter)(nil)

// Provider is the protocol client underneath.
func (a *Adapter) Provider() *Provider { return a.p }

// envelope is the private data the host keeps for a resource of a
// Terraform-protocol provider. Format 2 is binary (see marshal): its
// fields as they are, each after its length, with no JSON to scan nor
// base64 to decode on every read, and smaller to seal and store. Format 1,
// which bulwark wrote before, is JSON (the tags), and still read.
type envelope struct {
	// Format marks the envelope (and its version).
	Format string `json:"bulwark_tfstate"`
	// SchemaVersion is the resource type's schema version State was
	// written at.
	SchemaVersion int64 `json:"schema_version"`
	// State is the resource's state in Terraform's JSON state encoding.
	State json.RawMessage `json:"state"`
	// Msgpack (format 2) is the same state in the wire's msgpack encoding
	// for the type at SchemaVersion: what a read, update or delete at
	// that version sends as it is, and decodes, instead of decoding
	// State's JSON (cty's JSON decoder costs several times its msgpack
	// one, on every resource of every plan). State stays beside it:
	// UpgradeResourceState takes JSON, and only JSON says the state's
	// shape once the schema has moved on. Format 1 has none.
	Msgpack []byte `json:"-"`
	// Type (format 2) is the typeDigest of the type Msgpack was encoded
	// for: when it is still the schema's, the bytes are sent back as they
	// are, and decoded only when needed; else (an attribute added without
	// a new schema version) they are decoded, the missing attributes
	// null, and encoded again.
	Type string `json:"-"`
	// Private is the provider's own private data.
	Private []byte `json:"private,omitempty"`
	// NoChange is the noChangeKey of the config the provider planned no
	// change toward from State and Private, right after applying it (see
	// settled): a read that finds the same state, private data and config
	// takes that plan for its own. "" when none was made.
	NoChange string `json:"no_change,omitempty"`
}

// envelopeFormat is the format written; envelopeFormat1's (JSON, no
// Msgpack, a "v1:" NoChange key) is still read.
const (
	envelopeFormat  = "2"
	envelopeFormat1 = "1"
)

// envelopeMagic starts a format 2 envelope (a format 1 one, JSON, starts
// with "{").
const envelopeMagic = "\xb7tf2"

// marshal is e in format 2: envelopeMagic, SchemaVersion as a varint, then
// State, Msgpack, Type, Private and NoChange, each its length as a uvarint
// and its bytes.
func (e *envelope) marshal() []byte {
	b := make([]byte, 0, len(envelopeMagic)+6*binary.MaxVarintLen64+len(e.State)+len(e.Msgpack)+len(e.Type)+len(e.Private)+len(e.NoChange))
	b = append(b, envelopeMagic...)
	b = binary.AppendVarint(b, e.SchemaVersion)
	b = appendField(b, e.State)
	b = appendField(b, e.Msgpack)
	b = appendField(b, e.Type)
	b = appendField(b, e.Private)
	return appendField(b, e.NoChange)
}

func appendField[T ~[]byte | ~string](b []byte, f T) []byte {
	b = binary.AppendUvarint(b, uint64(len(f)))
	return append(b, f...)
}

// parseEnvelope2 reads marshal's format: every field there, nothing after
// them. The fields are b's own bytes (b is not changed after).
func parseEnvelope2(b []byte) (*envelope, bool) {
	b = b[len(envelopeMagic):]
	version, n := binary.Varint(b)
	if n <= 0 {
		return nil, false
	}
	b = b[n:]
	var fields [5][]byte
	for i := range fields {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, false
		}
		if l > 0 {
			fields[i] = b[n : n+int(l) : n+int(l)]
		}
		b = b[n+int(l):]
	}
	if len(b) != 0 || len(fields[0]) == 0 {
		return nil, false
	}
	return &envelope{Format: envelopeFormat, SchemaVersion: version, State: fields[0], Msgpack: fields[1],
		Type: string(fields[2]), Private: fields[3], NoChange: string(fields[4])}, true
}

// wval is a value of a resource type beside its msgpack encoding, once
// made or as the provider sent it (nil: not yet): a value that several
// calls of a step send is encoded once, and a state the provider answered
// is sent back in its own bytes.
type wval struct {
	v  cty.Value
	mp []byte
	// lazy: v is not decoded from mp yet (see value).
	lazy bool
}

// value is w's value, decoded from its msgpack when it was not yet.
func (w *wval) value(s *Schema) (cty.Value, error) {
	if w.lazy {
		v, err := DecodeDynamic(w.mp, nil, s.ImpliedType())
		if err != nil {
			return cty.NilVal, err
		}
		w.v, w.lazy = v, false
	}
	return w.v, nil
}

// encoded is w's msgpack encoding, made now if it was not.
func (w *wval) encoded(s *Schema) ([]byte, error) {
	if w.mp == nil {
		b, err := wireValue(w.v, nil, s)
		if err != nil {
			return nil, err
		}
		w.mp = b
	}
	return w.mp, nil
}

// newEnvelope is the envelope of state (format 2).
func newEnvelope(s *Schema, state *wval, private []byte) (envelope, error) {
	js, err := StateJSON(state.v, s.ImpliedType())
	if err != nil {
		return envelope{}, err
	}
	mp, err := state.encoded(s)
	if err != nil {
		return envelope{}, err
	}
	return envelope{Format: envelopeFormat, SchemaVersion: s.Version, State: js, Msgpack: mp, Type: s.Block.typeDigest(), Private: private}, nil
}

func (a *Adapter) seal(s *Schema, state *wval, private []byte) ([]byte, error) {
	e, err := newEnvelope(s, state, private)
	if err != nil {
		return nil, err
	}
	return e.marshal(), nil
}

// settled seals what an apply made (state, private) toward cfg: the
// provider is asked to plan from it toward cfg once more, as bulwark's
// Verify does, and when it plans no change the envelope remembers so
// (envelope.NoChange), so that every later read that finds the same state,
// private data and config takes that plan without another call. A
// provider whose plan then changes something is left for Verify to find.
//
// The answer is also the step's Verify read (the host compares it instead
// of reading again, as a read-back: CreateResponse.ReadBack): the state
// ApplyResourceChange answered, with that plan as its Planned, plus the
// attributes where the state differs from what the provider planned
// (planned, when known: Terraform's "inconsistent result after apply";
// not for a provider on the legacy type system, which Terraform too only
// logs). verified is false when no plan could be made (a config not wholly
// known, before Configure) or it failed: Verify then reads.
func (a *Adapter) settled(ctx context.Context, s *Schema, typ string, state *wval, private []byte, cfg *wval, planned cty.Value, legacy bool) (resp *providers.ReadResponse, verified bool, err error) {
	e, err := newEnvelope(s, state, private)
	if err != nil {
		return nil, false, err
	}
	var after *providers.Planned
	if key, ok := a.noChangeKey(typ, s, cfg, &e); ok {
		p, diags, err := a.plan(ctx, s, typ, state, private, cfg, false)
		if err != nil {
			return nil, false, err
		}
		if p != nil && !diags.HasError() {
			after = p
			if len(p.Changes) == 0 && len(p.RequiresReplace) == 0 {
				e.NoChange = key
			}
		}
	}
	resp, err = a.answerSealed(state.v, e.marshal())
	if err != nil || after == nil {
		return resp, false, err
	}
	if !legacy {
		after.Changes = mergeNames(after.Changes, inconsistent(planned, state.v))
	}
	resp.Planned = after
	return resp, true, nil
}

// inconsistent are the top-level attributes whose planned value was known
// and the applied state's is not that value: what Terraform reports as a
// provider's "inconsistent result after apply". A value planned unknown
// (wholly or in part) may come back as anything.
func inconsistent(planned, state cty.Value) []string {
	if planned == cty.NilVal || planned.IsNull() || !planned.IsKnown() || state.IsNull() || !planned.Type().IsObjectType() {
		return nil
	}
	var out []string
	for _, n := range sortedKeys(planned.Type().AttributeTypes()) {
		was := planned.GetAttr(n)
		if !was.IsWhollyKnown() || !state.Type().HasAttribute(n) {
			continue
		}
		if !was.RawEquals(state.GetAttr(n)) {
			out = append(out, n)
		}
	}
	return out
}

// mergeNames is a and b, sorted, each name once.
func mergeNames(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, n := range append(append([]string(nil), a...), b...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// noChangeKey is the key a plan of no change is remembered under in e: the
// provider (its address and version, and its configuration), the type and
// its schema version, the config, and the state and private data planned
// from (e's). A format 2 envelope's key ("v2:") takes the config and the
// state in msgpack, the encodings the plan sends anyway; a format 1
// envelope's ("v1:", as it was written) in JSON. false for a config not
// wholly known, or before Configure.
func (a *Adapter) noChangeKey(typ string, s *Schema, cfg *wval, e *envelope) (string, bool) {
	pc := a.providerConfig.Load()
	if pc == nil || !cfg.v.IsWhollyKnown() {
		return "", false
	}
	version := []byte(strconv.FormatInt(s.Version, 10))
	if e.Format == envelopeFormat1 {
		cj, err := StateJSON(cfg.v, s.ImpliedType())
		if err != nil {
			return "", false
		}
		return "v1:" + hex.EncodeToString(digest([]byte(a.name), []byte(a.version), *pc, []byte(typ), version, cj, e.State, e.Private)), true
	}
	cm, err := cfg.encoded(s)
	if err != nil {
		return "", false
	}
	return "v2:" + base64.RawURLEncoding.EncodeToString(digest([]byte(a.name), []byte(a.version), *pc, []byte(typ), version, cm, e.Msgpack, e.Private)), true
}

// planKey is the key a plan of r is remembered under for the apply that
// takes it (see plans): the provider (its address and version, and its
// configuration), the type's schema version, and the request as the wire
// sends it (prior state, proposed new state, config, private data,
// provider_meta). false for a config not wholly known (Terraform plans
// again at apply for what was unknown at plan time), or before Configure.
func (a *Adapter) planKey(s *Schema, cfg cty.Value, r rawPlan) (string, bool) {
	pc := a.providerConfig.Load()
	if pc == nil || !cfg.IsWhollyKnown() {
		return "", false
	}
	// Kept in memory only: the digest's bytes as they are.
	return "p1:" + string(digest([]byte(a.name), []byte(a.version), *pc, []byte(r.typeName), []byte(strconv.FormatInt(s.Version, 10)),
		r.prior, r.proposed, r.config, r.priorPrivate, r.meta)), true
}

// digest is the SHA-256 of parts, each prefixed by its length (so that no
// two lists of parts run together the same).
func digest(parts ...[]byte) []byte {
	h := sha256.New()
	var n [24]byte
	for _, part := range parts {
		h.Write(append(strconv.AppendInt(n[:0], int64(len(part)), 10), ':'))
		h.Write(part)
	}
	return h.Sum(make([]byte, 0, sha256.Size))
}

// openEnvelope reads an envelope of either format.
func openEnvelope(b []byte) (*envelope, bool) {
	if len(b) == 0 {
		return nil, false
	}
	if bytes.HasPrefix(b, []byte(envelopeMagic)) {
		return parseEnvelope2(b)
	}
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil || len(e.State) == 0 || e.Format != envelopeFormat1 {
		return nil, false
	}
	return &e, true
}

// GetSchema describes the provider's resource types with the host's
// attribute kinds: a nested block is a map (single, group) or a list
// (list, set) of maps, or a map of them; its inner shape is checked by
// ValidateResource against the provider's own schema.
func (a *Adapter) GetSchema(ctx context.Context, _ *providers.GetSchemaRequest) (*providers.GetSchemaResponse, error) {
	ps, err := a.p.Schema(ctx)
	if err != nil {
		var diags providers.Diagnostics
		if ps != nil {
			diags = ps.Diagnostics
		}
		if len(diags) > 0 {
			return &providers.GetSchemaResponse{Diagnostics: diags}, nil
		}
		return nil, err
	}
	resp := &providers.GetSchemaResponse{
		ProviderName: a.name, ProviderVersion: a.version,
		Capabilities: providers.Capabilities{Import: true, Keyless: true},
		Diagnostics:  ps.Diagnostics,
	}
	names := make([]string, 0, len(ps.ResourceTypes))
	for n := range ps.ResourceTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := ps.ResourceTypes[n]
		resp.ResourceTypes = append(resp.ResourceTypes, providers.ResourceType{
			Name: n, Description: s.Block.Description, Attributes: hostAttributes(s.Block),
		})
	}
	for _, n := range sortedKeys(ps.DataSources) {
		s := ps.DataSources[n]
		resp.DataSources = append(resp.DataSources, providers.DataSourceType{
			Name: n, Description: s.Block.Description, Attributes: hostAttributes(s.Block),
		})
	}
	resp.Capabilities.ReadData = len(resp.DataSources) > 0
	if ps.Provider != nil && ps.Provider.Block != nil {
		resp.ProviderConfig = hostAttributes(ps.Provider.Block)
		if resp.ProviderConfig == nil {
			resp.ProviderConfig = []providers.Attribute{}
		}
	}
	return resp, nil
}

// hostAttributes are b's attributes and nested blocks as the host's
// schema check sees them.
func hostAttributes(b *Block) []providers.Attribute {
	if b == nil {
		return nil
	}
	var out []providers.Attribute
	for _, n := range b.AttributeNames() {
		at := b.Attributes[n]
		out = append(out, providers.Attribute{
			Name: n, Type: hostKind(at.ImpliedType()),
			Required: at.Required,
			// Optional and computed: the spec may set it, or leave it to
			// the provider.
			Computed: at.Computed && !at.Optional && !at.Required,
			// A nested attribute with a sensitive attribute anywhere
			// inside is sealed and masked whole, as a block is.
			Sensitive:   at.Sensitive || objectSensitive(at.NestedType),
			Description: at.Description,
		})
	}
	for _, n := range b.BlockTypeNames() {
		nb := b.BlockTypes[n]
		kind := providers.TypeList
		switch nb.Nesting {
		case NestingSingle, NestingGroup, NestingMap:
			kind = providers.TypeMap
		}
		out = append(out, providers.Attribute{
			Name: n, Type: kind, Required: nb.MinItems > 0,
			Sensitive:   blockSensitive(nb.Block),
			Description: nb.Block.Description,
		})
	}
	return out
}

// blockSensitive: a block with a sensitive attribute anywhere is sealed and
// masked whole.
func blockSensitive(b *Block) bool {
	for _, at := range b.Attributes {
		if at.Sensitive {
			return true
		}
	}
	for _, nb := range b.BlockTypes {
		if blockSensitive(nb.Block) {
			return true
		}
	}
	return false
}

// objectSensitive: a nested attribute's object has a sensitive attribute
// anywhere.
func objectSensitive(o *Object) bool {
	if o == nil {
		return false
	}
	for _, at := range o.Attributes {
		if at.Sensitive || objectSensitive(at.NestedType) {
			return true
		}
	}
	return false
}

func hostKind(ty cty.Type) providers.AttributeType {
	switch {
	case ty == cty.String:
		return providers.TypeString
	case ty == cty.Number:
		return providers.TypeNumber
	case ty == cty.Bool:
		return providers.TypeBool
	case ty.IsListType(), ty.IsSetType(), ty.IsTupleType():
		return providers.TypeList
	case ty.IsMapType(), ty.IsObjectType():
		return providers.TypeMap
	}
	return providers.TypeUnspecified
}

// values converts with the planner's unknown marker recognised in a
// configuration (any value that prints as "(known after apply)").
var values = Values{IsUnknown: func(v any) bool {
	s, ok := v.(fmt.Stringer)
	return ok && s.String() == UnknownText
}}

// config is cfg as the type's object.
func (a *Adapter) config(ctx context.Context, typ string, cfg providers.Attributes) (*Schema, cty.Value, providers.Diagnostics, error) {
	_, s, err := a.p.resourceSchema(ctx, typ)
	if err != nil {
		return nil, cty.NilVal, nil, err
	}
	v, err := configObject(cfg, s.ImpliedType())
	if err != nil {
		return s, cty.NilVal, pathDiagnostics(err), nil
	}
	return s, v, nil, nil
}

// configObject is a configuration as the object of type ty: none is an
// object of nulls (a configuration is never null, only a destroy's).
func configObject(cfg providers.Attributes, ty cty.Type) (cty.Value, error) {
	if cfg == nil {
		cfg = providers.Attributes{}
	}
	return values.ObjectFromAttributes(cfg, ty)
}

// pathDiagnostics is a conversion error as a diagnostic at its attribute.
func pathDiagnostics(err error) providers.Diagnostics {
	var pe cty.PathError
	if errors.As(err, &pe) {
		return providers.Diagnostics{providers.AttributeErrorf(PathStrings(pe.Path), "%s", pe.Error())}
	}
	return providers.Diagnostics{providers.Errorf("%s", err.Error())}
}

func (a *Adapter) Configure(ctx context.Context, req *providers.ConfigureRequest) (*providers.ConfigureResponse, error) {
	ps, err := a.p.Schema(ctx)
	if err != nil {
		return nil, err
	}
	ty := cty.EmptyObject
	if ps.Provider != nil && ps.Provider.Block != nil {
		ty = ps.Provider.ImpliedType()
	}
	cfg, err := configObject(req.Config, ty)
	if err != nil {
		return &providers.ConfigureResponse{Diagnostics: pathDiagnostics(err)}, nil
	}
	v, err := a.p.ValidateProviderConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if v.Diagnostics.HasError() {
		return &providers.ConfigureResponse{Diagnostics: v.Diagnostics}, nil
	}
	if v.PreparedConfig != cty.NilVal && !v.PreparedConfig.IsNull() {
		cfg = v.PreparedConfig
	}
	ds, err := a.p.Configure(ctx, TerraformVersion, cfg)
	if err != nil {
		return nil, err
	}
	if !ds.HasError() {
		if js, err := StateJSON(cfg, ty); err == nil {
			a.providerConfig.Store(&js)
		}
	}
	return &providers.ConfigureResponse{Diagnostics: append(v.Diagnostics, ds...)}, nil
}

func (a *Adapter) ValidateResource(ctx context.Context, req *providers.ValidateResourceRequest) (*providers.ValidateResourceResponse, error) {
	_, cfg, diags, err := a.config(ctx, req.Type, req.Config)
	if err != nil || diags.HasError() {
		return &providers.ValidateResourceResponse{Diagnostics: diags}, err
	}
	ds, err := a.p.ValidateResourceConfig(ctx, req.Type, cfg)
	if err != nil {
		return nil, err
	}
	return &providers.ValidateResourceResponse{Diagnostics: ds}, nil
}

// prior is the state recorded for a resource: from its envelope, upgraded
// through the provider; else, with an id, an object holding only it (what
// Terraform's import hands ReadResource); else null.
func (a *Adapter) prior(ctx context.Context, s *Schema, typ, id string, private []byte) (*wval, []byte, providers.Diagnostics, error) {
	e, _ := openEnvelope(private)
	v, p, _, diags, err := a.priorDecoded(ctx, s, typ, id, e)
	if err != nil || diags.HasError() {
		return nil, nil, diags, err
	}
	if _, err := v.value(s); err != nil {
		return nil, nil, nil, fmt.Errorf("%s recorded state: %w", typ, err)
	}
	return v, p, diags, nil
}

// priorDecoded is prior from the envelope opened already (nil: none),
// also answering the envelope when the state is its own, decoded at the
// schema version it was written at (so the envelope still says exactly
// it); nil else. The value may be lazy (see wval.value).
func (a *Adapter) priorDecoded(ctx context.Context, s *Schema, typ, id string, e *envelope) (*wval, []byte, *envelope, providers.Diagnostics, error) {
	ty := s.ImpliedType()
	if e != nil {
		if e.SchemaVersion == s.Version && len(e.Msgpack) > 0 {
			// Its msgpack: what its JSON decodes to (both were encoded
			// from one value), without cty's JSON decoder. Encoded for
			// the type the schema has now, it is sent as it is and
			// decoded only when needed; else decoded (an attribute added
			// since is null, as from the JSON) and encoded again. One
			// that does not decode goes the JSON's way.
			if e.Type != "" && e.Type == s.Block.typeDigest() {
				return &wval{mp: e.Msgpack, lazy: true}, e.Private, e, nil, nil
			}
			if v, err := DecodeDynamic(e.Msgpack, nil, ty); err == nil {
				return &wval{v: v}, e.Private, e, nil, nil
			}
		}
		if e.SchemaVersion == s.Version {
			// Written from the provider's own answer at the schema version
			// it has now: decoded with that schema's type it is what its
			// UpgradeResourceState answers for a current version (both
			// frameworks decode the JSON with the current schema; an
			// attribute added since reads as null, as there), without one
			// more round trip on every read, update and delete. A state
			// that does not decode so (an attribute the schema no longer
			// has) goes through the provider, as any older one.
			if v, err := ParseStateJSON(e.State, ty); err == nil {
				return &wval{v: v}, e.Private, e, nil, nil
			}
		}
		up, err := a.p.UpgradeResourceState(ctx, typ, e.SchemaVersion, e.State)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if up.Diagnostics.HasError() {
			return nil, nil, nil, up.Diagnostics, nil
		}
		return &wval{v: up.UpgradedState}, e.Private, nil, up.Diagnostics, nil
	}
	if id != "" && ty.IsObjectType() && ty.HasAttribute("id") {
		attrs := map[string]cty.Value{}
		for n, at := range ty.AttributeTypes() {
			attrs[n] = cty.NullVal(at)
		}
		attrs["id"] = cty.StringVal(id)
		return &wval{v: cty.ObjectVal(attrs)}, nil, nil, nil, nil
	}
	return &wval{v: cty.NullVal(ty)}, nil, nil, nil, nil
}

// ErrNoIdempotencyKeys is the error of a Read asked to find what a Create
// under an idempotency key made: a Terraform-protocol provider takes no
// key, so only a person can say whether that Create made anything.
var ErrNoIdempotencyKeys = errors.New("the provider takes no idempotency key: what an interrupted Create made cannot be looked up")

func (a *Adapter) Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error) {
	_, s, err := a.p.resourceSchema(ctx, req.Type)
	if err != nil {
		return nil, err
	}
	opened, recorded := openEnvelope(req.Private)
	if !recorded && req.ID == "" {
		if req.IdempotencyKey != "" {
			return nil, fmt.Errorf("%s %s: %w", req.Type, req.Name, ErrNoIdempotencyKeys)
		}
		// Nothing recorded and nothing to look up by: bulwark's state is
		// the only record of what these providers made for it.
		return &providers.ReadResponse{}, nil
	}
	prior, private, decoded, diags, err := a.priorDecoded(ctx, s, req.Type, req.ID, opened)
	if err != nil || diags.HasError() {
		return &providers.ReadResponse{Diagnostics: diags}, err
	}
	if _, err := prior.encoded(s); err != nil {
		return nil, err
	}
	rr, err := a.p.ReadResource(ctx, ReadResourceRequest{TypeName: req.Type, CurrentState: prior.v, Private: private, currentMP: prior.mp})
	if err != nil {
		return nil, err
	}
	diags = append(diags, rr.Diagnostics...)
	if diags.HasError() {
		return &providers.ReadResponse{Diagnostics: diags}, nil
	}
	if rr.NewState.IsNull() {
		return &providers.ReadResponse{Diagnostics: diags}, nil
	}
	var resp *providers.ReadResponse
	// The state now, in the bytes the envelope answered holds: the
	// recorded ones when nothing moved, else the provider's.
	now := &wval{v: rr.NewState, mp: rr.newStateMP}
	unmoved := decoded != nil && bytes.Equal(rr.Private, private)
	if unmoved && (len(rr.newStateMP) == 0 || !bytes.Equal(rr.newStateMP, prior.mp)) {
		// Not the same bytes: the same value? (The same bytes are,
		// decoded with one type, and the recorded ones need no decoding.)
		pv, err := prior.value(s)
		if err != nil {
			return nil, fmt.Errorf("%s %s recorded state: %w", req.Type, req.Name, err)
		}
		unmoved = rr.NewState.RawEquals(pv)
	}
	if unmoved {
		// Nothing moved: the recorded envelope is kept byte for byte, not
		// encoded again on every read of a no-op.
		now = &wval{v: rr.NewState, mp: prior.mp}
		resp, err = a.answerSealed(rr.NewState, req.Private)
	} else {
		resp, err = a.answer(s, now, rr.Private)
	}
	if err != nil {
		return nil, err
	}
	resp.Diagnostics = diags
	if req.Config == nil {
		return resp, nil
	}
	cv, err := configObject(req.Config, s.ImpliedType())
	if err != nil {
		resp.Diagnostics = append(resp.Diagnostics, pathDiagnostics(err)...)
		return resp, nil
	}
	cfg := &wval{v: cv}
	if unmoved && decoded.NoChange != "" {
		if key, ok := a.noChangeKey(req.Type, s, cfg, decoded); ok && key == decoded.NoChange {
			// The provider planned no change from this very state,
			// private data and config, under this provider version and
			// configuration, when it was applied (see settled): its plan
			// is that again, without asking.
			resp.Planned = &providers.Planned{Changes: []string{}, RequiresReplace: []string{}}
			return resp, nil
		}
	}
	// An update's Check: the Update that follows applies this plan
	// (remembered), not another of the same.
	planned, pdiags, err := a.plan(ctx, s, req.Type, now, rr.Private, cfg, true)
	if err != nil {
		return nil, err
	}
	resp.Diagnostics = append(resp.Diagnostics, pdiags...)
	resp.Planned = planned
	return resp, nil
}

// answer is a resource's state as the host records it.
func (a *Adapter) answer(s *Schema, state *wval, private []byte) (*providers.ReadResponse, error) {
	sealed, err := a.seal(s, state, private)
	if err != nil {
		return nil, err
	}
	return a.answerSealed(state.v, sealed)
}

// answerSealed is answer with the envelope already sealed.
func (a *Adapter) answerSealed(state cty.Value, sealed []byte) (*providers.ReadResponse, error) {
	attrs, err := AttributesFromObject(state)
	if err != nil {
		return nil, err
	}
	id, _ := attrs["id"].(string)
	return &providers.ReadResponse{Exists: true, ID: id, Attributes: attrs, Private: sealed}, nil
}

// plan is the provider's plan from state toward cfg: the top-level
// attributes it changes and those of them that force a replace. With
// remember, a plan that changes something in place is kept for the
// Update that applies it (see plans).
func (a *Adapter) plan(ctx context.Context, s *Schema, typ string, st *wval, private []byte, cw *wval, remember bool) (*providers.Planned, providers.Diagnostics, error) {
	state, cfg := st.v, cw.v
	if _, err := st.encoded(s); err != nil {
		return nil, nil, err
	}
	if _, err := cw.encoded(s); err != nil {
		return nil, nil, err
	}
	r, ty, err := a.p.encodePlan(ctx, PlanResourceChangeRequest{
		TypeName: typ, PriorState: state, ProposedNewState: ProposedNew(s.Block, state, cfg), Config: cfg, PriorPrivate: private,
		priorMP: st.mp, configMP: cw.mp,
	})
	if err != nil {
		return nil, nil, err
	}
	pr, err := a.p.planEncoded(ctx, r, ty, st)
	if err != nil {
		return nil, nil, err
	}
	if pr.Diagnostics.HasError() {
		return nil, pr.Diagnostics, nil
	}
	out := &providers.Planned{Changes: []string{}, RequiresReplace: []string{}}
	for _, n := range s.Block.attributeNames() {
		was, will := state.GetAttr(n), pr.PlannedState.GetAttr(n)
		if !will.IsWhollyKnown() || !was.RawEquals(will) {
			out.Changes = append(out.Changes, n)
		}
	}
	seen := map[string]bool{}
	for _, p := range pr.RequiresReplace {
		ps := PathStrings(p)
		if len(ps) == 0 || seen[ps[0]] {
			continue
		}
		seen[ps[0]] = true
		out.RequiresReplace = append(out.RequiresReplace, ps[0])
	}
	sort.Strings(out.RequiresReplace)
	if len(out.RequiresReplace) > 0 && len(out.Changes) == 0 {
		out.Changes = append(out.Changes, out.RequiresReplace...)
	}
	if remember && len(out.Changes) > 0 && len(out.RequiresReplace) == 0 && !state.IsNull() {
		if key, ok := a.planKey(s, cfg, r); ok {
			a.plans.put(key, pr)
		}
	}
	return out, pr.Diagnostics, nil
}

// apply plans the change from prior to cfg (null: a destroy) and applies
// it. The response's planned is the state the provider planned (null for
// a destroy). An update whose plan a Read made for exactly this request
// applies that plan (see plans) instead of planning it again.
func (a *Adapter) apply(ctx context.Context, s *Schema, typ string, pw *wval, private []byte, cw *wval) (*applied, providers.Diagnostics, error) {
	ty := s.ImpliedType()
	prior, cfg := pw.v, cw.v
	if _, err := pw.encoded(s); err != nil {
		return nil, nil, err
	}
	if _, err := cw.encoded(s); err != nil {
		return nil, nil, err
	}
	planned, plannedPrivate := &wval{v: cty.NullVal(ty)}, private
	var diags providers.Diagnostics
	ps, err := a.p.Schema(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !cfg.IsNull() || ps.Capabilities.PlanDestroy {
		proposed, proposedMP := cty.NullVal(ty), []byte(nil)
		switch {
		case cfg.IsNull():
		case prior.IsNull():
			// A create proposes its config as it is (see ProposedNew):
			// the same bytes.
			proposed, proposedMP = cfg, cw.mp
		default:
			proposed = ProposedNew(s.Block, prior, cfg)
		}
		r, rty, err := a.p.encodePlan(ctx, PlanResourceChangeRequest{TypeName: typ, PriorState: prior, ProposedNewState: proposed, Config: cfg, PriorPrivate: private,
			priorMP: pw.mp, proposedMP: proposedMP, configMP: cw.mp})
		if err != nil {
			return nil, nil, err
		}
		var pr *PlanResourceChangeResponse
		if !cfg.IsNull() && !prior.IsNull() {
			if key, ok := a.planKey(s, cfg, r); ok {
				pr, _ = a.plans.take(key)
			}
		}
		if pr == nil {
			if pr, err = a.p.planEncoded(ctx, r, rty, nil); err != nil {
				return nil, nil, err
			}
		}
		diags = append(diags, pr.Diagnostics...)
		if pr.Diagnostics.HasError() {
			return nil, diags, nil
		}
		planned, plannedPrivate = &wval{v: pr.PlannedState, mp: pr.plannedMP}, pr.PlannedPrivate
	}
	ar, err := a.p.ApplyResourceChange(ctx, ApplyResourceChangeRequest{TypeName: typ, PriorState: prior, PlannedState: planned.v, Config: cfg, PlannedPrivate: plannedPrivate,
		priorMP: pw.mp, plannedMP: planned.mp, configMP: cw.mp})
	if err != nil {
		return nil, nil, err
	}
	return &applied{ApplyResourceChangeResponse: ar, planned: planned.v, newState: &wval{v: ar.NewState, mp: ar.newStateMP}}, append(diags, ar.Diagnostics...), nil
}

// applied is what apply made, beside the state it planned.
type applied struct {
	*ApplyResourceChangeResponse
	planned cty.Value
	// newState is NewState in the provider's own encoding.
	newState *wval
}

// Create plans and applies a create. A create that fails after the
// provider made something (Terraform's tainted result) answers what was
// made beside its error diagnostics: the host records it, so that it is
// compensated under the ladder, never forgotten.
func (a *Adapter) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	s, cv, diags, err := a.config(ctx, req.Type, req.Config)
	if err != nil || diags.HasError() {
		return &providers.CreateResponse{Diagnostics: diags}, err
	}
	cfg := &wval{v: cv}
	ar, diags, err := a.apply(ctx, s, req.Type, &wval{v: cty.NullVal(s.ImpliedType())}, nil, cfg)
	if err != nil {
		return nil, err
	}
	if ar == nil || ar.NewState.IsNull() {
		return &providers.CreateResponse{Diagnostics: diags}, nil
	}
	made, verified, err := a.made(ctx, s, req.Type, ar, cfg, diags)
	if err != nil {
		return nil, err
	}
	resp := &providers.CreateResponse{ID: made.ID, Attributes: made.Attributes, Private: made.Private, Diagnostics: diags}
	if verified {
		// The read-back costs no call: it is what the provider answered
		// and planned (see settled), so it is given unasked.
		resp.ReadBack = made
	}
	return resp, nil
}

// made is the answer to a create's or update's apply: settled (and
// verified, see there) when it succeeded, else only sealed (what a failed
// apply left is recorded, and nothing verifies it).
func (a *Adapter) made(ctx context.Context, s *Schema, typ string, ar *applied, cfg *wval, diags providers.Diagnostics) (*providers.ReadResponse, bool, error) {
	if diags.HasError() {
		resp, err := a.answer(s, ar.newState, ar.Private)
		return resp, false, err
	}
	return a.settled(ctx, s, typ, ar.newState, ar.Private, cfg, ar.planned, ar.LegacyTypeSystem)
}

func (a *Adapter) Update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error) {
	s, cv, diags, err := a.config(ctx, req.Type, req.Config)
	if err != nil || diags.HasError() {
		return &providers.UpdateResponse{Diagnostics: diags}, err
	}
	cfg := &wval{v: cv}
	prior, private, diags, err := a.prior(ctx, s, req.Type, req.ID, req.Private)
	if err != nil || diags.HasError() {
		return &providers.UpdateResponse{Diagnostics: diags}, err
	}
	if prior.v.IsNull() {
		return &providers.UpdateResponse{Diagnostics: providers.Diagnostics{providers.Errorf("%s %s: no state recorded to update", req.Type, req.Name)}}, nil
	}
	ar, ds, err := a.apply(ctx, s, req.Type, prior, private, cfg)
	if err != nil {
		return nil, err
	}
	diags = append(diags, ds...)
	if ar == nil || ar.NewState.IsNull() {
		return &providers.UpdateResponse{Diagnostics: diags}, nil
	}
	made, verified, err := a.made(ctx, s, req.Type, ar, cfg, diags)
	if err != nil {
		return nil, err
	}
	resp := &providers.UpdateResponse{Attributes: made.Attributes, Private: made.Private, Diagnostics: diags}
	if verified {
		resp.ReadBack = made
	}
	return resp, nil
}

// Delete destroys the resource: deleting what is gone succeeds. The
// protection level is enforced by the host's deletion path before this is
// called (these plugins have no sdk.Serve to check it a second time).
func (a *Adapter) Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error) {
	_, s, err := a.p.resourceSchema(ctx, req.Type)
	if err != nil {
		return nil, err
	}
	prior, private, diags, err := a.prior(ctx, s, req.Type, req.ID, req.Private)
	if err != nil || diags.HasError() {
		return &providers.DeleteResponse{Diagnostics: diags}, err
	}
	if prior.v.IsNull() {
		return &providers.DeleteResponse{Diagnostics: diags}, nil
	}
	if req.Observed {
		// The host's Check read it just now (the envelope is that read's
		// answer) and found it there: that read is the one Terraform makes
		// before a destroy, not made a second time.
		return a.destroy(ctx, s, req.Type, prior, private, diags)
	}
	// Read first: what is gone already is deleted (and a provider asked
	// to destroy a missing object may fail).
	rr, err := a.p.ReadResource(ctx, ReadResourceRequest{TypeName: req.Type, CurrentState: prior.v, Private: private, currentMP: prior.mp})
	if err != nil {
		return nil, err
	}
	if rr.Diagnostics.HasError() {
		return &providers.DeleteResponse{Diagnostics: append(diags, rr.Diagnostics...)}, nil
	}
	if rr.NewState.IsNull() {
		// Gone already: what Verify's read would find too.
		return &providers.DeleteResponse{Diagnostics: diags, ReadBack: &providers.ReadResponse{}}, nil
	}
	return a.destroy(ctx, s, req.Type, &wval{v: rr.NewState, mp: rr.newStateMP}, rr.Private, diags)
}

// destroy plans and applies the destroy of what state and private are.
func (a *Adapter) destroy(ctx context.Context, s *Schema, typ string, state *wval, private []byte, diags providers.Diagnostics) (*providers.DeleteResponse, error) {
	ar, ds, err := a.apply(ctx, s, typ, state, private, &wval{v: cty.NullVal(s.ImpliedType())})
	if err != nil {
		return nil, err
	}
	resp := &providers.DeleteResponse{Diagnostics: append(diags, ds...)}
	if ar != nil && !resp.Diagnostics.HasError() && ar.NewState.IsNull() {
		// The provider answered that nothing is left (a null new state,
		// which is how Terraform takes a destroy to be done): the
		// read-back Verify takes, given unasked since it costs no call.
		resp.ReadBack = &providers.ReadResponse{}
	}
	return resp, nil
}

// Import takes over a resource by its id (ImportResourceState, then
// ReadResource, as Terraform does). It stamps no claim: these providers
// keep none (Claimed stays false, and the backend's record of claims is
// what refuses a second import).
func (a *Adapter) Import(ctx context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error) {
	_, s, err := a.p.resourceSchema(ctx, req.Type)
	if err != nil {
		return nil, err
	}
	ir, err := a.p.ImportResourceState(ctx, req.Type, req.ID)
	if err != nil {
		return nil, err
	}
	if ir.Diagnostics.HasError() {
		return &providers.ImportResponse{Diagnostics: ir.Diagnostics}, nil
	}
	for _, im := range ir.Imported {
		if im.TypeName != req.Type {
			continue
		}
		rr, err := a.p.ReadResource(ctx, ReadResourceRequest{TypeName: req.Type, CurrentState: im.State, Private: im.Private})
		if err != nil {
			return nil, err
		}
		diags := append(ir.Diagnostics, rr.Diagnostics...)
		if rr.Diagnostics.HasError() || rr.NewState.IsNull() {
			return &providers.ImportResponse{Diagnostics: diags}, nil
		}
		made, err := a.answer(s, &wval{v: rr.NewState, mp: rr.newStateMP}, rr.Private)
		if err != nil {
			return nil, err
		}
		return &providers.ImportResponse{Exists: true, ID: made.ID, Attributes: made.Attributes, Private: made.Private, Diagnostics: diags}, nil
	}
	return &providers.ImportResponse{Diagnostics: ir.Diagnostics}, nil
}

func (a *Adapter) Release(context.Context, *providers.ReleaseRequest) (*providers.ReleaseResponse, error) {
	return nil, providers.ErrReleaseUnsupported
}

// ReadData reads a data source as Terraform does at plan time: the
// configuration checked by the provider (ValidateDataSourceConfig, or
// ValidateDataResourceConfig in protocol 6), then ReadDataSource. Its
// sensitive attributes are those the schema (GetSchema's DataSources)
// marks, which the host seals. A deferred answer (the host tells the
// provider it takes none) is an error naming the data source.
func (a *Adapter) ReadData(ctx context.Context, req *providers.ReadDataRequest) (*providers.ReadDataResponse, error) {
	_, s, err := a.p.dataSchema(ctx, req.Type)
	if err != nil {
		return nil, fmt.Errorf("read data %s: %w", req.Name, err)
	}
	fail := func(diags providers.Diagnostics) (*providers.ReadDataResponse, error) {
		return &providers.ReadDataResponse{Diagnostics: diags}, nil
	}
	// What Terraform checks before the provider sees a data block: no
	// result (an attribute only the provider sets) in the configuration.
	var diags providers.Diagnostics
	for _, at := range hostAttributes(s.Block) {
		if v, set := req.Config[at.Name]; set && v != nil && at.Computed {
			diags = append(diags, providers.AttributeErrorf([]string{at.Name}, "attribute %q of data source %s is read from the provider and cannot be set", at.Name, req.Type))
		}
	}
	if diags.HasError() {
		return fail(diags)
	}
	cfg, err := configObject(req.Config, s.ImpliedType())
	if err != nil {
		return fail(pathDiagnostics(err))
	}
	if !cfg.IsWhollyKnown() {
		return fail(providers.Diagnostics{providers.Errorf("data %s: its configuration is not known until apply; a data source is read at plan time", req.Name)})
	}
	diags, err = a.p.ValidateDataSourceConfig(ctx, req.Type, cfg)
	if err != nil {
		return nil, err
	}
	if diags.HasError() {
		return fail(diags)
	}
	rr, err := a.p.ReadDataSource(ctx, req.Type, cfg)
	if err != nil {
		return nil, err
	}
	diags = append(diags, rr.Diagnostics...)
	for i, d := range diags {
		if d.Summary == deferredSummary {
			diags[i].Summary = fmt.Sprintf("the provider deferred reading data %s (%s)", req.Name, req.Type)
		}
	}
	if diags.HasError() {
		return fail(diags)
	}
	if rr.State.IsNull() || !rr.State.IsWhollyKnown() {
		return fail(append(diags, providers.Errorf("data %s: the provider's %s answered no known value", req.Name, req.Type)))
	}
	attrs, err := AttributesFromObject(rr.State)
	if err != nil {
		return nil, fmt.Errorf("read data %s: %w", req.Name, err)
	}
	return &providers.ReadDataResponse{Attributes: attrs, Diagnostics: diags}, nil
}

func (a *Adapter) ValidateMany(context.Context, *providers.ValidateManyRequest) (*providers.ValidateManyResponse, error) {
	return nil, fmt.Errorf("ValidateMany: %w", providers.ErrUnsupported)
}

func (a *Adapter) ReadMany(context.Context, *providers.ReadManyRequest) (*providers.ReadManyResponse, error) {
	return nil, fmt.Errorf("ReadMany: %w", providers.ErrUnsupported)
}

func (a *Adapter) CreateMany(context.Context, *providers.CreateManyRequest) (*providers.CreateManyResponse, error) {
	return nil, fmt.Errorf("CreateMany: %w", providers.ErrUnsupported)
}
