package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/spec"
)

const stackText = `version: 1
stack: demo
variables:
  env: {type: string, default: dev}
  zones: {type: list, default: [b, a]}
  size: {type: number, default: 2}
  subnets: {type: map, default: {a: 10.0.1.0/24, b: 10.0.2.0/24}}
providers: {mock: {config: {label: "p-${var.env}"}}}
resources:
  - name: net
    type: network
    config: {name: "acme-${var.env}", lit: "$${var.env}"}
  - name: subnet
    type: subnet
    for_each: ${var.subnets}
    config:
      cidr: ${each.value}
      zone: ${each.key}
      network: ${net.id}
  - name: web
    type: compute
    for_each: ${var.zones}
    depends_on: [net]
    config:
      size: ${var.size}
      label: "web-${each.key}-${var.size}"
      subnet: ${subnet[each.key].id}
      tags: {network: "${net.id}", first: "${subnet[a].id}"}
outputs:
  web_a: {value: "${web[a].id}"}
  env: {value: "${var.env}"}
`

func parse(t *testing.T, text string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("stack.yaml", []byte(text))
	if err != nil {
		t.Fatalf("parse:\n%v", err)
	}
	return s
}

func expand(t *testing.T, s *spec.Spec, in Inputs) *spec.Spec {
	t.Helper()
	vals, _, err := Values(s, in)
	if err != nil {
		t.Fatalf("Values:\n%v", err)
	}
	c, err := Expand(s, vals)
	if err != nil {
		t.Fatalf("Expand:\n%v", err)
	}
	return c
}

func TestExpand(t *testing.T) {
	c := expand(t, parse(t, stackText), Inputs{})
	var names []string
	for _, r := range c.Resources {
		names = append(names, r.Name)
	}
	if d := cmp.Diff([]string{"net", "subnet[a]", "subnet[b]", "web[a]", "web[b]"}, names); d != "" {
		t.Fatalf("instances (-want +got):\n%s", d)
	}
	if got := c.Providers["mock"].Config["label"]; got != "p-dev" {
		t.Errorf("provider config label = %v", got)
	}
	net, _ := c.Resource("net")
	if d := cmp.Diff(map[string]any{"name": "acme-dev", "lit": "${var.env}"}, net.Config); d != "" {
		t.Errorf("net config (-want +got):\n%s", d)
	}
	sb, _ := c.Resource("subnet[b]")
	if sb.Config["cidr"] != "10.0.2.0/24" || sb.Config["zone"] != "b" {
		t.Errorf("subnet[b] config = %v", sb.Config)
	}
	if sb.Address() != (spec.Address{Name: "subnet", Key: "b", Keyed: true}) {
		t.Errorf("subnet[b] address = %+v", sb.Address())
	}
	wb, _ := c.Resource("web[b]")
	if d := cmp.Diff([]string{"net", "subnet[b]", "subnet[a]"}, wb.DependsOn); d != "" {
		t.Errorf("web[b] depends on (-want +got):\n%s", d)
	}
	if wb.Config["size"] != 2.0 || wb.Config["label"] != "web-b-2" {
		t.Errorf("web[b] size/label = %v %v", wb.Config["size"], wb.Config["label"])
	}
	sub, ok := wb.Config["subnet"].(*spec.Template)
	if !ok || sub.Single() == nil || sub.Single().Address() != "subnet[b]" || sub.Single().Attr != "id" {
		t.Errorf("web[b] subnet = %#v", wb.Config["subnet"])
	}
	if c.Values["env"] != "dev" || len(c.Values) != 4 {
		t.Errorf("values = %v", c.Values)
	}
	if c.Outputs[1].Value != "dev" {
		t.Errorf("output env = %v", c.Outputs[1].Value)
	}
	if !c.Expanded() {
		t.Error("not Expanded")
	}

	// Resolving against recorded attributes.
	attrs := map[string]map[string]any{
		"net":       {"id": "net-1"},
		"subnet[a]": {"id": "sub-a"},
	}
	lookup := func(addr, attr string) (any, bool) {
		a, ok := attrs[addr]
		if !ok {
			return nil, false
		}
		v, ok := a[attr]
		return v, ok
	}
	got, unknown, err := Config(wb.Config, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"subnet"}, unknown); d != "" {
		t.Errorf("unknown (-want +got):\n%s", d)
	}
	want := map[string]any{
		"size": 2.0, "label": "web-b-2", "subnet": KnownAfterApply,
		"tags": map[string]any{"network": "net-1", "first": "sub-a"},
	}
	if d := cmp.Diff(want, DisplayConfig(got)); d != "" {
		t.Errorf("resolved (-want +got):\n%s", d)
	}
	attrs["subnet[b]"] = map[string]any{"id": "sub-b"}
	got2, unknown, err := Config(got, lookup)
	if err != nil || len(unknown) != 0 || got2["subnet"] != "sub-b" {
		t.Errorf("second pass: %v %v %v", got2, unknown, err)
	}
}

func TestConfigTypes(t *testing.T) {
	s := parse(t, `version: 1
stack: demo
providers: {mock: {}}
resources:
  - name: a
    type: x
  - name: b
    type: x
    config:
      n: "${a.n}"
      l: "${a.l}"
      s: "n=${a.n} b=${a.b} f=${a.f}"
      bad: "x-${a.l}"
      nul: "x-${a.z}"
`)
	c := expand(t, s, Inputs{})
	b, _ := c.Resource("b")
	attrs := map[string]any{"n": 3.0, "l": []any{"x"}, "b": true, "f": 2.5, "z": nil}
	lookup := func(addr, attr string) (any, bool) { v, ok := attrs[attr]; return v, ok }
	cfg := map[string]any{"n": b.Config["n"], "l": b.Config["l"], "s": b.Config["s"]}
	got, unknown, err := Config(cfg, lookup)
	if err != nil || len(unknown) > 0 {
		t.Fatal(err, unknown)
	}
	if d := cmp.Diff(map[string]any{"n": 3.0, "l": []any{"x"}, "s": "n=3 b=true f=2.5"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// The copy is not the recorded value.
	got["l"].([]any)[0] = "changed"
	if attrs["l"].([]any)[0] != "x" {
		t.Error("resolved value shares memory with the lookup's")
	}
	for key, want := range map[string]string{
		"bad": "stack.yaml:13:15: ${a.l} is a list and cannot be part of a string",
		"nul": "stack.yaml:14:15: ${a.z} is null and cannot be part of a string",
	} {
		_, _, err := Config(map[string]any{key: b.Config[key]}, lookup)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: err = %v, want prefix %q", key, err, want)
		}
	}
}

func TestValuesPrecedence(t *testing.T) {
	s := parse(t, `version: 1
stack: demo
variables:
  a: {type: string, default: from-default}
  b: {type: string, default: from-default}
  c: {type: string, default: from-default}
  d: {type: string, default: from-default}
  port: {type: string}
  n: {type: number}
  l: {type: list}
  m: {type: map}
  on: {type: bool}
providers: {mock: {}}
resources: []
`)
	dir := t.TempDir()
	f := filepath.Join(dir, "v.yaml")
	if err := os.WriteFile(f, []byte("a: file\nb: file\nport: 8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vals, from, err := Values(s, Inputs{
		Vars:  []string{"a=flag1", "a=flag2", "n=2.5", "l=[x, y]", "m={k: v}", "on=true"},
		Files: []string{f},
		Env:   []string{"BULWARK_VAR_a=env", "BULWARK_VAR_b=env", "BULWARK_VAR_c=env", "BULWARK_VAR_undeclared=x", "PATH=/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": "flag2", "b": "file", "c": "env", "d": "from-default", "port": "8080",
		"n": 2.5, "l": []any{"x", "y"}, "m": map[string]any{"k": "v"}, "on": true}
	if d := cmp.Diff(want, vals); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if from["a"] != FromFlag || from["b"] != FromFile || from["c"] != FromEnv || from["d"] != FromDefault {
		t.Errorf("sources = %v", from)
	}
}

func TestValuesErrors(t *testing.T) {
	s := parse(t, `version: 1
stack: demo
variables:
  password: {type: string, sensitive: true}
  n: {type: number, default: 1}
  l: {type: list, default: []}
providers: {mock: {}}
resources: []
`)
	dir := t.TempDir()
	f := filepath.Join(dir, "v.yaml")
	if err := os.WriteFile(f, []byte("n: [1]\ntypo: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Values(s, Inputs{Vars: []string{"nope=1", "n=abc", "l={a: b}", "noequals"}, Files: []string{f}, Env: []string{"BULWARK_VAR_n=xyz"}})
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`BULWARK_VAR_n: variable "n" is a number: the value is not one`,
		`--var nope: the spec stack.yaml declares no variable "nope" (declared: password, n, l)`,
		`--var n: variable "n" is a number: the value is not one`,
		`--var l: variable "l" is a list: the value must be a list, not a map (write it as [a, b])`,
		`--var noequals: want --var NAME=VALUE`,
		`stack.yaml:4:3: variable "password" has no value: give one with --var password=VALUE, in a --var-file, or as BULWARK_VAR_password (or declare a default)`,
		f + `:1:4: variable "n" is a number: the value must be a number, not a list`,
		f + `:2:7: variable "typo" is not declared in stack.yaml (declared: password, n, l)`,
	}
	got := strings.Split(err.Error(), "\n")
	if d := cmp.Diff(sortedCopy(want), sortedCopy(got)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestExpandErrors(t *testing.T) {
	tests := []struct {
		name, text string
		vars       []string
		want       []string
	}{
		{"unknown key", `version: 1
stack: demo
providers: {mock: {}}
resources:
  - name: web
    type: x
    for_each: [a, b]
  - name: db
    type: x
    config: {w: "${web[c].id}"}
`, nil, []string{`stack.yaml:10:18: resource "web" has no instance "c" in ${web[c].id} (its keys: a, b)`}},
		{"not a collection", `version: 1
stack: demo
variables: {z: {type: string, default: a}}
providers: {mock: {}}
resources:
  - name: web
    type: x
    for_each: ${var.z}
`, nil, []string{`stack.yaml:8:15: resource "web": for_each (${var.z}) must be a list or a map, not a string`}},
		{"bad elements", `version: 1
stack: demo
providers: {mock: {}}
resources:
  - name: web
    type: x
    for_each: [a, a, 3, "has space"]
`, nil, []string{
			`stack.yaml:7:15: resource "web": for_each lists "a" twice: each element is an instance key, so they must be distinct`,
			`stack.yaml:7:15: resource "web": for_each element #3 is a number: a for_each list must hold strings (its elements are the keys); use a mapping for other values`,
			`stack.yaml:7:15: resource "web": for_each key "has space" is not a valid instance key: a key must match ` + spec.KeyPattern + ` (and cannot be each.key)`,
		}},
		{"interpolate a list", `version: 1
stack: demo
variables: {z: {type: list, default: [a]}}
providers: {mock: {}}
resources:
  - name: web
    type: x
    config: {a: "x${var.z}"}
`, nil, []string{`stack.yaml:8:19: ${var.z} is a list and cannot be part of a string (use it alone, as the whole value, to pass the list)`}},
		{"sensitive for_each", `version: 1
stack: demo
variables: {z: {type: list, default: [a], sensitive: true}}
providers: {mock: {}}
resources:
  - name: web
    type: x
    for_each: ${var.z}
`, nil, []string{`stack.yaml:8:15: resource "web": for_each cannot use the sensitive variable "z": its keys are part of every instance's address, printed everywhere`}},
		{"sensitive in a literal for_each", `version: 1
stack: demo
variables: {z: {type: string, default: a, sensitive: true}}
providers: {mock: {}}
resources:
  - name: web
    type: x
    for_each: [b, "${var.z}"]
`, nil, []string{`stack.yaml:8:20: resource "web": for_each cannot use the sensitive variable "z": its keys are part of every instance's address, printed everywhere`}},
		{"each.key to a missing instance", `version: 1
stack: demo
providers: {mock: {}}
resources:
  - name: sub
    type: x
    for_each: [a]
  - name: web
    type: x
    for_each: [a, b]
    config: {s: "${sub[each.key].id}"}
`, nil, []string{`stack.yaml:11:18: resource "sub" has no instance "b" in ${sub[b].id} (its keys: a)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parse(t, tt.text)
			vals, _, err := Values(s, Inputs{Vars: tt.vars})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Expand(s, vals)
			if err == nil {
				t.Fatal("no error")
			}
			if d := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestTemplateNeverMarshals(t *testing.T) {
	c := expand(t, parse(t, stackText), Inputs{})
	wa, _ := c.Resource("web[a]")
	if _, err := wa.Config["subnet"].(*spec.Template).MarshalJSON(); err == nil || !strings.Contains(err.Error(), "stack.yaml:") {
		t.Errorf("MarshalJSON err = %v", err)
	}
}

func TestReload(t *testing.T) {
	text := []byte(`version: 1
stack: demo
variables:
  zones: {type: list}
  env: {default: dev}
providers: {mock: {}}
resources:
  - name: web
    type: compute
    for_each: ${var.zones}
    config: {zone: "${each.key}-${var.env}"}
`)
	c, err := Reload("stack.yaml@revision-2", text, "local", map[string]any{"zones": []any{"b"}, "gone": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Resources) != 1 || c.Resources[0].Name != "web[b]" || c.Resources[0].Config["zone"] != "b-dev" || c.Resources[0].Provider != "local" {
		t.Errorf("reloaded %+v", c.Resources[0])
	}
	if d := cmp.Diff(map[string]any{"zones": []any{"b"}, "env": "dev"}, c.Values); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	_, err = Reload("r", text, "", map[string]any{"zones": "a"})
	if err == nil || err.Error() != `r:4:3: variable "zones": the recorded value must be a list, not a string` {
		t.Errorf("err = %v", err)
	}
	_, err = Reload("r", text, "", nil)
	if err == nil || err.Error() != `r:4:3: variable "zones" has no recorded value and no default` {
		t.Errorf("err = %v", err)
	}
}

func TestExpandBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nstack: demo\nvariables: {keys: {type: list}}\nproviders: {mock: {}}\nresources:\n")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "  - name: r%d\n    type: x\n    for_each: ${var.keys}\n", i)
	}
	s := parse(t, b.String())
	keys := make([]any, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	_, err := Expand(s, map[string]any{"keys": keys})
	if err == nil || !strings.Contains(err.Error(), "stack.yaml: the spec expands to 200000 resources (for_each instances included); at most 100000 are allowed") {
		t.Fatalf("err = %v", err)
	}
}
