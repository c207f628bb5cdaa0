package tfplugin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	pb "github.com/bulwark-iac/bulwark/core/pluginhost/tfplugin/internal/tfplugin6"
	"github.com/bulwark-iac/bulwark/core/providers"
)

// wire6 is protocol 6.
type wire6 struct {
	c pb.ProviderClient
}

// clientCaps5 is what the host tells a provider it supports: no deferred
// changes, no write-only attributes.
func clientCaps6() *pb.ClientCapabilities { return &pb.ClientCapabilities{} }

func dyn6(b []byte) *pb.DynamicValue {
	if b == nil {
		return nil
	}
	return &pb.DynamicValue{Msgpack: b}
}

func fromDyn6(d *pb.DynamicValue) dynamic {
	return dynamic{msgpack: d.GetMsgpack(), json: d.GetJson()}
}

func (w *wire6) getSchema(ctx context.Context) (*ProviderSchema, error) {
	resp, err := w.c.GetProviderSchema(ctx, &pb.GetProviderSchema_Request{})
	if err != nil {
		return nil, err
	}
	out := &ProviderSchema{
		ResourceTypes: make(map[string]*Schema, len(resp.GetResourceSchemas())),
		DataSources:   make(map[string]*Schema, len(resp.GetDataSourceSchemas())),
		Diagnostics:   diags6(resp.GetDiagnostics()),
	}
	if out.Provider, err = schema6(resp.GetProvider()); err != nil {
		return nil, fmt.Errorf("provider schema: %w", err)
	}
	if resp.GetProviderMeta().GetBlock() != nil {
		if out.ProviderMeta, err = schema6(resp.GetProviderMeta()); err != nil {
			return nil, fmt.Errorf("provider_meta schema: %w", err)
		}
	}
	for name, s := range resp.GetResourceSchemas() {
		if out.ResourceTypes[name], err = schema6(s); err != nil {
			return nil, fmt.Errorf("resource type %s schema: %w", name, err)
		}
	}
	for name, s := range resp.GetDataSourceSchemas() {
		if out.DataSources[name], err = schema6(s); err != nil {
			return nil, fmt.Errorf("data source %s schema: %w", name, err)
		}
	}
	if c := resp.GetServerCapabilities(); c != nil {
		out.Capabilities = ServerCapabilities{PlanDestroy: c.PlanDestroy, GetProviderSchemaOptional: c.GetProviderSchemaOptional, MoveResourceState: c.MoveResourceState}
	}
	return out, nil
}

func schema6(s *pb.Schema) (*Schema, error) {
	if s == nil {
		return &Schema{Block: &Block{}}, nil
	}
	b, err := block6(s.GetBlock())
	if err != nil {
		return nil, err
	}
	return &Schema{Version: s.GetVersion(), Block: b}, nil
}

func block6(b *pb.Schema_Block) (*Block, error) {
	out := &Block{
		Attributes:         make(map[string]*Attribute, len(b.GetAttributes())),
		BlockTypes:         make(map[string]*NestedBlock, len(b.GetBlockTypes())),
		Description:        b.GetDescription(),
		DescriptionKind:    StringKind(b.GetDescriptionKind()),
		Deprecated:         b.GetDeprecated(),
		DeprecationMessage: b.GetDeprecationMessage(),
	}
	for _, a := range b.GetAttributes() {
		attr, err := attribute6(a)
		if err != nil {
			return nil, err
		}
		out.Attributes[a.GetName()] = attr
	}
	for _, nb := range b.GetBlockTypes() {
		inner, err := block6(nb.GetBlock())
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", nb.GetTypeName(), err)
		}
		nesting, err := blockNesting6(nb.GetNesting())
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", nb.GetTypeName(), err)
		}
		out.BlockTypes[nb.GetTypeName()] = &NestedBlock{Block: inner, Nesting: nesting, MinItems: nb.GetMinItems(), MaxItems: nb.GetMaxItems()}
	}
	return out, nil
}

func blockNesting6(n pb.Schema_NestedBlock_NestingMode) (NestingMode, error) {
	switch n {
	case pb.Schema_NestedBlock_SINGLE:
		return NestingSingle, nil
	case pb.Schema_NestedBlock_GROUP:
		return NestingGroup, nil
	case pb.Schema_NestedBlock_LIST:
		return NestingList, nil
	case pb.Schema_NestedBlock_SET:
		return NestingSet, nil
	case pb.Schema_NestedBlock_MAP:
		return NestingMap, nil
	}
	return NestingInvalid, fmt.Errorf("nesting mode %v is not known", n)
}

func attribute6(a *pb.Schema_Attribute) (*Attribute, error) {
	out := &Attribute{
		Description:        a.GetDescription(),
		DescriptionKind:    StringKind(a.GetDescriptionKind()),
		Required:           a.GetRequired(),
		Optional:           a.GetOptional(),
		Computed:           a.GetComputed(),
		Sensitive:          a.GetSensitive(),
		Deprecated:         a.GetDeprecated(),
		DeprecationMessage: a.GetDeprecationMessage(),
		WriteOnly:          a.GetWriteOnly(),
	}
	if nt := a.GetNestedType(); nt != nil {
		obj, err := object6(nt)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", a.GetName(), err)
		}
		out.NestedType = obj
		return out, nil
	}
	if err := json.Unmarshal(a.GetType(), &out.Type); err != nil {
		return nil, fmt.Errorf("attribute %s: type %s: %w", a.GetName(), a.GetType(), err)
	}
	return out, nil
}

// object6 is a nested attribute's type (protocol 6 only).
func object6(o *pb.Schema_Object) (*Object, error) {
	out := &Object{Attributes: make(map[string]*Attribute, len(o.GetAttributes()))}
	switch o.GetNesting() {
	case pb.Schema_Object_SINGLE:
		out.Nesting = NestingSingle
	case pb.Schema_Object_LIST:
		out.Nesting = NestingList
	case pb.Schema_Object_SET:
		out.Nesting = NestingSet
	case pb.Schema_Object_MAP:
		out.Nesting = NestingMap
	default:
		return nil, fmt.Errorf("nested attribute nesting mode %v is not known", o.GetNesting())
	}
	for _, a := range o.GetAttributes() {
		attr, err := attribute6(a)
		if err != nil {
			return nil, err
		}
		out.Attributes[a.GetName()] = attr
	}
	return out, nil
}

func diags6(ds []*pb.Diagnostic) providers.Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(providers.Diagnostics, 0, len(ds))
	for _, d := range ds {
		if d == nil {
			continue
		}
		out = append(out, diagnostic(d.GetSeverity() == pb.Diagnostic_WARNING, d.GetSummary(), d.GetDetail(), path6(d.GetAttribute())))
	}
	return out
}

func path6(p *pb.AttributePath) cty.Path {
	if p == nil {
		return nil
	}
	steps := make([]pathStep, 0, len(p.GetSteps()))
	for _, s := range p.GetSteps() {
		switch sel := s.GetSelector().(type) {
		case *pb.AttributePath_Step_AttributeName:
			steps = append(steps, pathStep{selector: 1, name: sel.AttributeName})
		case *pb.AttributePath_Step_ElementKeyString:
			steps = append(steps, pathStep{selector: 2, key: sel.ElementKeyString})
		case *pb.AttributePath_Step_ElementKeyInt:
			steps = append(steps, pathStep{selector: 3, index: sel.ElementKeyInt})
		}
	}
	return toPath(steps)
}

func deferred6(d *pb.Deferred) providers.Diagnostics {
	if d == nil {
		return nil
	}
	return providers.Diagnostics{deferredDiag(d.GetReason().String())}
}

func (w *wire6) validateProviderConfig(ctx context.Context, cfg []byte) (dynamic, providers.Diagnostics, error) {
	resp, err := w.c.ValidateProviderConfig(ctx, &pb.ValidateProviderConfig_Request{Config: dyn6(cfg)})
	if err != nil {
		return dynamic{}, nil, err
	}
	return dynamic{}, diags6(resp.GetDiagnostics()), nil
}

func (w *wire6) configure(ctx context.Context, tfVersion string, cfg []byte) (providers.Diagnostics, error) {
	resp, err := w.c.ConfigureProvider(ctx, &pb.ConfigureProvider_Request{TerraformVersion: tfVersion, Config: dyn6(cfg), ClientCapabilities: clientCaps6()})
	if err != nil {
		return nil, err
	}
	return diags6(resp.GetDiagnostics()), nil
}

func (w *wire6) validateResourceConfig(ctx context.Context, typeName string, cfg []byte) (providers.Diagnostics, error) {
	resp, err := w.c.ValidateResourceConfig(ctx, &pb.ValidateResourceConfig_Request{TypeName: typeName, Config: dyn6(cfg), ClientCapabilities: clientCaps6()})
	if err != nil {
		return nil, err
	}
	return diags6(resp.GetDiagnostics()), nil
}

func (w *wire6) validateDataSourceConfig(ctx context.Context, typeName string, cfg []byte) (providers.Diagnostics, error) {
	resp, err := w.c.ValidateDataResourceConfig(ctx, &pb.ValidateDataResourceConfig_Request{TypeName: typeName, Config: dyn6(cfg)})
	if err != nil {
		return nil, err
	}
	return diags6(resp.GetDiagnostics()), nil
}

func (w *wire6) upgradeResourceState(ctx context.Context, typeName string, version int64, rawJSON []byte) (dynamic, providers.Diagnostics, error) {
	resp, err := w.c.UpgradeResourceState(ctx, &pb.UpgradeResourceState_Request{TypeName: typeName, Version: version, RawState: &pb.RawState{Json: rawJSON}})
	if err != nil {
		return dynamic{}, nil, err
	}
	return fromDyn6(resp.GetUpgradedState()), diags6(resp.GetDiagnostics()), nil
}

func (w *wire6) readResource(ctx context.Context, typeName string, state, private, meta []byte) (rawResult, error) {
	resp, err := w.c.ReadResource(ctx, &pb.ReadResource_Request{TypeName: typeName, CurrentState: dyn6(state), Private: private,
		ProviderMeta: dyn6(meta), ClientCapabilities: clientCaps6()})
	if err != nil {
		return rawResult{}, err
	}
	return rawResult{state: fromDyn6(resp.GetNewState()), private: resp.GetPrivate(),
		diags: append(diags6(resp.GetDiagnostics()), deferred6(resp.GetDeferred())...)}, nil
}

func (w *wire6) planResourceChange(ctx context.Context, r rawPlan) (rawResult, error) {
	resp, err := w.c.PlanResourceChange(ctx, &pb.PlanResourceChange_Request{TypeName: r.typeName, PriorState: dyn6(r.prior),
		ProposedNewState: dyn6(r.proposed), Config: dyn6(r.config), PriorPrivate: r.priorPrivate, ProviderMeta: dyn6(r.meta),
		ClientCapabilities: clientCaps6()})
	if err != nil {
		return rawResult{}, err
	}
	out := rawResult{state: fromDyn6(resp.GetPlannedState()), private: resp.GetPlannedPrivate(), legacy: resp.GetLegacyTypeSystem(),
		diags: append(diags6(resp.GetDiagnostics()), deferred6(resp.GetDeferred())...)}
	for _, p := range resp.GetRequiresReplace() {
		out.requiresReplace = append(out.requiresReplace, path6(p))
	}
	return out, nil
}

func (w *wire6) applyResourceChange(ctx context.Context, r rawApply) (rawResult, error) {
	resp, err := w.c.ApplyResourceChange(ctx, &pb.ApplyResourceChange_Request{TypeName: r.typeName, PriorState: dyn6(r.prior),
		PlannedState: dyn6(r.planned), Config: dyn6(r.config), PlannedPrivate: r.plannedPrivate, ProviderMeta: dyn6(r.meta)})
	if err != nil {
		return rawResult{}, err
	}
	return rawResult{state: fromDyn6(resp.GetNewState()), private: resp.GetPrivate(), legacy: resp.GetLegacyTypeSystem(),
		diags: diags6(resp.GetDiagnostics())}, nil
}

func (w *wire6) importResourceState(ctx context.Context, typeName, id string) (rawImport, error) {
	resp, err := w.c.ImportResourceState(ctx, &pb.ImportResourceState_Request{TypeName: typeName, Id: id, ClientCapabilities: clientCaps6()})
	if err != nil {
		return rawImport{}, err
	}
	out := rawImport{diags: append(diags6(resp.GetDiagnostics()), deferred6(resp.GetDeferred())...)}
	for _, ir := range resp.GetImportedResources() {
		out.imported = append(out.imported, rawImported{typeName: ir.GetTypeName(), state: fromDyn6(ir.GetState()), private: ir.GetPrivate()})
	}
	return out, nil
}

func (w *wire6) readDataSource(ctx context.Context, typeName string, cfg, meta []byte) (dynamic, providers.Diagnostics, error) {
	resp, err := w.c.ReadDataSource(ctx, &pb.ReadDataSource_Request{TypeName: typeName, Config: dyn6(cfg), ProviderMeta: dyn6(meta),
		ClientCapabilities: clientCaps6()})
	if err != nil {
		return dynamic{}, nil, err
	}
	return fromDyn6(resp.GetState()), append(diags6(resp.GetDiagnostics()), deferred6(resp.GetDeferred())...), nil
}

func (w *wire6) stop(ctx context.Context) (string, error) {
	resp, err := w.c.StopProvider(ctx, &pb.StopProvider_Request{})
	if err != nil {
		return "", err
	}
	return resp.GetError(), nil
}
