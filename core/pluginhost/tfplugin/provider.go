package tfplugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-plugin"
	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// ErrNoSuchType is wrapped by the error of a call for a resource type or
// data source the provider's schema does not have.
var ErrNoSuchType = errors.New("no such type in the provider's schema")

// Provider is one connection to a provider speaking Terraform's plugin
// protocol 5 or 6: the same methods whatever the version, each one call.
// Values are cty values of the types the provider's schema implies (see
// Block.ImpliedType); the Provider encodes and decodes them. The error of
// a method is for what fails the call itself (transport, encoding, an
// unknown type); what the provider reports is in the response's
// Diagnostics, with their attribute paths. Methods are safe for concurrent
// use.
type Provider struct {
	w       wire
	version int
	client  *plugin.Client // set by Start; nil for NewProvider's
	pid     int

	mu     sync.Mutex
	schema *ProviderSchema // read once (see Schema)
}

// Version is the protocol version spoken: 5 or 6.
func (p *Provider) Version() int { return p.version }

// PID is the provider process's id (0 when not started by Start).
func (p *Provider) PID() int { return p.pid }

// Exited reports whether the provider process has exited (false when not
// started by Start).
func (p *Provider) Exited() bool { return p.client != nil && p.client.Exited() }

// Close ends the provider process started by Start (go-plugin asks it to
// stop, then kills it). It is safe to call more than once.
func (p *Provider) Close() {
	if p.client != nil {
		p.client.Kill()
	}
}

// Schema returns the provider's schema, reading it on the first call
// (GetProviderSchema) and keeping it: a failed read, or one whose
// diagnostics hold an error, is not kept. Every other method needs it
// for its types and reads it the same way.
func (p *Provider) Schema(ctx context.Context) (*ProviderSchema, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.schema != nil {
		return p.schema, nil
	}
	s, err := p.w.getSchema(ctx)
	if err != nil {
		return nil, err
	}
	if !s.Diagnostics.HasError() {
		if s.meta, err = providerMeta(s); err == nil {
			s.metaSet = true
		}
		p.schema = s
	}
	return s, nil
}

// schemaOK is Schema for the other calls: a schema with errors is an error.
func (p *Provider) schemaOK(ctx context.Context) (*ProviderSchema, error) {
	s, err := p.Schema(ctx)
	if err != nil {
		return nil, err
	}
	if s.Diagnostics.HasError() {
		return nil, fmt.Errorf("provider schema: %w", s.Diagnostics)
	}
	return s, nil
}

func (p *Provider) resourceSchema(ctx context.Context, typeName string) (*ProviderSchema, *Schema, error) {
	s, err := p.schemaOK(ctx)
	if err != nil {
		return nil, nil, err
	}
	rs, ok := s.ResourceTypes[typeName]
	if !ok {
		return nil, nil, fmt.Errorf("resource type %q: %w", typeName, ErrNoSuchType)
	}
	return s, rs, nil
}

func (p *Provider) dataSchema(ctx context.Context, typeName string) (*ProviderSchema, *Schema, error) {
	s, err := p.schemaOK(ctx)
	if err != nil {
		return nil, nil, err
	}
	ds, ok := s.DataSources[typeName]
	if !ok {
		return nil, nil, fmt.Errorf("data source %q: %w", typeName, ErrNoSuchType)
	}
	return s, ds, nil
}

// wireValue is v's msgpack encoding for rs's type: mp when the caller has
// it already (v as the provider sent it, or as encoded for an earlier call
// of the same step: a value sent in several calls is encoded once), the
// schema's null when v is null, else encoded now.
func wireValue(v cty.Value, mp []byte, rs *Schema) ([]byte, error) {
	if len(mp) > 0 {
		return mp, nil
	}
	if v.Type() == cty.NilType || (!v.IsMarked() && v.IsNull()) {
		if null := rs.Block.nullMsgpack(); null != nil {
			return null, nil
		}
	}
	return EncodeMsgpack(v, rs.ImpliedType())
}

// providerMeta is what Terraform sends as provider_meta: the null value of
// the provider's provider_meta schema when it has one (bulwark has no
// provider_meta blocks), else nothing.
func providerMeta(s *ProviderSchema) ([]byte, error) {
	if s.metaSet {
		return s.meta, nil
	}
	if s.ProviderMeta == nil || s.ProviderMeta.Block == nil {
		return nil, nil
	}
	ty := s.ProviderMeta.ImpliedType()
	return EncodeMsgpack(cty.NullVal(ty), ty)
}

// ValidateProviderConfigResponse answers ValidateProviderConfig.
type ValidateProviderConfigResponse struct {
	// PreparedConfig is protocol 5's prepared_config (the configuration
	// with the provider's defaults); under protocol 6, the configuration
	// given. Terraform ignores it and configures with the configuration
	// given; so should a caller.
	PreparedConfig cty.Value
	Diagnostics    providers.Diagnostics
}

// ValidateProviderConfig checks the provider's configuration
// (PrepareProviderConfig in protocol 5, ValidateProviderConfig in 6).
// config is of the provider schema's implied type; it may hold unknowns.
func (p *Provider) ValidateProviderConfig(ctx context.Context, config cty.Value) (*ValidateProviderConfigResponse, error) {
	s, err := p.schemaOK(ctx)
	if err != nil {
		return nil, err
	}
	ty := s.Provider.ImpliedType()
	cfg, err := EncodeMsgpack(config, ty)
	if err != nil {
		return nil, fmt.Errorf("provider config: %w", err)
	}
	prepared, ds, err := p.w.validateProviderConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	out := &ValidateProviderConfigResponse{PreparedConfig: config, Diagnostics: ds}
	if !prepared.empty() {
		if out.PreparedConfig, err = prepared.decode(ty); err != nil {
			return nil, fmt.Errorf("prepared provider config: %w", err)
		}
	}
	return out, nil
}

// Configure configures the provider (Configure in protocol 5,
// ConfigureProvider in 6) with config, of the provider schema's implied
// type and wholly known. terraformVersion is what the provider is told
// Terraform's version is (some providers put it in a user agent or check
// it): "" sends none.
func (p *Provider) Configure(ctx context.Context, terraformVersion string, config cty.Value) (providers.Diagnostics, error) {
	s, err := p.schemaOK(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := EncodeMsgpack(config, s.Provider.ImpliedType())
	if err != nil {
		return nil, fmt.Errorf("provider config: %w", err)
	}
	return p.w.configure(ctx, terraformVersion, cfg)
}

// ValidateResourceConfig checks a resource's configuration
// (ValidateResourceTypeConfig in protocol 5, ValidateResourceConfig in 6).
// config is of the type's implied type; it may hold unknowns.
func (p *Provider) ValidateResourceConfig(ctx context.Context, typeName string, config cty.Value) (providers.Diagnostics, error) {
	_, rs, err := p.resourceSchema(ctx, typeName)
	if err != nil {
		return nil, err
	}
	cfg, err := EncodeMsgpack(config, rs.ImpliedType())
	if err != nil {
		return nil, fmt.Errorf("%s config: %w", typeName, err)
	}
	return p.w.validateResourceConfig(ctx, typeName, cfg)
}

// ValidateDataSourceConfig checks a data source's configuration
// (ValidateDataSourceConfig in protocol 5, ValidateDataResourceConfig in
// 6).
func (p *Provider) ValidateDataSourceConfig(ctx context.Context, typeName string, config cty.Value) (providers.Diagnostics, error) {
	_, ds, err := p.dataSchema(ctx, typeName)
	if err != nil {
		return nil, err
	}
	cfg, err := EncodeMsgpack(config, ds.ImpliedType())
	if err != nil {
		return nil, fmt.Errorf("%s config: %w", typeName, err)
	}
	return p.w.validateDataSourceConfig(ctx, typeName, cfg)
}

// UpgradeResourceStateResponse answers UpgradeResourceState.
type UpgradeResourceStateResponse struct {
	// UpgradedState is the state in the type's current schema.
	UpgradedState cty.Value
	Diagnostics   providers.Diagnostics
}

// UpgradeResourceState asks the provider to bring a stored state, written
// under schema version version, to its current schema. rawJSON is the
// state in Terraform's JSON state encoding (see StateJSON; the plain JSON
// of the attributes for a type without dynamically typed ones). Terraform
// calls it for every stored state it reads, of the current version too,
// so the provider may normalise it; so should a caller.
func (p *Provider) UpgradeResourceState(ctx context.Context, typeName string, version int64, rawJSON []byte) (*UpgradeResourceStateResponse, error) {
	_, rs, err := p.resourceSchema(ctx, typeName)
	if err != nil {
		return nil, err
	}
	dv, ds, err := p.w.upgradeResourceState(ctx, typeName, version, rawJSON)
	if err != nil {
		return nil, err
	}
	out := &UpgradeResourceStateResponse{Diagnostics: ds}
	if out.UpgradedState, err = dv.decode(rs.ImpliedType()); err != nil {
		return nil, fmt.Errorf("%s upgraded state: %w", typeName, err)
	}
	return out, nil
}

// ReadResourceRequest asks for a managed resource as it is now.
type ReadResourceRequest struct {
	TypeName string
	// CurrentState is the state recorded (of the type's implied type).
	CurrentState cty.Value
	// Private is the private data recorded with it (nil: none).
	Private []byte

	// currentMP is CurrentState already encoded (see wireValue).
	currentMP []byte
}

// ReadResourceResponse is what ReadResource found.
type ReadResourceResponse struct {
	// NewState is the resource as it is; null: it no longer exists.
	NewState cty.Value
	// Private is the private data to record with it from now on.
	Private     []byte
	Diagnostics providers.Diagnostics

	// newStateMP is NewState as the provider encoded it (see wireValue).
	newStateMP []byte
}

// ReadResource refreshes a managed resource's state.
func (p *Provider) ReadResource(ctx context.Context, req ReadResourceRequest) (*ReadResourceResponse, error) {
	s, rs, err := p.resourceSchema(ctx, req.TypeName)
	if err != nil {
		return nil, err
	}
	ty := rs.ImpliedType()
	cur, err := wireValue(req.CurrentState, req.currentMP, rs)
	if err != nil {
		return nil, fmt.Errorf("%s current state: %w", req.TypeName, err)
	}
	meta, err := providerMeta(s)
	if err != nil {
		return nil, err
	}
	r, err := p.w.readResource(ctx, req.TypeName, cur, req.Private, meta)
	if err != nil {
		return nil, err
	}
	out := &ReadResourceResponse{Private: r.private, Diagnostics: r.diags, newStateMP: r.state.msgpack}
	if out.NewState, err = r.state.decode(ty); err != nil {
		return nil, fmt.Errorf("%s new state: %w", req.TypeName, err)
	}
	return out, nil
}

// PlanResourceChangeRequest asks the provider to plan a change: a create
// (PriorState null), an update, or a destroy (ProposedNewState and Config
// null). Terraform plans a destroy through the provider only when its
// ServerCapabilities.PlanDestroy says so; otherwise it applies a null
// planned state without asking.
type PlanResourceChangeRequest struct {
	TypeName string
	// PriorState is the state recorded (null: none, a create).
	PriorState cty.Value
	// ProposedNewState is Terraform's proposal: the configuration, with the
	// prior state's values where the configuration leaves a computed
	// attribute null (see ProposedNew). Null: a destroy.
	ProposedNewState cty.Value
	// Config is the configuration (may hold unknowns; null: a destroy).
	Config cty.Value
	// PriorPrivate is the private data recorded with the prior state.
	PriorPrivate []byte

	// priorMP, proposedMP and configMP are PriorState, ProposedNewState
	// and Config already encoded (see wireValue).
	priorMP, proposedMP, configMP []byte
}

// PlanResourceChangeResponse is the provider's plan.
type PlanResourceChangeResponse struct {
	// PlannedState is the state the apply is to reach: unknown where the
	// provider cannot say before it applies (a computed attribute of a
	// create). Null for a destroy.
	PlannedState cty.Value
	// RequiresReplace are the paths whose change means the resource must
	// be replaced, not updated in place (empty: an update or no change).
	// Providers on terraform-plugin-sdk/v2 list "id" beside the attribute
	// that forces it (the new id is unknown): any entry means a replace.
	RequiresReplace []cty.Path
	// PlannedPrivate is given back to ApplyResourceChange.
	PlannedPrivate []byte
	// LegacyTypeSystem is set by providers on terraform-plugin-sdk (v2 and
	// older): Terraform then tolerates an applied state that differs from
	// the plan (it only logs it), since that SDK cannot always keep its
	// plans (a null optional attribute planned comes back "", 0 or false).
	// A Verify against the plan should do the same.
	LegacyTypeSystem bool
	Diagnostics      providers.Diagnostics

	// plannedMP is PlannedState as the provider encoded it (see
	// wireValue).
	plannedMP []byte
}

// PlanResourceChange asks the provider to plan a change.
func (p *Provider) PlanResourceChange(ctx context.Context, req PlanResourceChangeRequest) (*PlanResourceChangeResponse, error) {
	r, ty, err := p.encodePlan(ctx, req)
	if err != nil {
		return nil, err
	}
	return p.planEncoded(ctx, r, ty, nil)
}

// encodePlan is req as the wire sends it, and the type its values are of:
// the bytes a plan is remembered by (see Adapter.remembered), which
// planEncoded then sends without encoding them again.
func (p *Provider) encodePlan(ctx context.Context, req PlanResourceChangeRequest) (rawPlan, cty.Type, error) {
	s, rs, err := p.resourceSchema(ctx, req.TypeName)
	if err != nil {
		return rawPlan{}, cty.NilType, err
	}
	ty := rs.ImpliedType()
	var r rawPlan
	r.typeName, r.priorPrivate = req.TypeName, req.PriorPrivate
	if r.prior, err = wireValue(req.PriorState, req.priorMP, rs); err != nil {
		return rawPlan{}, cty.NilType, fmt.Errorf("%s prior state: %w", req.TypeName, err)
	}
	if r.proposed, err = wireValue(req.ProposedNewState, req.proposedMP, rs); err != nil {
		return rawPlan{}, cty.NilType, fmt.Errorf("%s proposed new state: %w", req.TypeName, err)
	}
	if r.config, err = wireValue(req.Config, req.configMP, rs); err != nil {
		return rawPlan{}, cty.NilType, fmt.Errorf("%s config: %w", req.TypeName, err)
	}
	if r.meta, err = providerMeta(s); err != nil {
		return rawPlan{}, cty.NilType, err
	}
	return r, ty, nil
}

// planEncoded sends a plan request encodePlan made. When the provider
// plans exactly known's bytes (a plan of no change, planning the prior
// state it was sent), the planned state is known's value, not decoded
// again (nil: decoded).
func (p *Provider) planEncoded(ctx context.Context, r rawPlan, ty cty.Type, known *wval) (*PlanResourceChangeResponse, error) {
	resp, err := p.w.planResourceChange(ctx, r)
	if err != nil {
		return nil, err
	}
	out := &PlanResourceChangeResponse{RequiresReplace: resp.requiresReplace, PlannedPrivate: resp.private,
		LegacyTypeSystem: resp.legacy, Diagnostics: resp.diags, plannedMP: resp.state.msgpack}
	if known != nil && !known.lazy && len(known.mp) > 0 && bytes.Equal(resp.state.msgpack, known.mp) {
		// The same bytes decode, with the same type, to the same value.
		out.PlannedState = known.v
		return out, nil
	}
	if out.PlannedState, err = resp.state.decode(ty); err != nil {
		return nil, fmt.Errorf("%s planned state: %w", r.typeName, err)
	}
	return out, nil
}

// ApplyResourceChangeRequest asks the provider to make a planned change.
type ApplyResourceChangeRequest struct {
	TypeName string
	// PriorState is the state recorded (null: a create).
	PriorState cty.Value
	// PlannedState is PlanResourceChange's (null: a destroy).
	PlannedState cty.Value
	// Config is the configuration, wholly known (null: a destroy).
	Config cty.Value
	// PlannedPrivate is PlanResourceChange's.
	PlannedPrivate []byte

	// priorMP, plannedMP and configMP are PriorState, PlannedState and
	// Config already encoded (see wireValue).
	priorMP, plannedMP, configMP []byte
}

// ApplyResourceChangeResponse is what the apply made.
type ApplyResourceChangeResponse struct {
	// NewState is the resource's state now (null: it no longer exists,
	// after a destroy). With error diagnostics, a non-null NewState is
	// what the failed apply left (Terraform records a create's as
	// tainted): it exists and must not be forgotten.
	NewState cty.Value
	// Private is the private data to record with it.
	Private []byte
	// LegacyTypeSystem: see PlanResourceChangeResponse.
	LegacyTypeSystem bool
	Diagnostics      providers.Diagnostics

	// newStateMP is NewState as the provider encoded it (see wireValue).
	newStateMP []byte
}

// ApplyResourceChange makes a planned change.
func (p *Provider) ApplyResourceChange(ctx context.Context, req ApplyResourceChangeRequest) (*ApplyResourceChangeResponse, error) {
	s, rs, err := p.resourceSchema(ctx, req.TypeName)
	if err != nil {
		return nil, err
	}
	ty := rs.ImpliedType()
	var r rawApply
	r.typeName, r.plannedPrivate = req.TypeName, req.PlannedPrivate
	if r.prior, err = wireValue(req.PriorState, req.priorMP, rs); err != nil {
		return nil, fmt.Errorf("%s prior state: %w", req.TypeName, err)
	}
	if r.planned, err = wireValue(req.PlannedState, req.plannedMP, rs); err != nil {
		return nil, fmt.Errorf("%s planned state: %w", req.TypeName, err)
	}
	if r.config, err = wireValue(req.Config, req.configMP, rs); err != nil {
		return nil, fmt.Errorf("%s config: %w", req.TypeName, err)
	}
	if r.meta, err = providerMeta(s); err != nil {
		return nil, err
	}
	resp, err := p.w.applyResourceChange(ctx, r)
	if err != nil {
		return nil, err
	}
	out := &ApplyResourceChangeResponse{Private: resp.private, LegacyTypeSystem: resp.legacy, Diagnostics: resp.diags, newStateMP: resp.state.msgpack}
	if out.NewState, err = resp.state.decode(ty); err != nil {
		return nil, fmt.Errorf("%s new state: %w", req.TypeName, err)
	}
	return out, nil
}

// ImportedResource is one resource an import found. Its State is often
// partial (an id): Terraform reads it (ReadResource) before it records it,
// and so should a caller.
type ImportedResource struct {
	TypeName string
	State    cty.Value
	Private  []byte
}

// ImportResourceStateResponse is what ImportResourceState found.
type ImportResourceStateResponse struct {
	Imported    []ImportedResource
	Diagnostics providers.Diagnostics
}

// ImportResourceState asks the provider for the resource of type typeName
// with the given id (a provider may answer several, of other types).
func (p *Provider) ImportResourceState(ctx context.Context, typeName, id string) (*ImportResourceStateResponse, error) {
	s, _, err := p.resourceSchema(ctx, typeName)
	if err != nil {
		return nil, err
	}
	r, err := p.w.importResourceState(ctx, typeName, id)
	if err != nil {
		return nil, err
	}
	out := &ImportResourceStateResponse{Diagnostics: r.diags}
	for _, ir := range r.imported {
		rs, ok := s.ResourceTypes[ir.typeName]
		if !ok {
			return nil, fmt.Errorf("import %s %q answered resource type %q: %w", typeName, id, ir.typeName, ErrNoSuchType)
		}
		st, err := ir.state.decode(rs.ImpliedType())
		if err != nil {
			return nil, fmt.Errorf("import %s %q: %s state: %w", typeName, id, ir.typeName, err)
		}
		out.Imported = append(out.Imported, ImportedResource{TypeName: ir.typeName, State: st, Private: ir.private})
	}
	return out, nil
}

// ReadDataSourceResponse is what ReadDataSource read.
type ReadDataSourceResponse struct {
	// State is the data source's value: the configuration with its
	// computed attributes filled in.
	State       cty.Value
	Diagnostics providers.Diagnostics
}

// ReadDataSource reads a data source with config (of the data source's
// implied type, wholly known).
func (p *Provider) ReadDataSource(ctx context.Context, typeName string, config cty.Value) (*ReadDataSourceResponse, error) {
	s, ds, err := p.dataSchema(ctx, typeName)
	if err != nil {
		return nil, err
	}
	ty := ds.ImpliedType()
	cfg, err := EncodeMsgpack(config, ty)
	if err != nil {
		return nil, fmt.Errorf("%s config: %w", typeName, err)
	}
	meta, err := providerMeta(s)
	if err != nil {
		return nil, err
	}
	dv, diags, err := p.w.readDataSource(ctx, typeName, cfg, meta)
	if err != nil {
		return nil, err
	}
	out := &ReadDataSourceResponse{Diagnostics: diags}
	if out.State, err = dv.decode(ty); err != nil {
		return nil, fmt.Errorf("%s state: %w", typeName, err)
	}
	return out, nil
}

// Stop asks the provider to stop what it is doing (Stop in protocol 5,
// StopProvider in 6): its calls in flight end early, as on Terraform's
// interrupt. The process goes on running; Close ends it.
func (p *Provider) Stop(ctx context.Context) error {
	msg, err := p.w.stop(ctx)
	if err != nil {
		return err
	}
	if msg != "" {
		return fmt.Errorf("provider stop: %s", msg)
	}
	return nil
}
