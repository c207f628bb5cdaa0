package sdktest

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

// EnvSchemaVersion, set to 0, makes sdktest_thing the provider's older
// release: schema version 0 (thingV0: the description called label, the
// size a string), so a test writes a state with it and reads it back with
// version 1, through its StateUpgraders. Unset or 1: the current one. The
// same switch as fwtest's.
const EnvSchemaVersion = "BULWARK_TFTEST_SCHEMA_VERSION"

// thingResourceFor is sdktest_thing as the environment asks for it.
func thingResourceFor() *schema.Resource {
	if os.Getenv(EnvSchemaVersion) == "0" {
		return thingResourceV0()
	}
	return thingResource()
}

// thingResourceV0 is sdktest_thing as schema version 0 served it: the
// schema the upgrader reads (thingV0), on the same world objects.
func thingResourceV0() *schema.Resource {
	r := thingV0()
	r.Description = "An object of the world, as schema version 0 had it."
	r.SchemaVersion = 0
	r.CreateContext = createThingV0
	r.ReadContext = readThingV0
	r.UpdateContext = updateThingV0
	r.DeleteContext = deleteThing
	r.Importer = &schema.ResourceImporter{StateContext: importThing}
	return r
}

// objectFromV0 is the world object a version 0 config describes.
func objectFromV0(d *schema.ResourceData) (*world.Thing, error) {
	size := int64(1)
	if s := d.Get("size").(string); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, err
		}
		size = n
	}
	str := func(k string) *string {
		if s := d.Get(k).(string); s != "" {
			return &s
		}
		return nil
	}
	t := &world.Thing{Type: thingType, Name: d.Get("name").(string), Size: size,
		Description: str("label"), Secret: str("secret"), Rules: []world.Rule{}, Ports: []world.Port{}}
	if tags := d.Get("tags").(map[string]any); len(tags) > 0 {
		t.Tags = make(map[string]string, len(tags))
		for k, v := range tags {
			t.Tags[k] = v.(string)
		}
	}
	return t, nil
}

func setFromV0(d *schema.ResourceData, t *world.Thing) diag.Diagnostics {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	tags := map[string]any{}
	for k, v := range t.Tags {
		tags[k] = v
	}
	var errs []error
	for k, v := range map[string]any{
		"name":   t.Name,
		"label":  deref(t.Description),
		"size":   strconv.FormatInt(t.Size, 10),
		"secret": deref(t.Secret),
		"tags":   tags,
	} {
		if err := d.Set(k, v); err != nil {
			errs = append(errs, err)
		}
	}
	return diag.FromErr(errors.Join(errs...))
}

func createThingV0(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client)
	if err := c.call(ctx); err != nil {
		return diag.FromErr(err)
	}
	t, err := objectFromV0(d)
	if err != nil {
		return diag.FromErr(err)
	}
	now := time.Now().UTC()
	t.ID = world.NewID()
	t.ARN = world.ARN("sdktest", thingType, t.ID)
	t.Revision, t.Created, t.Updated = 1, now, now
	if err := c.store.Put(t); err != nil {
		return diag.FromErr(err)
	}
	d.SetId(t.ID)
	return setFromV0(d, t)
}

func readThingV0(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
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
	return setFromV0(d, t)
}

func updateThingV0(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client)
	if err := c.call(ctx); err != nil {
		return diag.FromErr(err)
	}
	old, err := c.store.Get(thingType, d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	t, err := objectFromV0(d)
	if err != nil {
		return diag.FromErr(err)
	}
	t.ID, t.ARN, t.Revision = old.ID, old.ARN, old.Revision+1
	t.Created, t.Updated = old.Created, time.Now().UTC()
	if err := c.store.Put(t); err != nil {
		return diag.FromErr(err)
	}
	return setFromV0(d, t)
}
