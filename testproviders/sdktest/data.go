package sdktest

import (
	"context"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
)

// thingDataSource reads an object of the world by name: how a
// configuration refers to something it does not manage.
func thingDataSource() *schema.Resource {
	return &schema.Resource{
		Description: "Reads the one sdktest_thing of the world with this name.",
		ReadContext: func(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
			c := meta.(*client)
			if err := c.call(ctx); err != nil {
				return diag.FromErr(err)
			}
			t, err := c.store.FindByName(thingType, d.Get("name").(string))
			if err != nil {
				return diag.FromErr(err)
			}
			d.SetId(t.ID)
			tags := map[string]any{}
			for k, v := range t.Tags {
				tags[k] = v
			}
			str := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			for k, v := range map[string]any{
				"arn":         t.ARN,
				"size":        int(t.Size),
				"description": str(t.Description),
				"secret":      str(t.Secret),
				"tags":        tags,
				"revision":    int(t.Revision),
			} {
				if err := d.Set(k, v); err != nil {
					return diag.FromErr(err)
				}
			}
			return nil
		},
		Schema: map[string]*schema.Schema{
			"name":        {Type: schema.TypeString, Required: true},
			"arn":         {Type: schema.TypeString, Computed: true},
			"size":        {Type: schema.TypeInt, Computed: true},
			"description": {Type: schema.TypeString, Computed: true},
			"secret":      {Type: schema.TypeString, Computed: true, Sensitive: true},
			"tags":        {Type: schema.TypeMap, Computed: true, Elem: &schema.Schema{Type: schema.TypeString}},
			"revision":    {Type: schema.TypeInt, Computed: true},
		},
	}
}

// identityDataSource says which provider and world a configuration talks
// to, as a cloud's caller-identity data source does.
func identityDataSource() *schema.Resource {
	return &schema.Resource{
		Description: "The provider's identity: its address, version and world folder.",
		ReadContext: func(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
			c := meta.(*client)
			if err := c.call(ctx); err != nil {
				return diag.FromErr(err)
			}
			d.SetId(Address)
			for k, v := range map[string]any{
				"world":     c.store.Dir,
				"version":   c.version,
				"protocol":  5,
				"token_set": c.tokenSet,
			} {
				if err := d.Set(k, v); err != nil {
					return diag.FromErr(err)
				}
			}
			return nil
		},
		Schema: map[string]*schema.Schema{
			"world":     {Type: schema.TypeString, Computed: true},
			"version":   {Type: schema.TypeString, Computed: true},
			"protocol":  {Type: schema.TypeInt, Computed: true},
			"token_set": {Type: schema.TypeBool, Computed: true},
		},
	}
}
