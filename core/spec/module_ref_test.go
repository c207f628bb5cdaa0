package spec

import (
	"strings"
	"testing"
)

// TestModuleInstanceRefs: ${module.CALL["KEY"].OUT} and
// ${module.CALL[N].OUT}, alone and inside an expression, name the call, the
// instance and the output; a bare key or a whole call is refused.
func TestModuleInstanceRefs(t *testing.T) {
	tests := []struct {
		body       string
		name, key  string
		keyed      bool
		attr, text string
		msg        string
	}{
		{body: `module.app["eu"].db`, name: "app", key: "eu", keyed: true, attr: "db", text: `${module.app["eu"].db}`},
		{body: `module.app[0].db`, name: "app", key: "0", keyed: true, attr: "db", text: `${module.app[0].db}`},
		{body: `module.app.db`, name: "app", attr: "db", text: `${module.app.db}`},
		{body: `module.app[eu].db`, msg: `invalid reference "${module.app[eu].db}": want ${module.CALL.OUTPUT}, ${module.CALL["KEY"].OUTPUT} or ${module.CALL[N].OUTPUT}`},
		{body: `module.app`, name: "app", text: `${module.app}`},
		{body: `module.app["eu"]`, name: "app", key: "eu", keyed: true, text: `${module.app["eu"]}`},
	}
	for _, tt := range tests {
		ref, msg := parseRef(tt.body)
		if tt.msg != "" {
			if ref != nil || !strings.Contains(msg, tt.msg) {
				t.Errorf("%s: ref %v, msg %q; want %q", tt.body, ref, msg, tt.msg)
			}
			continue
		}
		if ref == nil || ref.Kind != RefModule || ref.Name != tt.name || ref.Key != tt.key || ref.Keyed != tt.keyed || ref.Attr != tt.attr || ref.String() != tt.text {
			t.Errorf("%s: %+v (%q), %s", tt.body, ref, ref, msg)
		}
	}
	// Inside an expression.
	x, prob := parseExpr(`upper(module.app["eu"].db) == module.cache[1].name`)
	if prob != nil {
		t.Fatal(prob.msg)
	}
	var got []string
	for _, r := range x.Refs {
		got = append(got, r.String())
	}
	if strings.Join(got, " ") != `${module.app["eu"].db} ${module.cache[1].name}` {
		t.Errorf("refs %v", got)
	}
	// A whole call, or one instance of it, inside an expression.
	x, prob = parseExpr(`length(module.app) + length(module.cache[1])`)
	if prob != nil {
		t.Fatal(prob.msg)
	}
	got = got[:0]
	for _, r := range x.Refs {
		got = append(got, r.String())
	}
	if strings.Join(got, " ") != `${module.app} ${module.cache[1]}` {
		t.Errorf("whole refs %v", got)
	}
}
