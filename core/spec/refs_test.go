package spec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const refsHead = "version: 1\nstack: s\nproviders: {mock: {}}\n"

func TestParseTemplates(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(refsHead+`variables:
  env: {type: string, default: dev, description: "where"}
  pw: {type: string, sensitive: true}
  n: {default: 3}
  l: {default: [a]}
  bare:
resources:
  - name: net
    type: network
    config:
      plain: "no refs, a $ and $$ and $${literal}"
      one: ${var.n}
      mixed: "héé-${var.env}-${net2[b].id}"
      nested: {list: ["${net2[a].arn}"]}
  - name: net2
    type: network
    for_each: [a, b]
    config: {k: "${each.key}", v: "${each.value}", x: "${other[each.key].id}"}
  - name: other
    type: network
    for_each: {a: 1, b: 2}
outputs:
  o: {value: "${net.id}", description: d, sensitive: true}
`))
	if d := cmp.Diff([]string{"env", "pw", "n", "l", "bare"}, names(s.Variables)); d != "" {
		t.Errorf("variables (-want +got):\n%s", d)
	}
	want := []Variable{
		{Name: "env", Type: VarString, Default: "dev", HasDefault: true, Description: "where"},
		{Name: "pw", Type: VarString, Sensitive: true},
		{Name: "n", Type: VarNumber, Default: 3.0, HasDefault: true},
		{Name: "l", Type: VarList, Default: []any{"a"}, HasDefault: true},
		{Name: "bare", Type: VarString},
	}
	for i, v := range s.Variables {
		got := *v
		got.Pos, got.FieldPos = Pos{}, nil
		if d := cmp.Diff(want[i], got); d != "" {
			t.Errorf("variable %s (-want +got):\n%s", v.Name, d)
		}
	}
	if s.Variables[0].Pos != (Pos{5, 3}) {
		t.Errorf("env at %v", s.Variables[0].Pos)
	}
	net := s.Resources[0]
	if got := net.Config["plain"]; got != "no refs, a $ and $$ and ${literal}" {
		t.Errorf("plain = %q", got)
	}
	one := net.Config["one"].(*Template)
	if r := one.Single(); r == nil || r.Kind != RefVar || r.Name != "n" || r.Pos != (Pos{15, 12}) {
		t.Errorf("one = %#v", one.Parts)
	}
	mixed := net.Config["mixed"].(*Template)
	if mixed.Single() != nil || len(mixed.Parts) != 4 || mixed.Parts[0].Lit != "héé-" {
		t.Errorf("mixed = %#v", mixed.Parts)
	}
	refs := mixed.Refs()
	if refs[0].Pos != (Pos{16, 19}) || refs[1].Pos != (Pos{16, 30}) || refs[1].Address() != "net2[b]" || refs[1].Attr != "id" {
		t.Errorf("mixed refs at %v %v, %s", refs[0].Pos, refs[1].Pos, refs[1])
	}
	if got := mixed.String(); got != "héé-${var.env}-${net2[b].id}" {
		t.Errorf("String() = %q", got)
	}
	nested := net.Config["nested"].(map[string]any)["list"].([]any)[0].(*Template)
	if r := nested.Single(); r.Address() != "net2[a]" || r.Attr != "arn" {
		t.Errorf("nested = %s", r)
	}
	fe := s.Resources[1].ForEach
	if fe == nil || fe.Ref != nil || !cmp.Equal(fe.Value, []any{"a", "b"}) || fe.Pos != (Pos{20, 15}) {
		t.Errorf("for_each = %#v", fe)
	}
	x := s.Resources[1].Config["x"].(*Template).Single()
	if x.Key != EachKey || !x.Keyed || x.Name != "other" {
		t.Errorf("x = %#v", x)
	}
	o := s.Outputs[0]
	if o.Name != "o" || !o.Sensitive || o.Description != "d" || o.Value.(*Template).Single().Address() != "net" {
		t.Errorf("output = %#v", o)
	}
	if s.Expanded() {
		t.Error("a spec with variables is not concrete before Expand")
	}
}

func names(vs []*Variable) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func TestParseTemplateProblems(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"bad references", `variables: {v: {default: x}}
resources:
  - name: a
    type: t
    config:
      k1: "${nope}"
      k2: "x ${var.v"
      k3: "${}"
      k4: "${each.x} ${var.1a}"
      k5: '${web["a"].id}'
      k6: "${a.b.c}"
`, []string{
			`9:12: invalid reference "${nope}": want ${var.NAME}, ${RESOURCE.ATTR}, ${RESOURCE[KEY].ATTR}, ${data.NAME.ATTR}, ${each.key} or ${each.value}; no functions or expressions ($${ is a literal ${)`,
			`10:14: unterminated reference "${var.v": a ${ needs its } (write $${ for a literal ${)`,
			`11:12: empty reference ${}: want ${var.NAME}, ${RESOURCE.ATTR}, ${RESOURCE[KEY].ATTR}, ${data.NAME.ATTR}, ${each.key} or ${each.value}; no functions or expressions ($${ is a literal ${)`,
			`12:12: invalid reference "${each.x}": each has only .key and .value`,
			`12:22: invalid reference "${var.1a}": a variable name must match ` + varNamePattern,
			`13:12: invalid instance key "\"a\"" in "${web[\"a\"].id}": a key must match ` + KeyPattern + ` (or be each.key)`,
			`14:12: invalid reference "${a.b.c}": want ${var.NAME}, ${RESOURCE.ATTR}, ${RESOURCE[KEY].ATTR}, ${data.NAME.ATTR}, ${each.key} or ${each.value}; no functions or expressions ($${ is a literal ${)`,
		}},
		{"unknown names and misuse", `variables: {v: {default: x}}
resources:
  - name: a
    type: t
    config:
      k1: ${var.w}
      k2: ${b.id}
      k3: ${a.id}
      k4: ${each.key}
      k5: ${fe.id}
      k6: ${a[x].id}
      k7: ${fe[each.key].id}
  - name: fe
    type: t
    for_each: {x: 1}
`, []string{
			`9:11: unknown variable "w" in ${var.w} (declared under variables: v)`,
			`10:11: unknown resource "b" in ${b.id}`,
			`11:11: resource "a" references itself in ${a.id} (a resource cannot use its own attributes)`,
			`12:11: ${each.key} is only allowed in the config of a resource with for_each`,
			`13:11: resource "fe" has for_each: name one instance, as ${fe[KEY].id}`,
			`14:11: resource "a" references itself in ${a[x].id} (a resource cannot use its own attributes)`,
			`15:11: ${fe[each.key].id} uses [each.key] outside a resource with for_each`,
		}},
		{"for_each", `variables: {v: {default: x}}
resources:
  - name: a
    type: t
    for_each: "zones-${var.v}"
  - name: b
    type: t
    for_each: 3
  - name: c
    type: t
    for_each: ${a[x].id}
  - name: d
    type: t
    for_each: ["${each.key}"]
`, []string{
			`8:15: resource "a": for_each must be one reference to a variable (for_each: ${var.NAME}) or a list or mapping, not a string`,
			`11:15: resource "b": for_each must be a list or a mapping (or ${var.NAME} holding one), not an integer`,
			`14:15: resource "c": for_each can use only variables and literal lists or mappings, not ${a[x].id}: its keys must be known before any provider starts`,
			`17:17: resource "d": for_each can use only variables and literal lists or mappings, not ${each.key}: its keys must be known before any provider starts`,
		}},
		{"plain reference in a flow mapping", `resources:
  - name: a
    type: t
    config: {size: ${var.v}, b: 2}
`, []string{`7: invalid YAML: did not find expected ',' or '}' (inside {...} or [...], quote a reference: "${var.NAME}")`}},
		{"reference cycle", `resources:
  - name: a
    type: t
    config: {x: "${b.id}"}
  - name: b
    type: t
    depends_on: [c]
  - name: c
    type: t
    config: {x: "${a.arn}"}
`, []string{`5:5: dependency cycle: a -> b -> c -> a`}},
		{"variables and outputs", `variables:
  1bad: {}
  dash-name: {}
  t: {type: text}
  d: {type: number, default: [1]}
  r: {default: "${var.t}"}
  f: {colour: red}
  s: {sensitive: yes}
  ok: {type: map, default: {a: 1}}
  ok: {}
outputs:
  o1: {}
  o2: {value: "${var.nope}", sensitive: 1}
  o3: {value: "${each.value}"}
  o4: 5
resources: []
`, []string{
			`5:3: invalid variable name "1bad": must match ` + varNamePattern,
			`6:3: invalid variable name "dash-name": must match ` + varNamePattern,
			`7:13: variable "t": unknown type "text" (want string, number, bool, list or map)`,
			`8:30: variable "d": the default must be a number, not a list`,
			`9:17: variable "r": a default cannot hold references (${var.t}); write $${ for a literal ${`,
			`10:7: unknown field "colour" in variable "f" (allowed: type, default, description, sensitive)`,
			`11:18: variable "s": sensitive must be a bool (true or false), not a string`,
			`13:3: duplicate variable "ok" (first at line 12)`,
			`15:7: output "o1": missing required field "value"`,
			`16:16: unknown variable "nope" in ${var.nope} (declared under variables: d, f, ok, r, s, t)`,
			`16:41: output "o2": sensitive must be a bool (true or false), not an integer`,
			`17:16: output "o3": ${each.value} is only allowed in the config of a resource with for_each`,
			`18:7: output "o4" must be a mapping with a value (value, description, sensitive), not an integer`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("stack.yaml", []byte(refsHead+tt.body))
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.Split(err.Error(), "\n")
			for i := range got {
				got[i] = strings.TrimPrefix(got[i], "stack.yaml:")
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in      string
		want    Address
		wantErr bool
	}{
		{"web", Address{Name: "web"}, false},
		{"web[a]", Address{Name: "web", Key: "a", Keyed: true}, false},
		{"web[us-east-1a]", Address{Name: "web", Key: "us-east-1a", Keyed: true}, false},
		{"web[10.0.1.0]", Address{Name: "web", Key: "10.0.1.0", Keyed: true}, false},
		{"web[]", Address{}, true},
		{"web[a", Address{}, true},
		{"web[a]x", Address{}, true},
		{"web[a/b]", Address{}, true},
		{"web[..]", Address{}, true},
		{"web[each.key]", Address{}, true},
		{"Web", Address{}, true},
		{"", Address{}, true},
		// A module call's resource: CALL.NAME, the dot before any [.
		{"net.subnet", Address{Name: "net.subnet"}, false},
		{"net.subnet[a]", Address{Name: "net.subnet", Key: "a", Keyed: true}, false},
		{"net.subnet[10.0.1.0]", Address{Name: "net.subnet", Key: "10.0.1.0", Keyed: true}, false},
		{"net.", Address{}, true},
		{".subnet", Address{}, true},
		// Nested calls: outer.inner.NAME.
		{"a.b.c", Address{Name: "a.b.c"}, false},
		{"a.b.c[k]", Address{Name: "a.b.c", Key: "k", Keyed: true}, false},
		{"a..c", Address{}, true},
		// An instance of a call with for_each (quoted key) or count.
		{`app["eu"].db`, Address{Name: `app["eu"].db`}, false},
		{`app["eu-1.a"].disk[b]`, Address{Name: `app["eu-1.a"].disk`, Key: "b", Keyed: true}, false},
		{`app[0].db`, Address{Name: `app[0].db`}, false},
		{`app[12].db[x]`, Address{Name: `app[12].db`, Key: "x", Keyed: true}, false},
		{`a["x"].b[1].c`, Address{Name: `a["x"].b[1].c`}, false},
		{"net[a].subnet", Address{}, true}, // a call's key is quoted
		{"app[01].db", Address{}, true},    // not an index
		{`app["eu].db`, Address{}, true},   // unterminated quote
		{`app["e/u"].db`, Address{}, true}, // not a key
		{`app["eu"].`, Address{}, true},    // no resource
		{`app["eu"]x.db`, Address{}, true}, // junk after the key
		{`app["eu"].db["a"]x`, Address{}, true},
	}
	for _, tt := range tests {
		got, err := ParseAddress(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseAddress(%q) = %+v, %v", tt.in, got, err)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("%q.String() = %q", tt.in, got.String())
		}
	}
}

// A resource's own key may be written quoted, as Terraform does; the
// address keeps it bare. A call's key must be quoted (or an index).
func TestParseAddressQuotedResourceKey(t *testing.T) {
	for in, want := range map[string]string{
		`web["a"]`:          "web[a]",
		`app["eu"].db["a"]`: `app["eu"].db[a]`,
	} {
		got, err := ParseAddress(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseAddress(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	_, err := ParseAddress("app[eu].db")
	if err == nil || !strings.Contains(err.Error(), `the key of module call "app" is written quoted, app["eu"]`) {
		t.Errorf("app[eu].db: %v", err)
	}
}

func TestVarFile(t *testing.T) {
	got, err := ParseVarFile("v.yaml", []byte("env: prod\nport: 8080\nzones: [a, b]\npw: \"${x}\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got["env"].Value != "prod" || got["port"].Value != 8080.0 || got["port"].Text != "8080" || got["pw"].Value != "${x}" || got["zones"].Pos != (Pos{3, 8}) {
		t.Errorf("%#v", got)
	}
	for text, want := range map[string]string{
		"- a\n":            "v.yaml:1:1: a var file must be a mapping of variable names to values, not a list",
		"a: 1\na: 2\n":     `v.yaml:2:1: duplicate variable "a" (first at line 1)`,
		"a: &x 1\nb: *x\n": "v.yaml:1:4: YAML anchors are not allowed in a spec (&x)\nv.yaml:2:4: YAML aliases are not allowed in a spec (*x)",
	} {
		if _, err := ParseVarFile("v.yaml", []byte(text)); err == nil || err.Error() != want {
			t.Errorf("%q: err = %v, want %s", text, err, want)
		}
	}
	if got, err := ParseVarFile("v.yaml", nil); err != nil || len(got) != 0 {
		t.Errorf("empty file: %v %v", got, err)
	}
}
