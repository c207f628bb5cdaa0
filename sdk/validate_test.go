package sdk

import (
	"reflect"
	"strings"
	"testing"
)

// bucketType is the resource type the sdk tests check configurations against.
var bucketType = ResourceType{
	Name: "bucket",
	Attributes: []Attribute{
		{Name: "name", Type: TypeString, Required: true},
		{Name: "size", Type: TypeNumber},
		{Name: "zone", Type: TypeString, ForceNew: true},
		{Name: "arn", Type: TypeString, Computed: true},
		{Name: "id_hint", Type: TypeString, Computed: true, Required: true},
		{Name: "enabled", Type: TypeBool},
		{Name: "zones", Type: TypeList},
		{Name: "tags", Type: TypeMap},
		{Name: "any", Type: TypeUnspecified},
	},
}

// problem is what a test expects of one diagnostic: its attribute path and a
// piece of its summary.
type problem struct {
	path string
	text string
}

func TestCheckConfig(t *testing.T) {
	base := func(extra Attributes) Attributes {
		cfg := Attributes{"name": "b", "id_hint": "h"}
		for k, v := range extra {
			cfg[k] = v
		}
		return cfg
	}
	tests := []struct {
		name string
		cfg  Attributes
		want []problem
	}{
		{"minimal (a computed+required attribute may be set)", base(nil), nil},
		{"every type right", base(Attributes{"size": 2.5, "zone": "z", "enabled": false, "zones": []any{"a"}, "tags": map[string]any{"t": "x"}, "any": []any{1.0}}), nil},
		{"go integer kinds are numbers", base(Attributes{"size": 3}), nil},
		{"int64 is a number", base(Attributes{"size": int64(3)}), nil},
		{"null value is not type-checked", base(Attributes{"size": nil}), nil},
		{"unknown attribute", base(Attributes{"colour": "red"}), []problem{{"colour", `unknown attribute "colour" for type bucket`}}},
		{"computed only", base(Attributes{"arn": "x"}), []problem{{"arn", "computed by the provider"}}},
		{"missing required", Attributes{"id_hint": "h"}, []problem{{"name", `missing required attribute "name"`}}},
		{"nil config misses every required", nil, []problem{{"name", "missing required"}, {"id_hint", "missing required"}}},
		{"string for number", base(Attributes{"size": "10"}), []problem{{"size", `attribute "size" must be a number, not a string`}}},
		{"number for string", base(Attributes{"zone": 1.0}), []problem{{"zone", "must be a string, not a number"}}},
		{"string for bool", base(Attributes{"enabled": "yes"}), []problem{{"enabled", "must be a bool, not a string"}}},
		{"map for list", base(Attributes{"zones": map[string]any{}}), []problem{{"zones", "must be a list, not a map"}}},
		{"list for map", base(Attributes{"tags": []any{}}), []problem{{"tags", "must be a map, not a list"}}},
		{"bool for map", base(Attributes{"tags": true}), []problem{{"tags", "must be a map, not a bool"}}},
		{"odd go type", base(Attributes{"tags": []string{"x"}}), []problem{{"tags", "not []string"}}},
		{"every problem at once, keys sorted then missing required",
			Attributes{"zz": 1.0, "size": "x", "arn": "a", "aa": true},
			[]problem{
				{"aa", "unknown attribute"},
				{"arn", "computed"},
				{"size", "must be a number"},
				{"zz", "unknown attribute"},
				{"name", "missing required"},
				{"id_hint", "missing required"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := CheckConfig(bucketType, tt.cfg)
			if len(ds) != len(tt.want) {
				t.Fatalf("CheckConfig = %v (%d), want %d problems %v", ds, len(ds), len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				d := ds[i]
				if d.Severity != SeverityError {
					t.Errorf("[%d] severity %v, want error", i, d.Severity)
				}
				if !reflect.DeepEqual(d.AttributePath, []string{w.path}) {
					t.Errorf("[%d] path %v, want [%s]", i, d.AttributePath, w.path)
				}
				if !strings.Contains(d.Summary, w.text) {
					t.Errorf("[%d] summary %q does not contain %q", i, d.Summary, w.text)
				}
			}
			if ds.HasError() != (len(tt.want) > 0) {
				t.Errorf("HasError = %v with %d problems", ds.HasError(), len(tt.want))
			}
		})
	}
}

// A required attribute given as null is accepted today. The contract says
// "every required one present" and, where it is silent, to do what a
// Terraform user expects: Terraform rejects null for a required argument.
func TestCheckConfigRequiredNull(t *testing.T) {
	ds := CheckConfig(bucketType, Attributes{"name": nil, "id_hint": "h"})
	if !ds.HasError() {
		t.Fatalf("CheckConfig accepted a null required attribute")
	}
}
