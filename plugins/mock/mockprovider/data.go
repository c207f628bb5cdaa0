package mockprovider

import (
	"context"
	"slices"

	"github.com/bulwark-iac/bulwark/sdk"
)

// The mock's data source: lookup reads a resource that exists in the
// mock's world (made by any stack, or put there by hand) by type and name,
// as a cloud's data sources find what a configuration does not manage.
const dataLookup = "lookup"

var _ sdk.DataReader = (*provider)(nil)

// dataSources returns the schema of every data source the provider reads.
func dataSources() []sdk.DataSourceType {
	return []sdk.DataSourceType{{
		Name:        dataLookup,
		Description: "an existing resource of the mock's world, by type and name (and zone, when two zones hold one of that name); an error when there is none",
		Attributes: []sdk.Attribute{
			{Name: "type", Type: sdk.TypeString, Required: true, Description: "the resource's type (s3_bucket, network, ...)"},
			{Name: "name", Type: sdk.TypeString, Required: true, Description: "the resource's name"},
			{Name: attrZone, Type: sdk.TypeString, Description: "its zone; needed only when two zones hold a resource of that type and name"},
			{Name: "id", Type: sdk.TypeString, Computed: true, Description: "the resource's id"},
			{Name: attrARN, Type: sdk.TypeString, Computed: true, Description: "its ARN, mock:TYPE:NAME:ID"},
			{Name: "size", Type: sdk.TypeNumber, Computed: true, Description: "its size (null when it has none)"},
			{Name: attrTags, Type: sdk.TypeMap, Computed: true, Description: "its tags"},
			{Name: attrCreatedAt, Type: sdk.TypeString, Computed: true, Description: "when it was created"},
			{Name: attrSecret, Type: sdk.TypeString, Computed: true, Sensitive: true, Description: "its secret; sealed and never shown"},
		},
	}}
}

// ReadData reads a lookup: the one resource of the world with that type
// and name (and zone), or an error naming what was looked for. It changes
// nothing, so a read-only session reads too.
func (p *provider) ReadData(ctx context.Context, req *sdk.ReadDataRequest) (*sdk.ReadDataResponse, error) {
	if req.Type != dataLookup {
		return nil, sdk.Errorf("unknown data source type %q", req.Type)
	}
	if err := p.arrive(ctx, "ReadData", 1, req.Name); err != nil {
		return nil, err
	}
	typ, _ := req.Config["type"].(string)
	name, _ := req.Config["name"].(string)
	zone, zoned := req.Config[attrZone].(string)
	if _, ok := p.types[typ]; !ok {
		return &sdk.ReadDataResponse{Diagnostics: sdk.Diagnostics{sdk.AttributeErrorf([]string{"type"}, "data %s: the mock has no resource type %q", req.Name, typ)}}, nil
	}
	var r *resource
	var found []*resource
	err := p.view(func(w *world) {
		if zoned {
			r = w.byTypeName(typ, name, zone)
			return
		}
		for tn, res := range w.byTN {
			if tn.typ == typ && tn.name == name {
				found = append(found, res)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	// A resource in the world is never changed in place (a change puts a
	// new one), so what the view found can be read after it.
	if len(found) > 1 {
		var zones []string
		for _, f := range found {
			zones = append(zones, zoneOf(f.Attributes))
		}
		slices.Sort(zones)
		return nil, sdk.Errorf("data %s: the mock holds %d resources %s %q, in zones %q: set zone to say which", req.Name, len(found), typ, name, zones)
	}
	if len(found) == 1 {
		r = found[0]
	}
	if r == nil {
		where := ""
		if zoned {
			where = " in zone " + zone
		}
		return nil, sdk.Errorf("data %s: the mock holds no %s named %q%s", req.Name, typ, name, where)
	}
	a := r.attributes()
	out := sdk.Attributes{"type": typ, "name": name, attrZone: a[attrZone], "id": r.ID, attrARN: a[attrARN], attrTags: a[attrTags],
		"size": a["size"], attrCreatedAt: a[attrCreatedAt], attrSecret: a[attrSecret]}
	if out[attrTags] == nil {
		out[attrTags] = map[string]any{}
	}
	return &sdk.ReadDataResponse{Attributes: out}, nil
}
