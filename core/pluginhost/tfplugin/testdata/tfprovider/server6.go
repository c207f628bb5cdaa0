package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// server6 serves protocol 6. The embedded interface is nil: a call the
// tests never make would panic.
type server6 struct {
	tfprotov6.ProviderServer
	p *provider
}

func thingSchema6() *tfprotov6.Schema {
	s := &tfprotov6.Schema{Version: 1, Block: &tfprotov6.SchemaBlock{
		Attributes: []*tfprotov6.SchemaAttribute{
			{Name: "id", Type: tftypes.String, Computed: true},
			{Name: "name", Type: tftypes.String, Required: true},
			{Name: "size", Type: tftypes.Number, Optional: true},
			{Name: "secret", Type: tftypes.String, Optional: true, Sensitive: true},
			{Name: "tags", Type: tftypes.Map{ElementType: tftypes.String}, Optional: true},
			{Name: "old", Type: tftypes.String, Optional: true, Deprecated: true},
		},
		BlockTypes: []*tfprotov6.SchemaNestedBlock{{
			TypeName: "rule",
			Nesting:  tfprotov6.SchemaNestedBlockNestingModeList,
			Block: &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{
				{Name: "port", Type: tftypes.Number, Required: true},
				{Name: "proto", Type: tftypes.String, Optional: true, Computed: true},
			}},
		}},
	}}
	extras6(s)
	return s
}

// extras6 adds what only protocol 6 has: a nested attribute.
func extras6(s *tfprotov6.Schema) {
	s.Block.Attributes = append(s.Block.Attributes, &tfprotov6.SchemaAttribute{
		Name: "settings", Optional: true,
		NestedType: &tfprotov6.SchemaObject{Nesting: tfprotov6.SchemaObjectNestingModeSingle, Attributes: []*tfprotov6.SchemaAttribute{
			{Name: "mode", Type: tftypes.String, Optional: true},
		}},
	})
}

func echoSchema6() *tfprotov6.Schema {
	return &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{
		{Name: "input", Type: tftypes.String, Required: true},
		{Name: "output", Type: tftypes.String, Computed: true},
	}}}
}

func providerSchema6() *tfprotov6.Schema {
	return &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{
		{Name: "prefix", Type: tftypes.String, Optional: true},
	}}}
}

func diags6(ds []diag) []*tfprotov6.Diagnostic {
	var out []*tfprotov6.Diagnostic
	for _, d := range ds {
		sev := tfprotov6.DiagnosticSeverityError
		if d.warning {
			sev = tfprotov6.DiagnosticSeverityWarning
		}
		out = append(out, &tfprotov6.Diagnostic{Severity: sev, Summary: d.summary, Attribute: d.path})
	}
	return out
}

func errDiags6(err error) []*tfprotov6.Diagnostic {
	return []*tfprotov6.Diagnostic{{Severity: tfprotov6.DiagnosticSeverityError, Summary: err.Error()}}
}

func dv6(ty tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
	d, err := tfprotov6.NewDynamicValue(ty, v)
	if err != nil {
		panic(err)
	}
	return &d
}

func val6(d *tfprotov6.DynamicValue, ty tftypes.Type) tftypes.Value {
	if d == nil {
		return tftypes.NewValue(ty, nil)
	}
	v, err := d.Unmarshal(ty)
	if err != nil {
		panic(err)
	}
	return v
}

func (s *server6) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return &tfprotov6.GetProviderSchemaResponse{
		Provider:          providerSchema6(),
		ResourceSchemas:   map[string]*tfprotov6.Schema{"tftest_thing": thingSchema6()},
		DataSourceSchemas: map[string]*tfprotov6.Schema{"tftest_echo": echoSchema6()},
	}, nil
}

func (s *server6) ValidateProviderConfig(_ context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	ty := providerSchema6().ValueType()
	return &tfprotov6.ValidateProviderConfigResponse{Diagnostics: diags6(s.p.validateProvider(val6(req.Config, ty)))}, nil
}

func (s *server6) ConfigureProvider(_ context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	ty := providerSchema6().ValueType()
	return &tfprotov6.ConfigureProviderResponse{Diagnostics: diags6(s.p.configure(val6(req.Config, ty)))}, nil
}

func (s *server6) StopProvider(context.Context, *tfprotov6.StopProviderRequest) (*tfprotov6.StopProviderResponse, error) {
	return &tfprotov6.StopProviderResponse{}, nil
}

func (s *server6) ValidateResourceConfig(_ context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	ty := thingSchema6().ValueType()
	return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: diags6(s.p.validateThing(val6(req.Config, ty)))}, nil
}

func (s *server6) UpgradeResourceState(_ context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	ty := thingSchema6().ValueType()
	raw, ds := upgradeJSON(req.Version, req.RawState.JSON)
	if len(ds) > 0 {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: diags6(ds)}, nil
	}
	v, err := (&tfprotov6.RawState{JSON: raw}).UnmarshalWithOpts(ty, tfprotov6.UnmarshalOpts{})
	if err != nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errDiags6(err)}, nil
	}
	return &tfprotov6.UpgradeResourceStateResponse{UpgradedState: dv6(ty, v)}, nil
}

func (s *server6) ReadResource(_ context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	ty := thingSchema6().ValueType()
	v, private, ds := s.p.read(ty, val6(req.CurrentState, ty), req.Private)
	return &tfprotov6.ReadResourceResponse{NewState: dv6(ty, v), Private: private, Diagnostics: diags6(ds)}, nil
}

func (s *server6) PlanResourceChange(_ context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	ty := thingSchema6().ValueType()
	planned, replace := s.p.plan(ty, val6(req.PriorState, ty), val6(req.ProposedNewState, ty))
	return &tfprotov6.PlanResourceChangeResponse{PlannedState: dv6(ty, planned), RequiresReplace: replace, PlannedPrivate: req.PriorPrivate}, nil
}

func (s *server6) ApplyResourceChange(_ context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	ty := thingSchema6().ValueType()
	v, private, ds := s.p.apply(ty, val6(req.PriorState, ty), val6(req.PlannedState, ty))
	return &tfprotov6.ApplyResourceChangeResponse{NewState: dv6(ty, v), Private: private, Diagnostics: diags6(ds)}, nil
}

func (s *server6) ImportResourceState(_ context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	ty := thingSchema6().ValueType()
	v, ds := s.p.importState(ty, req.ID)
	if len(ds) > 0 {
		return &tfprotov6.ImportResourceStateResponse{Diagnostics: diags6(ds)}, nil
	}
	return &tfprotov6.ImportResourceStateResponse{ImportedResources: []*tfprotov6.ImportedResource{
		{TypeName: req.TypeName, State: dv6(ty, v), Private: []byte("private:" + req.ID)},
	}}, nil
}

func (s *server6) ValidateDataResourceConfig(context.Context, *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	return &tfprotov6.ValidateDataResourceConfigResponse{}, nil
}

func (s *server6) ReadDataSource(_ context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	ty := echoSchema6().ValueType()
	cfg := val6(req.Config, ty)
	if in, _ := str(obj(cfg)["input"]); in == "defer" {
		// A provider that cannot read it yet, as one whose configuration
		// is unknown would.
		return &tfprotov6.ReadDataSourceResponse{State: dv6(ty, tftypes.NewValue(ty, nil)), Deferred: &tfprotov6.Deferred{Reason: tfprotov6.DeferredReasonProviderConfigUnknown}}, nil
	}
	return &tfprotov6.ReadDataSourceResponse{State: dv6(ty, s.p.readEcho(ty, cfg))}, nil
}
