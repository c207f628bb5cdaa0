package resolve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// TestLocals: locals use variables and other locals (in any order), and
// are used by configs, for_each, provider configs and outputs, plain or in
// expressions; one that uses a secret makes what it computes a secret.
func TestLocals(t *testing.T) {
	text := `version: 1
stack: demo
variables:
  env: {default: prod}
  zones: {type: list, default: [a, b]}
  token: {sensitive: true, default: s3cr3t-value}
locals:
  name: "app-${local.suffix}"
  suffix: ${upper(var.env)}
  zone_set: '${[for z in var.zones: "${local.suffix}-${z}"]}'
  size: '${var.env == "prod" ? 3 : 1}'
  auth: ${var.token}
providers: {mock: {config: {label: "${local.name}"}}}
resources:
  - name: web
    type: t
    for_each: ${local.zone_set}
    config: {name: "${local.name}", zone: "${each.key}", size: "${local.size}", n: '${local.size * 2}', key: '${lower(local.auth)}'}
outputs:
  name: {value: "${local.name}"}
`
	c := expand(t, parse(t, text), Inputs{})
	var names []string
	for _, r := range c.Resources {
		names = append(names, r.Name)
	}
	if d := cmp.Diff([]string{"web[PROD-a]", "web[PROD-b]"}, names); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}
	want := map[string]any{"name": "app-PROD", "zone": "PROD-a", "size": 3.0, "n": 6.0, "key": "s3cr3t-value"}
	if d := cmp.Diff(want, c.Resources[0].Config); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	if got := c.Providers["mock"].Config["label"]; got != "app-PROD" {
		t.Errorf("provider label = %v", got)
	}
	if got := c.Outputs[0].Value; got != "app-PROD" {
		t.Errorf("output = %v", got)
	}
	if d := cmp.Diff([]any{"s3cr3t-value", "s3cr3t-value"}, c.Secrets); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}
}

// TestLocalProblems: an unknown local, a cycle, a local that uses a
// resource or data, each at its FILE:LINE:COL; a for_each over a local that
// uses a secret is refused.
func TestLocalProblems(t *testing.T) {
	text := `version: 1
stack: demo
variables:
  env: {default: prod}
locals:
  a: ${local.b}
  b: "x-${local.a}"
  c: ${net.id}
  d: ${upper(data.x.y)}
  e: ${local.nope}
  f: ${var.nop}
providers: {mock: {}}
resources:
  - name: net
    type: t
    config: {v: "${local.zz}"}
`
	_, err := spec.Parse("stack.yaml", []byte(text))
	if err == nil {
		t.Fatal("parsed")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`stack.yaml:6:3: local cycle: a -> b -> a`,
		`stack.yaml:8:6: local "c": a local can use only variables and other locals, not ${net.id} (locals are evaluated before any provider starts)`,
		`stack.yaml:9:14: local "d": a local can use only variables and other locals, not ${data.x.y} (locals are evaluated before any provider starts)`,
		`stack.yaml:10:6: unknown local "nope" in ${local.nope} (declared under locals: a, b, c, d, e, f)`,
		`stack.yaml:11:6: unknown variable "nop" in ${var.nop} (declared under variables: env)`,
		`stack.yaml:16:18: unknown local "zz" in ${local.zz} (declared under locals: a, b, c, d, e, f)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}

	s := parse(t, `version: 1
stack: demo
variables:
  token: {sensitive: true, default: s3cr3t}
locals:
  keys: '${[upper(var.token)]}'
providers: {mock: {}}
resources:
  - name: net
    type: t
    for_each: ${local.keys}
`)
	vals, _, err := Values(s, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Expand(s, vals); err == nil || !strings.Contains(err.Error(), `for_each cannot use the local "keys": it uses a sensitive value`) || strings.Contains(err.Error(), "S3CR3T") {
		t.Errorf("Expand: %v", err)
	}
}

// TestCount: count: N makes NAME[0] to NAME[N-1] in index order, with
// ${count.index}; [count.index] names the same index of another counted
// resource; count may be an expression; count and for_each together, and
// count.index outside a counted resource, are refused.
func TestCount(t *testing.T) {
	text := `version: 1
stack: demo
variables:
  env: {default: prod}
locals:
  n: '${var.env == "prod" ? 12 : 1}'
providers: {mock: {}}
resources:
  - name: net
    type: t
    count: ${local.n}
    config: {i: "${count.index}", name: "net-${count.index + 1}"}
  - name: sub
    type: t
    count: 2
    config: {net: "${net[count.index].id}", first: "${net[0].id}", up: '${upper(net[count.index].id)}'}
`
	c := expand(t, parse(t, text), Inputs{})
	var names []string
	for _, r := range c.Resources {
		names = append(names, r.Name)
	}
	want := []string{"net[0]", "net[1]", "net[2]", "net[3]", "net[4]", "net[5]", "net[6]", "net[7]", "net[8]", "net[9]", "net[10]", "net[11]", "sub[0]", "sub[1]"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"i": 10.0, "name": "net-11"}, c.Resources[10].Config); d != "" {
		t.Errorf("net[10] config (-want +got):\n%s", d)
	}
	sub1 := c.Resources[13]
	if d := cmp.Diff([]string{"net[0]", "net[1]"}, sub1.DependsOn); d != "" {
		t.Errorf("sub[1] depends on (-want +got):\n%s", d)
	}
	cfg, _, err := Config(sub1.Config, func(addr, attr string) (any, bool) { return "id-" + addr, true })
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"net": "id-net[1]", "first": "id-net[0]", "up": "ID-NET[1]"}, cfg); d != "" {
		t.Errorf("sub[1] config (-want +got):\n%s", d)
	}

	_, err = spec.Parse("stack.yaml", []byte(`version: 1
stack: demo
providers: {mock: {}}
resources:
  - name: a
    type: t
    count: 2
    for_each: [x]
  - name: b
    type: t
    config: {i: "${count.index}", e: "${a[count.index].id}"}
  - name: c
    type: t
    count: [1]
`))
	if err == nil {
		t.Fatal("parsed")
	}
	got := strings.Split(err.Error(), "\n")
	wantProbs := []string{
		`stack.yaml:8:15: resource "a": count and for_each cannot both be set: count makes NAME[0], NAME[1], ...; for_each one instance per key`,
		`stack.yaml:11:18: ${count.index} is only allowed in the config of a resource with count`,
		`stack.yaml:11:39: ${a[count.index].id} uses [count.index] outside a resource with count`,
		`stack.yaml:14:12: resource "c": count must be a whole number (or an expression giving one), not a list`,
	}
	if d := cmp.Diff(wantProbs, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}
