package sdktest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-cty/cty"
	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

const thingType = "sdktest_thing"

// updatable is every argument an update changes in place.
var updatable = []string{"size", "description", "secret", "legacy_note", "tags", "fail_after_create", "network", "rule", "port"}

func thingResource() *schema.Resource {
	return &schema.Resource{
		Description:   "An object of the world: one JSON file, TYPE/ID.json.",
		CreateContext: createThing,
		ReadContext:   readThing,
		UpdateContext: updateThing,
		DeleteContext: deleteThing,
		Importer:      &schema.ResourceImporter{StateContext: importThing},
		// The SDK keeps the timeouts (and the schema version) in the
		// resource's private state: the one private data an SDKv2 provider
		// has, since the SDK offers it no API of its own for it.
		Timeouts: &schema.ResourceTimeout{
			Create: schema.DefaultTimeout(5 * time.Minute),
			Delete: schema.DefaultTimeout(5 * time.Minute),
		},
		SchemaVersion: 1,
		StateUpgraders: []schema.StateUpgrader{{
			Version: 0,
			Type:    thingV0().CoreConfigSchema().ImpliedType(),
			Upgrade: upgradeThingV0,
		}},
		// revision moves with every update: say so in the plan, or
		// Terraform would see an unplanned change.
		CustomizeDiff: func(_ context.Context, d *schema.ResourceDiff, _ any) error {
			if d.Id() != "" && d.HasChanges(updatable...) {
				return d.SetNewComputed("revision")
			}
			return nil
		},
		Schema: map[string]*schema.Schema{
			"arn": {Type: schema.TypeString, Computed: true},
			"name": {
				Type:        schema.TypeString,
				Required:    true,
				ForceNew:    true,
				Description: "Changing it replaces the object.",
			},
			"size": {
				Type:     schema.TypeInt,
				Optional: true,
				Default:  1,
				ValidateDiagFunc: func(v any, p cty.Path) diag.Diagnostics {
					if v.(int) < 0 {
						return diag.Diagnostics{{Severity: diag.Error, Summary: "Invalid size", Detail: "size must not be negative.", AttributePath: p}}
					}
					return nil
				},
			},
			"description": {Type: schema.TypeString, Optional: true},
			"secret":      {Type: schema.TypeString, Optional: true, Sensitive: true},
			"legacy_note": {
				Type:       schema.TypeString,
				Optional:   true,
				Deprecated: "legacy_note is deprecated: use description.",
			},
			"tags": {Type: schema.TypeMap, Optional: true, Elem: &schema.Schema{Type: schema.TypeString}},
			"revision": {
				Type:        schema.TypeInt,
				Computed:    true,
				Description: "1 after create, one more after each update.",
			},
			"fail_after_create": {
				Type:        schema.TypeBool,
				Optional:    true,
				Description: "Create writes the object, then fails: Terraform keeps it as tainted.",
			},
			"network": {
				Type:     schema.TypeList,
				Optional: true,
				MaxItems: 1,
				Elem: &schema.Resource{Schema: map[string]*schema.Schema{
					"cidr":   {Type: schema.TypeString, Optional: true},
					"public": {Type: schema.TypeBool, Optional: true},
				}},
			},
			"rule": {
				Type:     schema.TypeList,
				Optional: true,
				Elem: &schema.Resource{Schema: map[string]*schema.Schema{
					"name":     {Type: schema.TypeString, Required: true},
					"priority": {Type: schema.TypeInt, Optional: true},
				}},
			},
			"port": {
				Type:     schema.TypeSet,
				Optional: true,
				Elem: &schema.Resource{Schema: map[string]*schema.Schema{
					"number":   {Type: schema.TypeInt, Required: true},
					"protocol": {Type: schema.TypeString, Optional: true},
				}},
			},
		},
	}
}

// thingV0 is schema version 0: the description was called label and the
// size was a string.
func thingV0() *schema.Resource {
	return &schema.Resource{Schema: map[string]*schema.Schema{
		"name":   {Type: schema.TypeString, Required: true, ForceNew: true},
		"label":  {Type: schema.TypeString, Optional: true},
		"size":   {Type: schema.TypeString, Optional: true},
		"secret": {Type: schema.TypeString, Optional: true, Sensitive: true},
		"tags":   {Type: schema.TypeMap, Optional: true, Elem: &schema.Schema{Type: schema.TypeString}},
	}}
}

func upgradeThingV0(_ context.Context, raw map[string]any, _ any) (map[string]any, error) {
	if raw == nil {
		return raw, nil
	}
	raw["description"] = raw["label"]
	delete(raw, "label")
	size := 1
	if s, _ := raw["size"].(string); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("upgrade size %q: %w", s, err)
		}
		size = n
	}
	raw["size"] = size
	id, _ := raw["id"].(string)
	raw["arn"] = world.ARN("sdktest", thingType, id)
	raw["revision"] = 1
	return raw, nil
}

func objectFrom(d *schema.ResourceData) *world.Thing {
	str := func(k string) *string {
		if s := d.Get(k).(string); s != "" {
			return &s
		}
		return nil
	}
	t := &world.Thing{
		Type:        thingType,
		Name:        d.Get("name").(string),
		Size:        int64(d.Get("size").(int)),
		Description: str("description"),
		Secret:      str("secret"),
		LegacyNote:  str("legacy_note"),
		Rules:       []world.Rule{},
		Ports:       []world.Port{},
	}
	if tags := d.Get("tags").(map[string]any); len(tags) > 0 {
		t.Tags = make(map[string]string, len(tags))
		for k, v := range tags {
			t.Tags[k] = v.(string)
		}
	}
	if l := d.Get("network").([]any); len(l) == 1 {
		n := &world.Network{}
		if m, ok := l[0].(map[string]any); ok { // nil for an empty network {}
			if s := m["cidr"].(string); s != "" {
				n.CIDR = &s
			}
			if b := m["public"].(bool); b {
				n.Public = &b
			}
		}
		t.Network = n
	}
	for _, e := range d.Get("rule").([]any) {
		m, _ := e.(map[string]any)
		r := world.Rule{Name: m["name"].(string)}
		if p := int64(m["priority"].(int)); p != 0 {
			r.Priority = &p
		}
		t.Rules = append(t.Rules, r)
	}
	for _, e := range d.Get("port").(*schema.Set).List() {
		m, _ := e.(map[string]any)
		p := world.Port{Number: int64(m["number"].(int))}
		if s := m["protocol"].(string); s != "" {
			p.Protocol = &s
		}
		t.Ports = append(t.Ports, p)
	}
	return t
}

func setFrom(d *schema.ResourceData, t *world.Thing) diag.Diagnostics {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	var network []any
	if t.Network != nil {
		m := map[string]any{"cidr": deref(t.Network.CIDR), "public": false}
		if t.Network.Public != nil {
			m["public"] = *t.Network.Public
		}
		network = []any{m}
	}
	rules := []any{}
	for _, r := range t.Rules {
		m := map[string]any{"name": r.Name, "priority": 0}
		if r.Priority != nil {
			m["priority"] = int(*r.Priority)
		}
		rules = append(rules, m)
	}
	ports := []any{}
	for _, p := range t.Ports {
		ports = append(ports, map[string]any{"number": int(p.Number), "protocol": deref(p.Protocol)})
	}
	tags := map[string]any{}
	for k, v := range t.Tags {
		tags[k] = v
	}
	var errs []error
	for k, v := range map[string]any{
		"arn":         t.ARN,
		"name":        t.Name,
		"size":        int(t.Size),
		"description": deref(t.Description),
		"secret":      deref(t.Secret),
		"legacy_note": deref(t.LegacyNote),
		"tags":        tags,
		"revision":    int(t.Revision),
		"network":     network,
		"rule":        rules,
		"port":        ports,
	} {
		if err := d.Set(k, v); err != nil {
			errs = append(errs, fmt.Errorf("set %s: %w", k, err))
		}
	}
	return diag.FromErr(errors.Join(errs...))
}

func createThing(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client)
	if err := c.call(ctx); err != nil {
		return diag.FromErr(err)
	}
	now := time.Now().UTC()
	t := objectFrom(d)
	t.ID = world.NewID()
	t.ARN = world.ARN("sdktest", thingType, t.ID)
	t.Revision = 1
	t.Created, t.Updated = now, now
	if err := c.store.Put(t); err != nil {
		return diag.FromErr(err)
	}
	d.SetId(t.ID)
	if diags := setFrom(d, t); diags.HasError() {
		return diags
	}
	if d.Get("fail_after_create").(bool) {
		// With the id set, the SDK returns the state beside the error and
		// Terraform records the object as tainted.
		return diag.Errorf("fail_after_create is set: %s %s exists in the world but its create reports failure", thingType, t.ID)
	}
	return nil
}

func readThing(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client)
	if err := c.call(ctx); err != nil {
		return diag.FromErr(err)
	}
	t, err := c.store.Get(thingType, d.Id())
	if errors.Is(err, world.ErrNotFound) {
		d.SetId("")
		return nil
	}
	if err != nil {
		return diag.FromErr(err)
	}
	return setFrom(d, t)
}

func updateThing(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client)
	if err := c.call(ctx); err != nil {
		return diag.FromErr(err)
	}
	old, err := c.store.Get(thingType, d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	t := objectFrom(d)
	t.ID, t.ARN = old.ID, old.ARN
	t.Revision = old.Revision + 1
	t.Created, t.Updated = old.Created, time.Now().UTC()
	if err := c.store.Put(t); err != nil {
		return diag.FromErr(err)
	}
	return setFrom(d, t)
}

func deleteThing(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client)
	if err := c.call(ctx); err != nil {
		return diag.FromErr(err)
	}
	return diag.FromErr(c.store.Delete(thingType, d.Id()))
}

// importThing takes an object's id; the SDK then reads the rest.
func importThing(ctx context.Context, d *schema.ResourceData, meta any) ([]*schema.ResourceData, error) {
	c := meta.(*client)
	if err := c.call(ctx); err != nil {
		return nil, err
	}
	if _, err := c.store.Get(thingType, d.Id()); err != nil {
		return nil, err
	}
	return []*schema.ResourceData{d}, nil
}
