package providers

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
	var ds Diagnostics
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		a, ok := rt.Attribute(k)
		if !ok {
			ds = append(ds, AttributeErrorf([]string{k}, "unknown attribute %q for type %s", k, rt.Name))
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
	for _, a := range rt.Attributes {
		if v, ok := cfg[a.Name]; a.Required && (!ok || v == nil) {
			ds = append(ds, AttributeErrorf([]string{a.Name}, "missing required attribute %q for type %s", a.Name, rt.Name))
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
