package fwtest

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

const itemType = "fwtest_item"

// item is the smallest resource: what a 1,000-resource benchmark creates,
// so that the framework's per-call work (a walk over the schema) stays
// small beside the host's.
type item struct{ c *client }

func newItem() resource.Resource { return &item{} }

var (
	_ resource.ResourceWithConfigure   = (*item)(nil)
	_ resource.ResourceWithImportState = (*item)(nil)
)

type itemModel struct {
	ID    types.String `tfsdk:"id"`
	Name  types.String `tfsdk:"name"`
	Value types.String `tfsdk:"value"`
}

func (r *item) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = itemType
}

func (r *item) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The smallest object of the world, for benchmarks.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"value": schema.StringAttribute{Optional: true},
		},
	}
}

func (r *item) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	c, ok := req.ProviderData.(*client)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T", req.ProviderData))
		return
	}
	r.c = c
}

func (r *item) put(ctx context.Context, m *itemModel) error {
	if err := r.c.call(ctx); err != nil {
		return err
	}
	return r.c.store.PutItem(&world.Item{Type: itemType, ID: m.ID.ValueString(), Name: m.Name.ValueString(), Value: m.Value.ValueStringPointer()})
}

func (r *item) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m itemModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.ID = types.StringValue(world.NewID())
	if err := r.put(ctx, &m); err != nil {
		resp.Diagnostics.AddError("Create failed", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *item) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m itemModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Read interrupted", err.Error())
		return
	}
	it, err := r.c.store.GetItem(itemType, m.ID.ValueString())
	if errors.Is(err, world.ErrNotFound) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Read failed", err.Error())
		return
	}
	m.Name = types.StringValue(it.Name)
	m.Value = types.StringPointerValue(it.Value)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *item) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m itemModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.put(ctx, &m); err != nil {
		resp.Diagnostics.AddError("Update failed", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *item) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var id types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &id)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Delete interrupted", err.Error())
		return
	}
	if err := r.c.store.Delete(itemType, id.ValueString()); err != nil {
		resp.Diagnostics.AddError("Delete failed", err.Error())
	}
}

func (r *item) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
