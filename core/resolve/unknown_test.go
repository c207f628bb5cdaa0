package resolve

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
)

const unknownSpec = `version: 1
stack: demo
variables:
  env: {type: string}
  token: {type: string, sensitive: true}
  zones: {type: list}
  size: {type: number, default: 2}
locals:
  name: "app-${var.env}"
  fixed: ${upper("x")}
providers: {mock: {config: {region: "${var.env}", label: fixed}}}
resources:
  - name: net
    type: network
    config:
      plain: ${var.env}
      text: "n-${var.env}"
      fn: ${upper(var.env)}
      secret: ${var.token}
      local: ${local.name}
      in_local: "x-${local.name}"
      known: ${var.size}
      fixed: ${local.fixed}
      sum: ${var.size + 1}
      nested: {a: "${var.env}", b: 1}
  - name: web
    type: compute
    for_each: ${var.zones}
    config: {zone: "${each.key}", net: "${net.id}", v: "${each.value}", size: "${var.size}"}
  - name: lb
    type: compute
    depends_on: [web]
    config: {first: "${web[a].id}"}
  - name: disk
    type: compute
    for_each: [a, b]
    config: {label: "${var.env}-${each.key}"}
outputs:
  env: {value: "${var.env}"}
`

// expandUnknown gives the variables their values (none of env, token and
// zones unless in gives them) and expands with ExpandUnknown.
func expandUnknown(t *testing.T, text string, in Inputs) (*spec.Spec, spec.Problems) {
	t.Helper()
	s := parse(t, text)
	in.Unknown = true
	vals, _, err := Values(s, in)
	if err != nil {
		t.Fatalf("Values:\n%v", err)
	}
	c, notes, err := ExpandUnknown(s, vals)
	if err != nil {
		t.Fatalf("ExpandUnknown:\n%v", err)
	}
	return c, notes
}

// TestValuesUnknown: with Inputs.Unknown a variable with no value is left
// out, its source Unknown; a value given is still checked; without it the
// variable is still an error.
func TestValuesUnknown(t *testing.T) {
	s := parse(t, unknownSpec)
	vals, from, err := Values(s, Inputs{Unknown: true, Vars: []string{"env=dev"}})
	if err != nil {
		t.Fatalf("Values: %v", err)
	}
	if d := cmp.Diff(map[string]any{"env": "dev", "size": 2.0}, vals); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]Source{"env": FromFlag, "size": FromDefault, "token": Unknown, "zones": Unknown}, from); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	tests := []struct {
		name string
		in   Inputs
		want string
	}{
		{"a given value is type-checked", Inputs{Unknown: true, Vars: []string{"size=big"}}, `variable "size" is a number`},
		{"an undeclared --var is refused", Inputs{Unknown: true, Vars: []string{"nope=1"}}, `declares no variable "nope"`},
		{"without Unknown a missing value is a problem", Inputs{}, `variable "token" has no value: give one`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Values(s, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Values: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestExpandUnknown: what uses a variable with no value stays a template
// (unknown, shown as known after apply), everything else is computed; a
// for_each over an unknown collection is one template resource, with a
// note at its for_each, and references to its instances depend on it.
func TestExpandUnknown(t *testing.T) {
	c, notes := expandUnknown(t, unknownSpec, Inputs{})
	byName := map[string]*spec.Resource{}
	var names []string
	for _, r := range c.Resources {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	if d := cmp.Diff([]string{"net", "web", "lb", "disk[a]", "disk[b]"}, names); d != "" {
		t.Fatalf("resources (-want +got):\n%s", d)
	}
	net := byName["net"].Config
	for _, tc := range []struct {
		key   string
		known bool
		want  any // when known
	}{
		{"plain", false, nil},
		{"text", false, nil},
		{"fn", false, nil},
		{"secret", false, nil},
		{"local", false, nil},
		{"in_local", false, nil},
		{"known", true, 2.0},
		{"fixed", true, "X"},
		{"sum", true, 3.0},
		{"nested", false, nil},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v := net[tc.key]
			if Known(v) != tc.known {
				t.Fatalf("Known(%s) = %v, want %v (value %#v)", tc.key, !tc.known, tc.known, v)
			}
			if !tc.known {
				if got := Display(v); tc.key != "nested" && got != KnownAfterApply {
					t.Errorf("Display = %v, want %s", got, KnownAfterApply)
				}
				return
			}
			if d := cmp.Diff(tc.want, v); d != "" {
				t.Errorf("value (-want +got):\n%s", d)
			}
		})
	}
	web := byName["web"]
	if web.Addr.Keyed || Known(web.Config["zone"]) || Known(web.Config["v"]) || web.Config["size"] != 2.0 {
		t.Errorf("web template = %+v %#v", web.Addr, web.Config)
	}
	if d := cmp.Diff([]string{"net"}, web.DependsOn); d != "" {
		t.Errorf("web depends on (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"web"}, byName["lb"].DependsOn); d != "" {
		t.Errorf("lb depends on (-want +got):\n%s", d)
	}
	if Known(byName["disk[b]"].Config["label"]) {
		t.Errorf("disk[b] label is known: %#v", byName["disk[b]"].Config["label"])
	}
	if got := c.Providers["mock"].Config; Known(got["region"]) || got["label"] != "fixed" {
		t.Errorf("provider config = %#v", got)
	}
	if Known(c.Outputs[0].Value) {
		t.Errorf("output is known: %#v", c.Outputs[0].Value)
	}
	if _, ok := c.Values["env"]; ok {
		t.Errorf("Values has env: %v", c.Values)
	}
	if len(notes) != 1 || notes[0].Pos.Line != 28 || !strings.Contains(notes[0].Msg, `resource "web": for_each is not known (variable "zones" has no value)`) {
		t.Errorf("notes = %v", notes)
	}

	// Given, the values are used as Expand uses them: no note, no template.
	c, notes = expandUnknown(t, unknownSpec, Inputs{Vars: []string{"env=dev", "token=t0k3n-value", "zones=[a, b]"}})
	if len(notes) != 0 || len(c.Resources) != 6 || c.Resources[0].Config["text"] != "n-dev" {
		t.Errorf("with values: notes %v, resources %d, text %#v", notes, len(c.Resources), c.Resources[0].Config["text"])
	}
}

// TestExpandUnknownProblems: what does not need a value is still checked,
// every problem at its FILE:LINE:COL; an expression over an unknown value
// is evaluated for its types; Expand itself still needs every value.
func TestExpandUnknownProblems(t *testing.T) {
	head := `version: 1
stack: demo
variables:
  env: {type: string}
  token: {type: string, sensitive: true}
  zones: {type: list}
  tags: {type: map}
providers: {mock: {}}
resources:
`
	tests := []struct {
		name, body string
		want       string
	}{
		{"a function given the wrong type", `  - name: a
    type: t
    config: {v: "${upper(var.zones)}"}
`, `stack.yaml:12:26: ${upper(var.zones)}: Invalid function argument: Invalid value for "str" parameter: string required`},
		{"a list in a string", `  - name: a
    type: t
    config: {v: "x-${var.zones}"}
`, `stack.yaml:12:20: ${var.zones} is a list and cannot be part of a string`},
		{"a map in a string", `  - name: a
    type: t
    config: {v: "x-${var.tags}"}
`, `stack.yaml:12:20: ${var.tags} is a map and cannot be part of a string`},
		{"a list expression in a string", `  - name: a
    type: t
    config: {v: "x-${tolist(var.zones)}"}
`, `stack.yaml:12:20: ${tolist(var.zones)} is a list and cannot be part of a string`},
		{"an operator on the wrong type", `  - name: a
    type: t
    config: {v: "${var.zones + 1}"}
`, `stack.yaml:12:20: ${var.zones + 1}: Invalid operand`},
		{"a for_each over a secret", `  - name: a
    type: t
    for_each: ${var.token}
`, `stack.yaml:12:15: resource "a": for_each cannot use the sensitive variable "token"`},
		{"a missing instance of a known for_each", `  - name: a
    type: t
    for_each: [x]
  - name: b
    type: t
    config: {v: "${a[y].id}-${var.env}"}
`, `stack.yaml:15:18: resource "a" has no instance "y" in ${a[y].id} (its keys: x)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, head+tc.body)
			vals, _, err := Values(s, Inputs{Unknown: true})
			if err != nil {
				t.Fatalf("Values: %v", err)
			}
			_, _, err = ExpandUnknown(s, vals)
			var ps spec.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("ExpandUnknown: %v, want problems", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ExpandUnknown:\n%v\nwant %q", err, tc.want)
			}
			if _, err := Expand(s, vals); err == nil || !strings.Contains(err.Error(), "has no value") {
				t.Errorf("Expand with values missing: %v", err)
			}
		})
	}
}

// TestCheckSchemasUnknown: a reference to a variable with no value is
// type-checked against the schema by the variable's declared type, and an
// expression over one by the type it evaluates to (unknown, but typed).
func TestCheckSchemasUnknown(t *testing.T) {
	schemas := map[string]*providers.GetSchemaResponse{"mock": {
		ProviderName: "mock",
		ResourceTypes: []providers.ResourceType{{Name: "t", Attributes: []providers.Attribute{
			{Name: "size", Type: providers.TypeNumber},
			{Name: "name", Type: providers.TypeString, Required: true},
			{Name: "tags", Type: providers.TypeMap},
		}}},
	}}
	text := `version: 1
stack: demo
variables:
  env: {type: string}
  n: {type: number}
  zones: {type: list}
providers: {mock: {}}
resources:
  - name: a
    type: t
    config: {size: "${var.env}", name: "${var.n}", tags: "${var.zones}"}
  - name: b
    type: t
    config: {size: "${var.n}", name: "${upper(var.env)}", tags: {k: "${var.env}"}}
  - name: c
    type: t
    config: {size: "${upper(var.env)}", name: "${var.n + 1}", tags: '${tolist(var.zones)}'}
`
	c, _ := expandUnknown(t, text, Inputs{})
	err := c.CheckSchemas(schemas)
	var got []string
	var ps spec.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			got = append(got, p.Error())
		}
	}
	want := []string{
		`stack.yaml:11:14: resource "a": attribute "size" must be a number, not a string (the value of ${var.env})`,
		`stack.yaml:11:34: resource "a": attribute "name" must be a string, not a number (the value of ${var.n})`,
		`stack.yaml:11:52: resource "a": attribute "tags" must be a map, not a list (the value of ${var.zones})`,
		`stack.yaml:17:14: resource "c": attribute "size" must be a number, not a string (the value of ${upper(var.env)})`,
		`stack.yaml:17:41: resource "c": attribute "name" must be a string, not a number (the value of ${var.n + 1})`,
		`stack.yaml:17:63: resource "c": attribute "tags" must be a map, not a list (the value of ${tolist(var.zones)})`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("CheckSchemas (-want +got):\n%s", d)
	}
}

// TestForEachUnknown: a for_each is one template resource when its keys
// need a variable with no value, however it is written; a map whose keys
// are known (its values not) still makes its instances.
func TestForEachUnknown(t *testing.T) {
	head := `version: 1
stack: demo
variables:
  zones: {type: list}
  env: {type: string}
locals:
  zs: '${[for z in var.zones: upper(z)]}'
providers: {mock: {}}
resources:
  - name: web
    type: t
`
	tests := []struct {
		name, forEach string
		want          []string
		note          string
	}{
		{"a variable", `${var.zones}`, []string{"web"}, `(variable "zones" has no value)`},
		{"an expression", `'${toset([for z in var.zones: z if z != "c"])}'`, []string{"web"}, `(variable "zones" has no value)`},
		{"a local", `${local.zs}`, []string{"web"}, `(it uses a variable with no value)`},
		{"a list holding one", `['${var.env}', b]`, []string{"web"}, `(variable "env" has no value)`},
		{"a map with known keys", `{a: '${var.env}', b: x}`, []string{"web[a]", "web[b]"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, notes := expandUnknown(t, head+"    for_each: "+tc.forEach+"\n    config: {k: \"${each.key}\", v: \"${each.value}\"}\n", Inputs{})
			var names []string
			for _, r := range c.Resources {
				names = append(names, r.Name)
			}
			if d := cmp.Diff(tc.want, names); d != "" {
				t.Errorf("resources (-want +got):\n%s", d)
			}
			switch {
			case tc.note == "" && len(notes) != 0:
				t.Errorf("notes = %v, want none", notes)
			case tc.note != "" && (len(notes) != 1 || notes[0].Pos.Line != 12 || !strings.Contains(notes[0].Msg, tc.note)):
				t.Errorf("notes = %v, want one at line 12 containing %q", notes, tc.note)
			}
			if tc.note == "" && c.Resources[0].Config["k"] != "a" {
				t.Errorf("web[a] key = %#v", c.Resources[0].Config["k"])
			}
		})
	}
}
