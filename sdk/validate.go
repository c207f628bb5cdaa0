package sdk

import (
	"fmt"
	"sort"
)

// CheckConfig checks a resource configuration against its type: every
// attribute known and not computed, every required one present, every value of
// its declared type. It returns one diagnostic per problem: those about the keys set, in
// sorted order, then those about missing required attributes (a null value
// counts as missing).
func CheckConfig(rt ResourceType, cfg Attributes) Diagnostics {
	return checkAttributes("type", rt.Name, rt.Attributes, cfg)
}

// CheckDataConfig checks a data source's configuration against its type as
// CheckConfig checks a resource's: every argument known and not a result
// (computed), every required one present, every value of its type.
func CheckDataConfig(dt DataSourceType, cfg Attributes) Diagnostics {
	return checkAttributes("data source", dt.Name, dt.Attributes, cfg)
}

func checkAttributes(kind, typ string, attrs []Attribute, cfg Attributes) Diagnostics {
	attribute := func(name string) (Attribute, bool) {
		for _, a := range attrs {
			if a.Name == name {
				return a, true
			}
		}
		return Attribute{}, false
	}
	var ds Diagnostics
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		a, ok := attribute(k)
		if !ok {
			ds = append(ds, AttributeErrorf([]string{k}, "unknown attribute %q for %s %s", k, kind, typ))
			continue
		}
		if a.Computed && !a.Required {
			ds = append(ds, AttributeErrorf([]string{k}, "attribute %q is computed by the provider and cannot be set", k))
			continue
		}
		if v := cfg[k]; v != nil && !hasType(v, a.Type) {
			ds = append(ds, AttributeErrorf([]string{k}, "attribute %q must be a %s, not %s", k, a.Type, describe(v)))
		}
	}
	for _, a := range attrs {
		if v, ok := cfg[a.Name]; a.Required && (!ok || v == nil) {
			ds = append(ds, AttributeErrorf([]string{a.Name}, "missing required attribute %q for %s %s", a.Name, kind, typ))
		}
	}
	return ds
}

func hasType(v any, t AttributeType) bool {
	switch t {
	case TypeString:
		_, ok := v.(string)
		return ok
	case TypeNumber:
		switch v.(type) {
		case float64, float32, int, int64, int32, uint, uint64, uint32:
			return true
		}
		return false
	case TypeBool:
		_, ok := v.(bool)
		return ok
	case TypeList:
		_, ok := v.([]any)
		return ok
	case TypeMap:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a bool"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	case float64, float32, int, int64, int32, uint, uint64, uint32:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
