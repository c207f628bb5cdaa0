// Package sdktest is a Terraform provider on terraform-plugin-sdk/v2
// (plugin protocol 5), the twin of fwtest on the older SDK most published
// providers still use. Its objects live in the same kind of world folder.
package sdktest

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-sdk/v2/plugin"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
)

// Address is the provider's source address.
const Address = "registry.terraform.io/bulwark/sdktest"

// Serve runs the provider as a plugin of the process that started it.
func Serve(version string) {
	plugin.Serve(&plugin.ServeOpts{
		ProviderAddr: Address,
		ProviderFunc: func() *schema.Provider { return Provider(version) },
	})
}

// client is the provider's meta: what every CRUD function receives.
type client struct {
	store    *world.Store
	latency  time.Duration
	version  string
	tokenSet bool
}

func (c *client) call(ctx context.Context) error { return world.Latency(ctx, c.latency) }

// Provider returns the provider's definition.
func Provider(version string) *schema.Provider {
	return &schema.Provider{
		Schema: map[string]*schema.Schema{
			"world": {
				Type:        schema.TypeString,
				Optional:    true,
				Description: "Folder holding the objects; default $" + world.EnvDir + ".",
			},
			"latency_ms": {
				Type:        schema.TypeInt,
				Optional:    true,
				Description: "Milliseconds each API call (read, create, update, delete, import, data source read) sleeps.",
			},
			"token": {
				Type:        schema.TypeString,
				Optional:    true,
				Sensitive:   true,
				Description: "A credential stand-in: never used, only reported as set by the identity data source.",
			},
		},
		ResourcesMap: map[string]*schema.Resource{
			thingType: thingResourceFor(),
			itemType:  itemResource(),
		},
		DataSourcesMap: map[string]*schema.Resource{
			thingType:          thingDataSource(),
			"sdktest_identity": identityDataSource(),
		},
		ConfigureContextFunc: func(_ context.Context, d *schema.ResourceData) (any, diag.Diagnostics) {
			ms := d.Get("latency_ms").(int)
			if ms < 0 {
				return nil, diag.Errorf("latency_ms must not be negative")
			}
			store, err := world.Open(d.Get("world").(string))
			if err != nil {
				return nil, diag.FromErr(err)
			}
			return &client{
				store:    store,
				latency:  time.Duration(ms) * time.Millisecond,
				version:  version,
				tokenSet: d.Get("token").(string) != "",
			}, nil
		},
	}
}
