package localprovider

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Name and Version are what GetSchema reports.
const (
	Name    = "local"
	Version = "0.1.0"
)

// Attributes with a meaning to the provider.
const (
	attrPath      = "path"       // the folder under the root; force_new
	attrCreatedAt = "created_at" // computed: when it was created
	attrFolder    = "folder"     // computed: the folder's absolute path
)

// resourceTypes returns the schema of every type the provider manages. It
// builds a fresh value on every call: there is no package-level state.
func resourceTypes() []sdk.ResourceType {
	common := func(name, desc string, extra ...sdk.Attribute) sdk.ResourceType {
		attrs := []sdk.Attribute{
			{Name: "size", Type: sdk.TypeNumber, Description: "a size; updated in place"},
			{Name: "zone", Type: sdk.TypeString, ForceNew: true, Description: "a zone; a change replaces the resource"},
			{Name: attrPath, Type: sdk.TypeString, ForceNew: true, Description: "the folder, relative to the root (default <type>/<name>); it never escapes the root"},
		}
		attrs = append(attrs, extra...)
		attrs = append(attrs,
			sdk.Attribute{Name: attrCreatedAt, Type: sdk.TypeString, Computed: true, Description: "when the resource was created (RFC 3339, UTC)"},
			sdk.Attribute{Name: attrFolder, Type: sdk.TypeString, Computed: true, Description: "the resource's folder (absolute path)"})
		// The provider knows one resource of a (type, name) at a time (its
		// folder, found by them): an old and a new one cannot exist at
		// once, so every replace deletes the old folder first, and a
		// durable one's replace needs --replace. The zero value says so.
		return sdk.ResourceType{Name: name, Description: desc, Attributes: attrs,
			Coexistence: sdk.Coexistence{}}
	}
	return []sdk.ResourceType{
		common("s3_bucket", "a folder seeded with objects/seed.txt, like a bucket seeded with an object (durable)",
			sdk.Attribute{Name: "bucket", Type: sdk.TypeString, ForceNew: true, Description: "the bucket's name"}),
		common("dynamodb_table", "a folder seeded with rows/seed.json, like a table seeded with a row (durable)",
			sdk.Attribute{Name: "table", Type: sdk.TypeString, ForceNew: true, Description: "the table's name"},
			sdk.Attribute{Name: "hash_key", Type: sdk.TypeString, ForceNew: true, Description: "the table's hash key"}),
		common("network", "a folder standing for a network"),
		common("compute", "a folder standing for a compute instance"),
		common("load_balancer", "a folder standing for a load balancer"),
		common("generic", "a plain folder"),
	}
}

// resourceType returns the schema of the type named name.
func resourceType(name string) (sdk.ResourceType, error) {
	for _, rt := range resourceTypes() {
		if rt.Name == name {
			return rt, nil
		}
	}
	return sdk.ResourceType{}, sdk.Errorf("unknown resource type %q", name)
}

// normalize returns a JSON round trip of a (so numbers are float64 and
// lists []any, as they arrive over the wire), without nil values.
func normalize(a sdk.Attributes) (sdk.Attributes, error) {
	out := sdk.Attributes{}
	if len(a) == 0 {
		return out, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode attributes: %w", err)
	}
	var m sdk.Attributes
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode attributes: %w", err)
	}
	for k, v := range m {
		if v != nil {
			out[k] = v
		}
	}
	return out, nil
}

// checkForceNew returns one diagnostic per force_new attribute whose value
// in cfg differs from the one in prior: such a change is a replace, never an
// Update.
func checkForceNew(rt sdk.ResourceType, prior, cfg sdk.Attributes) sdk.Diagnostics {
	var ds sdk.Diagnostics
	for _, a := range rt.Attributes {
		if !a.ForceNew || a.Computed {
			continue
		}
		if !reflect.DeepEqual(prior[a.Name], cfg[a.Name]) {
			ds = append(ds, sdk.AttributeErrorf([]string{a.Name},
				"attribute %q cannot be updated in place (it forces a new resource): %v -> %v", a.Name, prior[a.Name], cfg[a.Name]))
		}
	}
	return ds
}
