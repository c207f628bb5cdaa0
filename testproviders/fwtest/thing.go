package fwtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

const thingType = "fwtest_thing"

// privateToken is the private-state key holding the object's token (see
// world.Thing.Token).
const privateToken = "token"

type thing struct {
	c *client
}

func newThing() resource.Resource { return &thing{} }

var (
	_ resource.ResourceWithConfigure      = (*thing)(nil)
	_ resource.ResourceWithImportState    = (*thing)(nil)
	_ resource.ResourceWithUpgradeState   = (*thing)(nil)
	_ resource.ResourceWithValidateConfig = (*thing)(nil)
)

type thingModel struct {
	ID              types.String             `tfsdk:"id"`
	ARN             types.String             `tfsdk:"arn"`
	Name            types.String             `tfsdk:"name"`
	Size            types.Int64              `tfsdk:"size"`
	Description     types.String             `tfsdk:"description"`
	Secret          types.String             `tfsdk:"secret"`
	LegacyNote      types.String             `tfsdk:"legacy_note"`
	Tags            map[string]string        `tfsdk:"tags"`
	Revision        types.Int64              `tfsdk:"revision"`
	FailAfterCreate types.Bool               `tfsdk:"fail_after_create"`
	Endpoint        *endpointModel           `tfsdk:"endpoint"`
	Listeners       map[string]listenerModel `tfsdk:"listeners"`
	Network         *networkModel            `tfsdk:"network"`
	Rules           []ruleModel              `tfsdk:"rule"`
	Ports           []portModel              `tfsdk:"port"`
}

type endpointModel struct {
	Host types.String `tfsdk:"host"`
	Port types.Int64  `tfsdk:"port"`
}

type listenerModel struct {
	Port     types.Int64  `tfsdk:"port"`
	Protocol types.String `tfsdk:"protocol"`
}

type networkModel struct {
	CIDR   types.String `tfsdk:"cidr"`
	Public types.Bool   `tfsdk:"public"`
}

type ruleModel struct {
	Name     types.String `tfsdk:"name"`
	Priority types.Int64  `tfsdk:"priority"`
}

type portModel struct {
	Number   types.Int64  `tfsdk:"number"`
	Protocol types.String `tfsdk:"protocol"`
}

func (r *thing) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = thingType
}

func (r *thing) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Version:     1,
		Description: "An object of the world: one JSON file, TYPE/ID.json.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"arn": schema.StringAttribute{
				Computed:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required:      true,
				Description:   "Changing it replaces the object.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"size": schema.Int64Attribute{
				Optional: true,
				Computed: true,
				Default:  int64default.StaticInt64(1),
			},
			"description": schema.StringAttribute{Optional: true},
			"secret":      schema.StringAttribute{Optional: true, Sensitive: true},
			"legacy_note": schema.StringAttribute{
				Optional:           true,
				DeprecationMessage: "legacy_note is deprecated: use description.",
			},
			"tags": schema.MapAttribute{Optional: true, ElementType: types.StringType},
			"revision": schema.Int64Attribute{
				Computed:    true,
				Description: "1 after create, one more after each update.",
			},
			"fail_after_create": schema.BoolAttribute{
				Optional:    true,
				Description: "Create writes the object, then fails: Terraform keeps it as tainted.",
			},
			"endpoint": schema.SingleNestedAttribute{
				Optional: true,
				Attributes: map[string]schema.Attribute{
					"host": schema.StringAttribute{Required: true},
					"port": schema.Int64Attribute{Optional: true},
				},
			},
			"listeners": schema.MapNestedAttribute{
				Optional: true,
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"port":     schema.Int64Attribute{Required: true},
						"protocol": schema.StringAttribute{Optional: true},
					},
				},
			},
		},
		Blocks: map[string]schema.Block{
			"network": schema.SingleNestedBlock{
				Attributes: map[string]schema.Attribute{
					"cidr":   schema.StringAttribute{Optional: true},
					"public": schema.BoolAttribute{Optional: true},
				},
			},
			"rule": schema.ListNestedBlock{
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"name":     schema.StringAttribute{Required: true},
						"priority": schema.Int64Attribute{Optional: true},
					},
				},
			},
			"port": schema.SetNestedBlock{
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"number":   schema.Int64Attribute{Required: true},
						"protocol": schema.StringAttribute{Optional: true},
					},
				},
			},
		},
	}
}

func (r *thing) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return // before the provider is configured (validation)
	}
	c, ok := req.ProviderData.(*client)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T", req.ProviderData))
		return
	}
	r.c = c
}

// ValidateConfig is the provider's own validation, beside the schema's.
func (r *thing) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var size types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("size"), &size)...)
	if !size.IsNull() && !size.IsUnknown() && size.ValueInt64() < 0 {
		resp.Diagnostics.AddAttributeError(path.Root("size"), "Invalid size", "size must not be negative.")
	}
}

func (r *thing) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m thingModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Create interrupted", err.Error())
		return
	}
	now := time.Now().UTC()
	obj := fromModel(&m)
	obj.ID = world.NewID()
	obj.ARN = world.ARN("fwtest", thingType, obj.ID)
	obj.Revision = 1
	obj.Token = world.NewToken()
	obj.Created, obj.Updated = now, now
	if err := r.c.store.Put(obj); err != nil {
		resp.Diagnostics.AddError("Create failed", err.Error())
		return
	}
	toModel(obj, &m)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateToken, []byte(strconv.Quote(obj.Token)))...)
	if m.FailAfterCreate.ValueBool() {
		// The state set above goes back with the error: Terraform records
		// the object as tainted rather than forgetting it.
		resp.Diagnostics.AddError("Create failed after the object was made",
			fmt.Sprintf("fail_after_create is set: %s %s exists in the world but its create reports failure.", thingType, obj.ID))
	}
}

func (r *thing) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m thingModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Read interrupted", err.Error())
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
	toModel(obj, &m)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *thing) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m thingModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Update interrupted", err.Error())
		return
	}
	old, err := r.c.store.Get(thingType, m.ID.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Update failed", err.Error())
		return
	}
	// Objects made before schema version 1 have no token; every other one
	// must come with the token its last create, import or update returned.
	if old.Token != "" {
		tok, diags := req.Private.GetKey(ctx, privateToken)
		resp.Diagnostics.Append(diags...)
		if string(tok) != strconv.Quote(old.Token) {
			resp.Diagnostics.AddError("Private state lost",
				fmt.Sprintf("%s %s: the private state holds token %s, the object has %q: the host did not carry the private state the last call returned.", thingType, old.ID, tok, old.Token))
			return
		}
	}
	obj := fromModel(&m)
	obj.ID, obj.ARN = old.ID, old.ARN
	obj.Revision = old.Revision + 1
	obj.Token = world.NewToken()
	obj.Created, obj.Updated = old.Created, time.Now().UTC()
	if err := r.c.store.Put(obj); err != nil {
		resp.Diagnostics.AddError("Update failed", err.Error())
		return
	}
	toModel(obj, &m)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateToken, []byte(strconv.Quote(obj.Token)))...)
}

func (r *thing) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var id types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &id)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Delete interrupted", err.Error())
		return
	}
	if err := r.c.store.Delete(thingType, id.ValueString()); err != nil {
		resp.Diagnostics.AddError("Delete failed", err.Error())
	}
}

// ImportState takes an object's id; Read then fills in the rest. The
// object's token goes into the private state, as a create would put it.
func (r *thing) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if err := r.c.call(ctx); err != nil {
		resp.Diagnostics.AddError("Import interrupted", err.Error())
		return
	}
	obj, err := r.c.store.Get(thingType, req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Cannot import", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), obj.ID)...)
	if obj.Token != "" {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateToken, []byte(strconv.Quote(obj.Token)))...)
	}
}

// thingModelV0 is schema version 0: the description was called label and
// the size was a string.
type thingModelV0 struct {
	ID     types.String      `tfsdk:"id"`
	Name   types.String      `tfsdk:"name"`
	Label  types.String      `tfsdk:"label"`
	Size   types.String      `tfsdk:"size"`
	Secret types.String      `tfsdk:"secret"`
	Tags   map[string]string `tfsdk:"tags"`
}

func (r *thing) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	v0 := &schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id":     schema.StringAttribute{Computed: true},
			"name":   schema.StringAttribute{Required: true},
			"label":  schema.StringAttribute{Optional: true},
			"size":   schema.StringAttribute{Optional: true},
			"secret": schema.StringAttribute{Optional: true, Sensitive: true},
			"tags":   schema.MapAttribute{Optional: true, ElementType: types.StringType},
		},
	}
	return map[int64]resource.StateUpgrader{0: {
		PriorSchema: v0,
		StateUpgrader: func(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
			var old thingModelV0
			resp.Diagnostics.Append(req.State.Get(ctx, &old)...)
			if resp.Diagnostics.HasError() {
				return
			}
			size := int64(1)
			if s := old.Size.ValueString(); s != "" {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					resp.Diagnostics.AddAttributeError(path.Root("size"), "Cannot upgrade size", err.Error())
					return
				}
				size = n
			}
			m := thingModel{
				ID:              old.ID,
				ARN:             types.StringValue(world.ARN("fwtest", thingType, old.ID.ValueString())),
				Name:            old.Name,
				Size:            types.Int64Value(size),
				Description:     old.Label,
				Secret:          old.Secret,
				LegacyNote:      types.StringNull(),
				Tags:            old.Tags,
				Revision:        types.Int64Value(1),
				FailAfterCreate: types.BoolNull(),
				Rules:           []ruleModel{},
				Ports:           []portModel{},
			}
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		},
	}}
}

func fromModel(m *thingModel) *world.Thing {
	t := &world.Thing{
		Type:        thingType,
		Name:        m.Name.ValueString(),
		Size:        m.Size.ValueInt64(),
		Description: m.Description.ValueStringPointer(),
		Secret:      m.Secret.ValueStringPointer(),
		LegacyNote:  m.LegacyNote.ValueStringPointer(),
		Tags:        m.Tags,
		Rules:       []world.Rule{},
		Ports:       []world.Port{},
	}
	if m.Endpoint != nil {
		t.Endpoint = &world.Endpoint{Host: m.Endpoint.Host.ValueString(), Port: m.Endpoint.Port.ValueInt64Pointer()}
	}
	if m.Listeners != nil {
		t.Listeners = make(map[string]world.Listener, len(m.Listeners))
		for k, l := range m.Listeners {
			t.Listeners[k] = world.Listener{Port: l.Port.ValueInt64(), Protocol: l.Protocol.ValueStringPointer()}
		}
	}
	if m.Network != nil {
		t.Network = &world.Network{CIDR: m.Network.CIDR.ValueStringPointer(), Public: m.Network.Public.ValueBoolPointer()}
	}
	for _, r := range m.Rules {
		t.Rules = append(t.Rules, world.Rule{Name: r.Name.ValueString(), Priority: r.Priority.ValueInt64Pointer()})
	}
	for _, p := range m.Ports {
		t.Ports = append(t.Ports, world.Port{Number: p.Number.ValueInt64(), Protocol: p.Protocol.ValueStringPointer()})
	}
	return t
}

// toModel overwrites m with the object; fail_after_create is
// configuration only and stays as it is.
func toModel(t *world.Thing, m *thingModel) {
	m.ID = types.StringValue(t.ID)
	m.ARN = types.StringValue(t.ARN)
	m.Name = types.StringValue(t.Name)
	m.Size = types.Int64Value(t.Size)
	m.Description = types.StringPointerValue(t.Description)
	m.Secret = types.StringPointerValue(t.Secret)
	m.LegacyNote = types.StringPointerValue(t.LegacyNote)
	m.Tags = t.Tags
	m.Revision = types.Int64Value(t.Revision)
	m.Endpoint = nil
	if t.Endpoint != nil {
		m.Endpoint = &endpointModel{Host: types.StringValue(t.Endpoint.Host), Port: types.Int64PointerValue(t.Endpoint.Port)}
	}
	m.Listeners = nil
	if t.Listeners != nil {
		m.Listeners = make(map[string]listenerModel, len(t.Listeners))
		for k, l := range t.Listeners {
			m.Listeners[k] = listenerModel{Port: types.Int64Value(l.Port), Protocol: types.StringPointerValue(l.Protocol)}
		}
	}
	m.Network = nil
	if t.Network != nil {
		m.Network = &networkModel{CIDR: types.StringPointerValue(t.Network.CIDR), Public: types.BoolPointerValue(t.Network.Public)}
	}
	// Blocks are never null in a configuration (absent is empty), so an
	// object stored without them reads back empty.
	m.Rules = []ruleModel{}
	for _, r := range t.Rules {
		m.Rules = append(m.Rules, ruleModel{Name: types.StringValue(r.Name), Priority: types.Int64PointerValue(r.Priority)})
	}
	m.Ports = []portModel{}
	for _, p := range t.Ports {
		m.Ports = append(m.Ports, portModel{Number: types.Int64Value(p.Number), Protocol: types.StringPointerValue(p.Protocol)})
	}
}
