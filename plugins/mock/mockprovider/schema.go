package mockprovider

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/bulwark-iac/bulwark/sdk"
)

// Name and Version are what GetSchema reports.
const (
	Name    = "mock"
	Version = "0.1.0"
)

// Attributes with a meaning to the provider.
const (
	attrCreatedAt = "created_at" // computed: when it was created
	attrARN       = "arn"        // computed: mock:TYPE:NAME:ID, for references
	attrSecret    = "secret"     // sensitive: the host never shows it
	attrTags      = "tags"       // a map of strings, updated in place
	attrZone      = "zone"       // force_new; part of a resource's identity
)

// resourceTypes returns the schema of every type the provider manages. It
// builds a fresh value on every call: there is no package-level state.
func resourceTypes() []sdk.ResourceType {
	common := func(name, desc string, extra ...sdk.Attribute) sdk.ResourceType {
		attrs := []sdk.Attribute{
			{Name: "size", Type: sdk.TypeNumber, Description: "a size; updated in place"},
			{Name: attrZone, Type: sdk.TypeString, ForceNew: true, Description: "a zone; a change replaces the resource"},
			{Name: attrSecret, Type: sdk.TypeString, Sensitive: true, Description: "a secret value; updated in place; never shown"},
			{Name: attrTags, Type: sdk.TypeMap, Description: "tags: a map of strings; updated in place"},
		}
		attrs = append(attrs, extra...)
		attrs = append(attrs,
			sdk.Attribute{Name: attrCreatedAt, Type: sdk.TypeString, Computed: true, Description: "when the resource was created (RFC 3339, UTC)"},
			sdk.Attribute{Name: attrARN, Type: sdk.TypeString, Computed: true, Description: "the resource's ARN, mock:TYPE:NAME:ID (known after create)"})
		// A resource's identity is its type, name and zone: a replace
		// that changes the zone makes the new one first (the old one is
		// deleted once the rest of the run succeeded); any other replace
		// (a bucket's name, --replace alone) deletes the old one first.
		return sdk.ResourceType{Name: name, Description: desc, Attributes: attrs,
			Coexistence: sdk.Coexistence{WhenDiffers: []string{attrZone}}}
	}
	return []sdk.ResourceType{
		common("s3_bucket", "a simulated object store bucket (durable)",
			sdk.Attribute{Name: "bucket", Type: sdk.TypeString, ForceNew: true, Description: "the bucket's name"}),
		common("dynamodb_table", "a simulated key-value table (durable)",
			sdk.Attribute{Name: "table", Type: sdk.TypeString, ForceNew: true, Description: "the table's name"},
			sdk.Attribute{Name: "hash_key", Type: sdk.TypeString, ForceNew: true, Description: "the table's hash key"}),
		common("network", "a simulated network"),
		common("compute", "a simulated compute instance"),
		common("load_balancer", "a simulated load balancer"),
		common("generic", "a resource with no behaviour of its own"),
	}
}

// resourceType returns the schema of the type named name.
func (p *provider) resourceType(name string) (sdk.ResourceType, error) {
	if rt, ok := p.types[name]; ok {
		return rt, nil
	}
	return sdk.ResourceType{}, sdk.Errorf("unknown resource type %q", name)
}

// arn is the computed ARN of the resource of type typ and name with id.
func arn(typ, name, id string) string { return "mock:" + typ + ":" + name + ":" + id }

// checkTags returns a diagnostic when cfg's tags is not a map of strings
// (the schema's type says only "a map").
func checkTags(cfg sdk.Attributes) sdk.Diagnostics {
	v, ok := cfg[attrTags]
	if !ok || v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return sdk.Diagnostics{sdk.AttributeErrorf([]string{attrTags}, "attribute %q must be a map of strings", attrTags)}
	}
	var ds sdk.Diagnostics
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, ok := m[k].(string); !ok {
			ds = append(ds, sdk.AttributeErrorf([]string{attrTags, k}, "tag %q must be a string, not %T", k, m[k]))
		}
	}
	return ds
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
