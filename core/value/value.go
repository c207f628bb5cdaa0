// Package value holds what bulwark does alike to the JSON-shaped values of
// a spec's configs and a state's attributes (maps of string to any, lists
// of any, strings, numbers, bools): deep copies, one implementation for
// core/spec and core/state.
package value

// CloneMap deep-copies m: maps and lists inside are copied too, nil stays
// nil. Values of other types (strings, numbers, a spec's reference
// templates) are shared, as they are never changed in place.
func CloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = Clone(v)
	}
	return out
}

// Clone deep-copies v when it is a map, a list of any or a list of strings;
// any other value is returned as it is.
func Clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CloneMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Clone(e)
		}
		return out
	case []string:
		if x == nil {
			return x
		}
		return append([]string(nil), x...)
	}
	return v
}
