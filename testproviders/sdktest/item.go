package sdktest

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

const itemType = "sdktest_item"

// itemResource is the smallest resource: what a 1,000-resource benchmark
// creates, so that the SDK's per-call work stays small beside the host's.
func itemResource() *schema.Resource {
	put := func(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
		c := meta.(*client)
		if err := c.call(ctx); err != nil {
			return diag.FromErr(err)
		}
		it := &world.Item{Type: itemType, ID: d.Id(), Name: d.Get("name").(string)}
		if v := d.Get("value").(string); v != "" {
			it.Value = &v
		}
		return diag.FromErr(c.store.PutItem(it))
	}
	return &schema.Resource{
		Description: "The smallest object of the world, for benchmarks.",
		CreateContext: func(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
			d.SetId(world.NewID())
			if diags := put(ctx, d, meta); diags.HasError() {
				d.SetId("")
				return diags
			}
			return nil
		},
		ReadContext: func(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
			c := meta.(*client)
			if err := c.call(ctx); err != nil {
				return diag.FromErr(err)
			}
			it, err := c.store.GetItem(itemType, d.Id())
			if errors.Is(err, world.ErrNotFound) {
				d.SetId("")
				return nil
			}
			if err != nil {
				return diag.FromErr(err)
			}
			value := ""
			if it.Value != nil {
				value = *it.Value
			}
			return diag.FromErr(errors.Join(d.Set("name", it.Name), d.Set("value", value)))
		},
		UpdateContext: put,
		DeleteContext: func(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
			c := meta.(*client)
			if err := c.call(ctx); err != nil {
				return diag.FromErr(err)
			}
			return diag.FromErr(c.store.Delete(itemType, d.Id()))
		},
		Importer: &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"name":  {Type: schema.TypeString, Required: true, ForceNew: true},
			"value": {Type: schema.TypeString, Optional: true},
		},
	}
}
