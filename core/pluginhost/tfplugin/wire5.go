package tfplugin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	pb "github.com/bulwark-iac/bulwark/core/pluginhost/tfplugin/internal/tfplugin5"
	"github.com/bulwark-iac/bulwark/core/providers"
)

// wire5 is protocol 5.
type wire5 struct {
	c pb.ProviderClient
}

// clientCaps5 is what the host tells a provider it supports: no deferred
// changes, no write-only attributes.
func clientCaps5() *pb.ClientCapabilities { return &pb.ClientCapabilities{} }

func dyn5(b []byte) *pb.DynamicValue {
	if b == nil {
		return nil
	}
	return &pb.DynamicValue{Msgpack: b}
}

func fromDyn5(d *pb.DynamicValue) dynamic {
	return dynamic{msgpack: d.GetMsgpack(), json: d.GetJson()}
}

func (w *wire5) getSchema(ctx context.Context) (*ProviderSchema, error) {
	resp, err := w.c.GetSchema(ctx, &pb.GetProviderSchema_Request{})
	if err != nil {
		return nil, err
	}
	out := &ProviderSchema{
		ResourceTypes: make(map[string]*Schema, len(resp.GetResourceSchemas())),
		DataSources:   make(map[string]*Schema, len(resp.GetDataSourceSchemas())),
		Diagnostics:   diags5(resp.GetDiagnostics()),
	}
	if out.Provider, err = schema5(resp.GetProvider()); err != nil {
		return nil, fmt.Errorf("provider schema: %w", err)
	}
	if resp.GetProviderMeta().GetBlock() != nil {
		if out.ProviderMeta, err = schema5(resp.GetProviderMeta()); err != nil {
			return nil, fmt.Errorf("provider_meta schema: %w", err)
		}
	}
	for name, s := range resp.GetResourceSchemas() {
		if out.ResourceTypes[name], err = schema5(s); err != nil {
			return nil, fmt.Errorf("resource type %s schema: %w", name, err)
		}
	}
	for name, s := range resp.GetDataSourceSchemas() {
		if out.DataSources[name], err = schema5(s); err != nil {
			return nil, fmt.Errorf("data source %s schema: %w", name, err)
		}
	}
	if c := resp.GetServerCapabilities(); c != nil {
		out.Capabilities = ServerCapabilities{PlanDestroy: c.PlanDestroy, GetProviderSchemaOptional: c.GetProviderSchemaOptional, MoveResourceState: c.MoveResourceState}
	}
	return out, nil
}

func schema5(s *pb.Schema) (*Schema, error) {
	if s == nil {
		return &Schema{Block: &Block{}}, nil
	}
	b, err := block5(s.GetBlock())
	if err != nil {
		return nil, err
	}
	return &Schema{Version: s.GetVersion(), Block: b}, nil
}

func block5(b *pb.Schema_Block) (*Block, error) {
	out := &Block{
		Attributes:         make(map[string]*Attribute, len(b.GetAttributes())),
		BlockTypes:         make(map[string]*NestedBlock, len(b.GetBlockTypes())),
		Description:        b.GetDescription(),
		DescriptionKind:    StringKind(b.GetDescriptionKind()),
		Deprecated:         b.GetDeprecated(),
		DeprecationMessage: b.GetDeprecationMessage(),
	}
	for _, a := range b.GetAttributes() {
		attr, err := attribute5(a)
		if err != nil {
			return nil, err
		}
		out.Attributes[a.GetName()] = attr
	}
	for _, nb := range b.GetBlockTypes() {
		inner, err := block5(nb.GetBlock())
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", nb.GetTypeName(), err)
		}
		nesting, err := blockNesting5(nb.GetNesting())
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", nb.GetTypeName(), err)
		}
		out.BlockTypes[nb.GetTypeName()] = &NestedBlock{Block: inner, Nesting: nesting, MinItems: nb.GetMinItems(), MaxItems: nb.GetMaxItems()}
	}
	return out, nil
}

func blockNesting5(n pb.Schema_NestedBlock_NestingMode) (NestingMode, error) {
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

func attribute5(a *pb.Schema_Attribute) (*Attribute, error) {
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
	if err := json.Unmarshal(a.GetType(), &out.Type); err != nil {
		return nil, fmt.Errorf("attribute %s: type %s: %w", a.GetName(), a.GetType(), err)
	}
	return out, nil
}

func diags5(ds []*pb.Diagnostic) providers.Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(providers.Diagnostics, 0, len(ds))
	for _, d := range ds {
		if d == nil {
			continue
		}
		out = append(out, diagnostic(d.GetSeverity() == pb.Diagnostic_WARNING, d.GetSummary(), d.GetDetail(), path5(d.GetAttribute())))
	}
	return out
}

func path5(p *pb.AttributePath) cty.Path {
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

func deferred5(d *pb.Deferred) providers.Diagnostics {
	if d == nil {
		return nil
	}
	return providers.Diagnostics{deferredDiag(d.GetReason().String())}
}

func (w *wire5) validateProviderConfig(ctx context.Context, cfg []byte) (dynamic, providers.Diagnostics, error) {
	resp, err := w.c.PrepareProviderConfig(ctx, &pb.PrepareProviderConfig_Request{Config: dyn5(cfg)})
	if err != nil {
		return dynamic{}, nil, err
	}
	return fromDyn5(resp.GetPreparedConfig()), diags5(resp.GetDiagnostics()), nil
}

func (w *wire5) configure(ctx context.Context, tfVersion string, cfg []byte) (providers.Diagnostics, error) {
	resp, err := w.c.Configure(ctx, &pb.Configure_Request{TerraformVersion: tfVersion, Config: dyn5(cfg), ClientCapabilities: clientCaps5()})
	if err != nil {
		return nil, err
	}
	return diags5(resp.GetDiagnostics()), nil
}

func (w *wire5) validateResourceConfig(ctx context.Context, typeName string, cfg []byte) (providers.Diagnostics, error) {
	resp, err := w.c.ValidateResourceTypeConfig(ctx, &pb.ValidateResourceTypeConfig_Request{TypeName: typeName, Config: dyn5(cfg), ClientCapabilities: clientCaps5()})
	if err != nil {
		return nil, err
	}
	return diags5(resp.GetDiagnostics()), nil
}

func (w *wire5) validateDataSourceConfig(ctx context.Context, typeName string, cfg []byte) (providers.Diagnostics, error) {
	resp, err := w.c.ValidateDataSourceConfig(ctx, &pb.ValidateDataSourceConfig_Request{TypeName: typeName, Config: dyn5(cfg)})
	if err != nil {
		return nil, err
	}
	return diags5(resp.GetDiagnostics()), nil
}

func (w *wire5) upgradeResourceState(ctx context.Context, typeName string, version int64, rawJSON []byte) (dynamic, providers.Diagnostics, error) {
	resp, err := w.c.UpgradeResourceState(ctx, &pb.UpgradeResourceState_Request{TypeName: typeName, Version: version, RawState: &pb.RawState{Json: rawJSON}})
	if err != nil {
		return dynamic{}, nil, err
	}
	return fromDyn5(resp.GetUpgradedState()), diags5(resp.GetDiagnostics()), nil
}

func (w *wire5) readResource(ctx context.Context, typeName string, state, private, meta []byte) (rawResult, error) {
	resp, err := w.c.ReadResource(ctx, &pb.ReadResource_Request{TypeName: typeName, CurrentState: dyn5(state), Private: private,
		ProviderMeta: dyn5(meta), ClientCapabilities: clientCaps5()})
	if err != nil {
		return rawResult{}, err
	}
	return rawResult{state: fromDyn5(resp.GetNewState()), private: resp.GetPrivate(),
		diags: append(diags5(resp.GetDiagnostics()), deferred5(resp.GetDeferred())...)}, nil
}

func (w *wire5) planResourceChange(ctx context.Context, r rawPlan) (rawResult, error) {
	resp, err := w.c.PlanResourceChange(ctx, &pb.PlanResourceChange_Request{TypeName: r.typeName, PriorState: dyn5(r.prior),
		ProposedNewState: dyn5(r.proposed), Config: dyn5(r.config), PriorPrivate: r.priorPrivate, ProviderMeta: dyn5(r.meta),
		ClientCapabilities: clientCaps5()})
	if err != nil {
		return rawResult{}, err
	}
	out := rawResult{state: fromDyn5(resp.GetPlannedState()), private: resp.GetPlannedPrivate(), legacy: resp.GetLegacyTypeSystem(),
		diags: append(diags5(resp.GetDiagnostics()), deferred5(resp.GetDeferred())...)}
	for _, p := range resp.GetRequiresReplace() {
		out.requiresReplace = append(out.requiresReplace, path5(p))
	}
	return out, nil
}

func (w *wire5) applyResourceChange(ctx context.Context, r rawApply) (rawResult, error) {
	resp, err := w.c.ApplyResourceChange(ctx, &pb.ApplyResourceChange_Request{TypeName: r.typeName, PriorState: dyn5(r.prior),
		PlannedState: dyn5(r.planned), Config: dyn5(r.config), PlannedPrivate: r.plannedPrivate, ProviderMeta: dyn5(r.meta)})
	if err != nil {
		return rawResult{}, err
	}
	return rawResult{state: fromDyn5(resp.GetNewState()), private: resp.GetPrivate(), legacy: resp.GetLegacyTypeSystem(),
		diags: diags5(resp.GetDiagnostics())}, nil
}

func (w *wire5) importResourceState(ctx context.Context, typeName, id string) (rawImport, error) {
	resp, err := w.c.ImportResourceState(ctx, &pb.ImportResourceState_Request{TypeName: typeName, Id: id, ClientCapabilities: clientCaps5()})
	if err != nil {
		return rawImport{}, err
	}
	out := rawImport{diags: append(diags5(resp.GetDiagnostics()), deferred5(resp.GetDeferred())...)}
	for _, ir := range resp.GetImportedResources() {
		out.imported = append(out.imported, rawImported{typeName: ir.GetTypeName(), state: fromDyn5(ir.GetState()), private: ir.GetPrivate()})
	}
	return out, nil
}

func (w *wire5) readDataSource(ctx context.Context, typeName string, cfg, meta []byte) (dynamic, providers.Diagnostics, error) {
	resp, err := w.c.ReadDataSource(ctx, &pb.ReadDataSource_Request{TypeName: typeName, Config: dyn5(cfg), ProviderMeta: dyn5(meta),
		ClientCapabilities: clientCaps5()})
	if err != nil {
		return dynamic{}, nil, err
	}
	return fromDyn5(resp.GetState()), append(diags5(resp.GetDiagnostics()), deferred5(resp.GetDeferred())...), nil
}

func (w *wire5) stop(ctx context.Context) (string, error) {
	resp, err := w.c.Stop(ctx, &pb.Stop_Request{})
	if err != nil {
		return "", err
	}
	return resp.GetError(), nil
}
