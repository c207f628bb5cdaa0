package spec

import "testing"

func TestPathAt(t *testing.T) {
	text := []byte(`version: 1
stack: demo
providers:
  mock: {}
resources:
  - name: net
    type: network
    config:
      zone: a
      tags: {env: prod}
  - type: subnet
    name: sub
    config: [1, 2]
`)
	tests := []struct {
		name     string
		pos      Pos
		msg      string
		path     string
		resource string
	}{
		{"a top-level key", Pos{2, 1}, "", "stack", ""},
		{"a top-level value", Pos{2, 8}, "", "stack", ""},
		{"the whole spec when a field is missing", Pos{1, 1}, `missing required field "resources"`, "", ""},
		{"a resource's first key", Pos{6, 5}, "", "resources[0].name", "net"},
		{"a resource missing a field", Pos{6, 5}, `resource #1 is missing required field "type"`, "resources[0]", "net"},
		{"a config key", Pos{9, 7}, "", "resources[0].config.zone", "net"},
		{"a config value", Pos{9, 13}, "", "resources[0].config.zone", "net"},
		{"a flow mapping's value", Pos{10, 19}, "", "resources[0].config.tags.env", "net"},
		{"the second resource, name not first", Pos{13, 5}, "", "resources[1].config", "sub"},
		{"a list item", Pos{13, 17}, "", "resources[1].config[1]", "sub"},
		{"no position", Pos{}, "", "", ""},
		{"nothing there", Pos{40, 1}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, res := PathAt(text, tt.pos, tt.msg)
			if path != tt.path || res != tt.resource {
				t.Errorf("PathAt(%v) = %q, %q; want %q, %q", tt.pos, path, res, tt.path, tt.resource)
			}
		})
	}
	// Text that is not YAML gives nothing, and does not fail.
	if p, r := PathAt([]byte("a: [\n"), Pos{1, 1}, ""); p != "" || r != "" {
		t.Errorf("bad YAML: %q, %q", p, r)
	}
}
