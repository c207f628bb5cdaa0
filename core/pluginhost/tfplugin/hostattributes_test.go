package tfplugin

import (
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// hostAttributes, which describes resource types and data sources alike:
// an argument is what the config may set (optional and computed
// included), a result is computed only, and anything holding a sensitive
// attribute (a block, a nested attribute, at any depth) is sealed whole.
func TestHostAttributes(t *testing.T) {
	b := &Block{
		Attributes: map[string]*Attribute{
			"name":   {Type: cty.String, Required: true},
			"filter": {Type: cty.String, Optional: true, Computed: true},
			"arn":    {Type: cty.String, Computed: true},
			"token":  {Type: cty.String, Computed: true, Sensitive: true},
			"conn": {Computed: true, NestedType: &Object{Nesting: NestingSingle, Attributes: map[string]*Attribute{
				"host": {Type: cty.String, Computed: true},
				"auth": {Computed: true, NestedType: &Object{Nesting: NestingList, Attributes: map[string]*Attribute{
					"password": {Type: cty.String, Computed: true, Sensitive: true},
				}}},
			}}},
			"plain": {Computed: true, NestedType: &Object{Nesting: NestingMap, Attributes: map[string]*Attribute{
				"v": {Type: cty.Number, Computed: true},
			}}},
		},
		BlockTypes: map[string]*NestedBlock{
			"rule": {Nesting: NestingList, MinItems: 1, Block: &Block{Attributes: map[string]*Attribute{
				"key": {Type: cty.String, Optional: true, Sensitive: true},
			}}},
		},
	}
	want := map[string]providers.Attribute{
		"name":   {Name: "name", Type: providers.TypeString, Required: true},
		"filter": {Name: "filter", Type: providers.TypeString},
		"arn":    {Name: "arn", Type: providers.TypeString, Computed: true},
		"token":  {Name: "token", Type: providers.TypeString, Computed: true, Sensitive: true},
		"conn":   {Name: "conn", Type: providers.TypeMap, Computed: true, Sensitive: true},
		"plain":  {Name: "plain", Type: providers.TypeMap, Computed: true},
		"rule":   {Name: "rule", Type: providers.TypeList, Required: true, Sensitive: true},
	}
	got := map[string]providers.Attribute{}
	for _, a := range hostAttributes(b) {
		got[a.Name] = a
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hostAttributes:\n got %+v\nwant %+v", got, want)
	}
}
