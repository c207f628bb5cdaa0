package fwtest

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

// EnvSchemaVersion, set to 0, makes fwtest_thing the provider's older
// release: schema version 0 (thingModelV0: the description called label,
// the size a string), so a test writes a state with it and reads it back
// with version 1, through its UpgradeState. Unset or 1: the current one.
const EnvSchemaVersion = "BULWARK_TFTEST_SCHEMA_VERSION"

// thingV0 is fwtest_thing as schema version 0 served it. Its objects are
// the same world objects (without a token: they predate it).
type thingV0 struct {
	c *client
}

func newThingV0() resource.Resource { return &thingV0{} }

var (
	_ resource.ResourceWithConfigure   = (*thingV0)(nil)
	_ resource.ResourceWithImportState = (*thingV0)(nil)
)

func (r *thingV0) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = thingType
}

func (r *thingV0) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Version:     0,
		Description: "An object of the world, as schema version 0 had it.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"label":  schema.StringAttribute{Optional: true},
			"size":   schema.StringAttribute{Optional: true},
			"secret": schema.StringAttribute{Optional: true, Sensitive: true},
			"tags":   schema.MapAttribute{Optional: true, ElementType: types.StringType},
		},
	}
}

func (r *thingV0) Configure(_ context.Context, req resource.ConfigureRequest, _ *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*client); ok {
		r.c = c
	}
}

func (r *thingV0) put(ctx context.Context, m *thingModelV0, old *world.Thing) error {
	size := int64(1)
	if s := m.Size.ValueString(); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		size = n
	}
	now := time.Now().UTC()
	obj := &world.Thing{Type: thingType, Name: m.Name.ValueString(), Size: size,
		Description: m.Label.ValueStringPointer(), Secret: m.Secret.ValueStringPointer(), Tags: m.Tags,
		Rules: []world.Rule{}, Ports: []world.Port{}, Created: now, Updated: now, Revision: 1}
	if old == nil {
		obj.ID = world.NewID()
	} else {
		obj.ID, obj.Created, obj.Revision = old.ID, old.Created, old.Revision+1
	}
	obj.ARN = world.ARN("fwtest", thingType, obj.ID)
	if err := r.c.store.Put(obj); err != nil {
		return err
	}
	m.ID = types.StringValue(obj.ID)
	return nil
}

func (r *thingV0) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m thingModelV0
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.put(ctx, &m, nil); err != nil {
		resp.Diagnostics.AddError("Create failed", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *thingV0) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m thingModelV0
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	obj, err := r.c.store.Get(thingType, m.ID.ValueString())
	if errors.Is(err, world.ErrNotFound) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Read failed", err.Error())
		return
	}
	m.Name, m.Label, m.Secret, m.Tags = types.StringValue(obj.Name), types.StringPointerValue(obj.Description), types.StringPointerValue(obj.Secret), obj.Tags
	if !m.Size.IsNull() || obj.Size != 1 {
		m.Size = types.StringValue(strconv.FormatInt(obj.Size, 10))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *thingV0) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m thingModelV0
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	old, err := r.c.store.Get(thingType, m.ID.ValueString())
	if err == nil {
		err = r.put(ctx, &m, old)
	}
	if err != nil {
		resp.Diagnostics.AddError("Update failed", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *thingV0) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var id types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &id)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.c.store.Delete(thingType, id.ValueString()); err != nil {
		resp.Diagnostics.AddError("Delete failed", err.Error())
	}
}

func (r *thingV0) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
