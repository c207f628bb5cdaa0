package value

import (
	"reflect"
	"testing"
)

func TestCloneMap(t *testing.T) {
	type ptr struct{ s string }
	shared := &ptr{"template"}
	tests := []struct {
		name   string
		in     func() map[string]any  // a fresh value each call
		change func(m map[string]any) // changes the copy in place
	}{
		{name: "nil stays nil", in: func() map[string]any { return nil }},
		{name: "scalars", in: func() map[string]any { return map[string]any{"s": "a", "n": 1.5, "b": true, "nil": nil} },
			change: func(m map[string]any) { m["s"] = "changed" }},
		{name: "nested map", in: func() map[string]any { return map[string]any{"tags": map[string]any{"env": "prod"}} },
			change: func(m map[string]any) { m["tags"].(map[string]any)["env"] = "dev" }},
		{name: "list in a list", in: func() map[string]any { return map[string]any{"l": []any{"a", []any{"b"}, map[string]any{"k": "v"}}} },
			change: func(m map[string]any) {
				l := m["l"].([]any)
				l[1].([]any)[0] = "changed"
				l[2].(map[string]any)["k"] = "changed"
			}},
		{name: "list of strings", in: func() map[string]any { return map[string]any{"names": []string{"a", "b"}} },
			change: func(m map[string]any) { m["names"].([]string)[0] = "changed" }},
		{name: "other values are shared", in: func() map[string]any { return map[string]any{"ref": shared} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in()
			got := CloneMap(in)
			if !reflect.DeepEqual(got, in) {
				t.Fatalf("copy %v, want %v", got, in)
			}
			if (got == nil) != (in == nil) {
				t.Fatalf("nil-ness changed: %v", got)
			}
			if tt.change != nil {
				tt.change(got)
				if !reflect.DeepEqual(in, tt.in()) {
					t.Errorf("changing the copy changed the original: %v", in)
				}
			}
			if r, ok := got["ref"]; ok && r != shared {
				t.Error("a value of another type was copied")
			}
		})
	}
}
