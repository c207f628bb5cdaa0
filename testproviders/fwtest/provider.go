// Package fwtest is a Terraform provider on terraform-plugin-framework
// (plugin protocol 6) whose "cloud" is a folder of JSON files (package
// world). It exists to prove bulwark against a real framework's behaviour:
// nested blocks and nested attributes, computed, force-new, sensitive and
// deprecated attributes, import, a schema upgrade, private state, and a
// create that fails halfway.
package fwtest

import (
	"context"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

// Address is the provider's source address.
const Address = "registry.terraform.io/bulwark/fwtest"

// Serve runs the provider as a plugin of the process that started it.
func Serve(ctx context.Context, version string) error {
	return providerserver.Serve(ctx, func() provider.Provider { return &fwProvider{version: version} },
		providerserver.ServeOpts{Address: Address, ProtocolVersion: 6})
}

type fwProvider struct {
	version string
}

// client is what Configure hands the resources and data sources.
type client struct {
	store    *world.Store
	latency  time.Duration
	version  string
	tokenSet bool
}

// call is the cost of one API call: the configured latency.
func (c *client) call(ctx context.Context) error { return world.Latency(ctx, c.latency) }

type providerModel struct {
	World     types.String `tfsdk:"world"`
	LatencyMS types.Int64  `tfsdk:"latency_ms"`
	Token     types.String `tfsdk:"token"`
}

func (p *fwProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "fwtest"
	resp.Version = p.version
}

func (p *fwProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A test provider whose objects are JSON files in a folder.",
		Attributes: map[string]schema.Attribute{
			"world": schema.StringAttribute{
				Optional:    true,
				Description: "Folder holding the objects; default $" + world.EnvDir + ".",
			},
			"latency_ms": schema.Int64Attribute{
				Optional:    true,
				Description: "Milliseconds each API call (read, create, update, delete, import, data source read) sleeps.",
			},
			"token": schema.StringAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "A credential stand-in: never used, only reported as set by the identity data source.",
			},
		},
	}
}

func (p *fwProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.World.IsUnknown() || m.LatencyMS.IsUnknown() {
		resp.Diagnostics.AddError("Unknown provider configuration", "world and latency_ms must be known when the provider is configured.")
		return
	}
	if m.LatencyMS.ValueInt64() < 0 {
		resp.Diagnostics.AddAttributeError(path.Root("latency_ms"), "Invalid latency_ms", "latency_ms must not be negative.")
		return
	}
	store, err := world.Open(m.World.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("world"), "No world", err.Error())
		return
	}
	c := &client{
		store:    store,
		latency:  time.Duration(m.LatencyMS.ValueInt64()) * time.Millisecond,
		version:  p.version,
		tokenSet: !m.Token.IsNull() && m.Token.ValueString() != "",
	}
	resp.ResourceData = c
	resp.DataSourceData = c
}

func (p *fwProvider) Resources(context.Context) []func() resource.Resource {
	if os.Getenv(EnvSchemaVersion) == "0" {
		return []func() resource.Resource{newThingV0, newItem}
	}
	return []func() resource.Resource{newThing, newItem}
}

func (p *fwProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newThingData, newIdentity}
}
