package fwtest

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// configureData is the data sources' Configure.
func configureData(req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) *client {
	if req.ProviderData == nil {
		return nil
	}
	c, ok := req.ProviderData.(*client)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T", req.ProviderData))
	}
	return c
}

// thingData reads an object of the world by name: how a configuration
// refers to something it does not manage.
type thingData struct{ c *client }

func newThingData() datasource.DataSource { return &thingData{} }

type thingDataModel struct {
	Name        types.String      `tfsdk:"name"`
	ID          types.String      `tfsdk:"id"`
	ARN         types.String      `tfsdk:"arn"`
	Size        types.Int64       `tfsdk:"size"`
	Description types.String      `tfsdk:"description"`
	Secret      types.String      `tfsdk:"secret"`
	Tags        map[string]string `tfsdk:"tags"`
	Revision    types.Int64       `tfsdk:"revision"`
}

func (d *thingData) Metadata(_ context.Context, _ datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = thingType
}

func (d *thingData) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Reads the one fwtest_thing of the world with this name.",
		Attributes: map[string]schema.Attribute{
			"name":        schema.StringAttribute{Required: true},
			"id":          schema.StringAttribute{Computed: true},
			"arn":         schema.StringAttribute{Computed: true},
			"size":        schema.Int64Attribute{Computed: true},
			"description": schema.StringAttribute{Computed: true},
			"secret":      schema.StringAttribute{Computed: true, Sensitive: true},
			"tags":        schema.MapAttribute{Computed: true, ElementType: types.StringType},
			"revision":    schema.Int64Attribute{Computed: true},
		},
	}
}

func (d *thingData) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := configureData(req, resp); c != nil {
		d.c = c
	}
}

func (d *thingData) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m thingDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := d.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Read interrupted", err.Error())
		return
	}
	obj, err := d.c.store.FindByName(thingType, m.Name.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("No such thing", err.Error())
		return
	}
	m.ID = types.StringValue(obj.ID)
	m.ARN = types.StringValue(obj.ARN)
	m.Size = types.Int64Value(obj.Size)
	m.Description = types.StringPointerValue(obj.Description)
	m.Secret = types.StringPointerValue(obj.Secret)
	m.Tags = obj.Tags
	m.Revision = types.Int64Value(obj.Revision)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// identity says which provider and world a configuration talks to, as a
// cloud's caller-identity data source does.
type identity struct{ c *client }

func newIdentity() datasource.DataSource { return &identity{} }

type identityModel struct {
	ID       types.String `tfsdk:"id"`
	World    types.String `tfsdk:"world"`
	Version  types.String `tfsdk:"version"`
	Protocol types.Int64  `tfsdk:"protocol"`
	TokenSet types.Bool   `tfsdk:"token_set"`
}

func (d *identity) Metadata(_ context.Context, _ datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = "fwtest_identity"
}

func (d *identity) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The provider's identity: its address, version and world folder.",
		Attributes: map[string]schema.Attribute{
			"id":        schema.StringAttribute{Computed: true},
			"world":     schema.StringAttribute{Computed: true},
			"version":   schema.StringAttribute{Computed: true},
			"protocol":  schema.Int64Attribute{Computed: true},
			"token_set": schema.BoolAttribute{Computed: true},
		},
	}
}

func (d *identity) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := configureData(req, resp); c != nil {
		d.c = c
	}
}

func (d *identity) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if err := d.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Read interrupted", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &identityModel{
		ID:       types.StringValue(Address),
		World:    types.StringValue(d.c.store.Dir),
		Version:  types.StringValue(d.c.version),
		Protocol: types.Int64Value(6),
		TokenSet: types.BoolValue(d.c.tokenSet),
	})...)
}
