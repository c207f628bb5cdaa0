package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// server5 serves protocol 5. The embedded interface is nil: a call the
// tests never make would panic.
type server5 struct {
	tfprotov5.ProviderServer
	p *provider
}

func thingSchema5() *tfprotov5.Schema {
	s := &tfprotov5.Schema{Version: 1, Block: &tfprotov5.SchemaBlock{
		Attributes: []*tfprotov5.SchemaAttribute{
			{Name: "id", Type: tftypes.String, Computed: true},
			{Name: "name", Type: tftypes.String, Required: true},
			{Name: "size", Type: tftypes.Number, Optional: true},
			{Name: "secret", Type: tftypes.String, Optional: true, Sensitive: true},
			{Name: "tags", Type: tftypes.Map{ElementType: tftypes.String}, Optional: true},
			{Name: "old", Type: tftypes.String, Optional: true, Deprecated: true},
		},
		BlockTypes: []*tfprotov5.SchemaNestedBlock{{
			TypeName: "rule",
			Nesting:  tfprotov5.SchemaNestedBlockNestingModeList,
			Block: &tfprotov5.SchemaBlock{Attributes: []*tfprotov5.SchemaAttribute{
				{Name: "port", Type: tftypes.Number, Required: true},
				{Name: "proto", Type: tftypes.String, Optional: true, Computed: true},
			}},
		}},
	}}
	extras5(s)
	return s
}

// extras5: protocol 5 has no nested attributes; a single nested block
// stands in.
func extras5(s *tfprotov5.Schema) {
	s.Block.BlockTypes = append(s.Block.BlockTypes, &tfprotov5.SchemaNestedBlock{
		TypeName: "settings",
		Nesting:  tfprotov5.SchemaNestedBlockNestingModeSingle,
		Block: &tfprotov5.SchemaBlock{Attributes: []*tfprotov5.SchemaAttribute{
			{Name: "mode", Type: tftypes.String, Optional: true},
		}},
	})
}

func echoSchema5() *tfprotov5.Schema {
	return &tfprotov5.Schema{Block: &tfprotov5.SchemaBlock{Attributes: []*tfprotov5.SchemaAttribute{
		{Name: "input", Type: tftypes.String, Required: true},
		{Name: "output", Type: tftypes.String, Computed: true},
	}}}
}

func providerSchema5() *tfprotov5.Schema {
	return &tfprotov5.Schema{Block: &tfprotov5.SchemaBlock{Attributes: []*tfprotov5.SchemaAttribute{
		{Name: "prefix", Type: tftypes.String, Optional: true},
	}}}
}

func diags5(ds []diag) []*tfprotov5.Diagnostic {
	var out []*tfprotov5.Diagnostic
	for _, d := range ds {
		sev := tfprotov5.DiagnosticSeverityError
		if d.warning {
			sev = tfprotov5.DiagnosticSeverityWarning
		}
		out = append(out, &tfprotov5.Diagnostic{Severity: sev, Summary: d.summary, Attribute: d.path})
	}
	return out
}

func errDiags5(err error) []*tfprotov5.Diagnostic {
	return []*tfprotov5.Diagnostic{{Severity: tfprotov5.DiagnosticSeverityError, Summary: err.Error()}}
}

func dv5(ty tftypes.Type, v tftypes.Value) *tfprotov5.DynamicValue {
	d, err := tfprotov5.NewDynamicValue(ty, v)
	if err != nil {
		panic(err)
	}
	return &d
}

func val5(d *tfprotov5.DynamicValue, ty tftypes.Type) tftypes.Value {
	if d == nil {
		return tftypes.NewValue(ty, nil)
	}
	v, err := d.Unmarshal(ty)
	if err != nil {
		panic(err)
	}
	return v
}

func (s *server5) GetProviderSchema(context.Context, *tfprotov5.GetProviderSchemaRequest) (*tfprotov5.GetProviderSchemaResponse, error) {
	return &tfprotov5.GetProviderSchemaResponse{
		Provider:          providerSchema5(),
		ResourceSchemas:   map[string]*tfprotov5.Schema{"tftest_thing": thingSchema5()},
		DataSourceSchemas: map[string]*tfprotov5.Schema{"tftest_echo": echoSchema5()},
	}, nil
}

func (s *server5) PrepareProviderConfig(_ context.Context, req *tfprotov5.PrepareProviderConfigRequest) (*tfprotov5.PrepareProviderConfigResponse, error) {
	ty := providerSchema5().ValueType()
	return &tfprotov5.PrepareProviderConfigResponse{PreparedConfig: req.Config, Diagnostics: diags5(s.p.validateProvider(val5(req.Config, ty)))}, nil
}

func (s *server5) ConfigureProvider(_ context.Context, req *tfprotov5.ConfigureProviderRequest) (*tfprotov5.ConfigureProviderResponse, error) {
	ty := providerSchema5().ValueType()
	return &tfprotov5.ConfigureProviderResponse{Diagnostics: diags5(s.p.configure(val5(req.Config, ty)))}, nil
}

func (s *server5) StopProvider(context.Context, *tfprotov5.StopProviderRequest) (*tfprotov5.StopProviderResponse, error) {
	return &tfprotov5.StopProviderResponse{}, nil
}

func (s *server5) ValidateResourceTypeConfig(_ context.Context, req *tfprotov5.ValidateResourceTypeConfigRequest) (*tfprotov5.ValidateResourceTypeConfigResponse, error) {
	ty := thingSchema5().ValueType()
	return &tfprotov5.ValidateResourceTypeConfigResponse{Diagnostics: diags5(s.p.validateThing(val5(req.Config, ty)))}, nil
}

func (s *server5) UpgradeResourceState(_ context.Context, req *tfprotov5.UpgradeResourceStateRequest) (*tfprotov5.UpgradeResourceStateResponse, error) {
	ty := thingSchema5().ValueType()
	raw, ds := upgradeJSON(req.Version, req.RawState.JSON)
	if len(ds) > 0 {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: diags5(ds)}, nil
	}
	v, err := (&tfprotov5.RawState{JSON: raw}).UnmarshalWithOpts(ty, tfprotov5.UnmarshalOpts{})
	if err != nil {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: errDiags5(err)}, nil
	}
	return &tfprotov5.UpgradeResourceStateResponse{UpgradedState: dv5(ty, v)}, nil
}

func (s *server5) ReadResource(_ context.Context, req *tfprotov5.ReadResourceRequest) (*tfprotov5.ReadResourceResponse, error) {
	ty := thingSchema5().ValueType()
	v, private, ds := s.p.read(ty, val5(req.CurrentState, ty), req.Private)
	return &tfprotov5.ReadResourceResponse{NewState: dv5(ty, v), Private: private, Diagnostics: diags5(ds)}, nil
}

func (s *server5) PlanResourceChange(_ context.Context, req *tfprotov5.PlanResourceChangeRequest) (*tfprotov5.PlanResourceChangeResponse, error) {
	ty := thingSchema5().ValueType()
	planned, replace := s.p.plan(ty, val5(req.PriorState, ty), val5(req.ProposedNewState, ty))
	return &tfprotov5.PlanResourceChangeResponse{PlannedState: dv5(ty, planned), RequiresReplace: replace, PlannedPrivate: req.PriorPrivate}, nil
}

func (s *server5) ApplyResourceChange(_ context.Context, req *tfprotov5.ApplyResourceChangeRequest) (*tfprotov5.ApplyResourceChangeResponse, error) {
	ty := thingSchema5().ValueType()
	v, private, ds := s.p.apply(ty, val5(req.PriorState, ty), val5(req.PlannedState, ty))
	return &tfprotov5.ApplyResourceChangeResponse{NewState: dv5(ty, v), Private: private, Diagnostics: diags5(ds)}, nil
}

func (s *server5) ImportResourceState(_ context.Context, req *tfprotov5.ImportResourceStateRequest) (*tfprotov5.ImportResourceStateResponse, error) {
	ty := thingSchema5().ValueType()
	v, ds := s.p.importState(ty, req.ID)
	if len(ds) > 0 {
		return &tfprotov5.ImportResourceStateResponse{Diagnostics: diags5(ds)}, nil
	}
	return &tfprotov5.ImportResourceStateResponse{ImportedResources: []*tfprotov5.ImportedResource{
		{TypeName: req.TypeName, State: dv5(ty, v), Private: []byte("private:" + req.ID)},
	}}, nil
}

func (s *server5) ValidateDataSourceConfig(context.Context, *tfprotov5.ValidateDataSourceConfigRequest) (*tfprotov5.ValidateDataSourceConfigResponse, error) {
	return &tfprotov5.ValidateDataSourceConfigResponse{}, nil
}

func (s *server5) ReadDataSource(_ context.Context, req *tfprotov5.ReadDataSourceRequest) (*tfprotov5.ReadDataSourceResponse, error) {
	ty := echoSchema5().ValueType()
	cfg := val5(req.Config, ty)
	if in, _ := str(obj(cfg)["input"]); in == "defer" {
		// A provider that cannot read it yet, as one whose configuration
		// is unknown would.
		return &tfprotov5.ReadDataSourceResponse{State: dv5(ty, tftypes.NewValue(ty, nil)), Deferred: &tfprotov5.Deferred{Reason: tfprotov5.DeferredReasonProviderConfigUnknown}}, nil
	}
	return &tfprotov5.ReadDataSourceResponse{State: dv5(ty, s.p.readEcho(ty, cfg))}, nil
}
