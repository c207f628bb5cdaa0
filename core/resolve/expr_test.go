package resolve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bulwark-iac/bulwark/core/spec"
)

const exprHead = `version: 1
stack: demo
variables:
  env: {type: string, default: prod}
  zones: {type: list, default: [b, a]}
  size: {type: number, default: 2}
  tags: {type: map, default: {team: core, cost: "42"}}
  token: {type: string, sensitive: true, default: s3cr3t-value}
providers: {mock: {}}
resources:
`

// TestExpressions evaluates expressions that need only variables and each:
// Expand leaves their values, with the type they evaluate to.
func TestExpressions(t *testing.T) {
	tests := []struct {
		name, expr string
		want       any
	}{
		{"conditional", `'${var.env == "prod" ? 3 : 1}'`, 3.0},
		{"conditional else", `'${var.env != "prod" ? 3 : 1}'`, 1.0},
		{"arithmetic", `${var.size * 2 + 1}`, 5.0},
		{"interpolated", `"n-${var.size + 1}-${upper(var.env)}"`, "n-3-PROD"},
		{"for list", `'${[for z in var.zones: upper(z)]}'`, []any{"B", "A"}},
		{"for map", `'${{for k, v in var.tags: k => "${k}=${v}"}}'`, map[string]any{"team": "team=core", "cost": "cost=42"}},
		{"for if", `'${[for z in var.zones: z if z != "a"]}'`, []any{"b"}},
		{"format", `${format("%s-%03d", var.env, var.size)}`, "prod-002"},
		{"join split", `${join("+", split(",", "a,b,c"))}`, "a+b+c"},
		{"lower upper", `${lower("AbC")}${upper("x")}`, "abcX"},
		{"replace", `${replace("a-b-c", "-", "_")}`, "a_b_c"},
		{"replace regex", `${replace("a1b22", "/[0-9]+/", "#")}`, "a#b#"},
		{"merge", `${merge(var.tags, {env = var.env})}`, map[string]any{"team": "core", "cost": "42", "env": "prod"}},
		{"concat", `${concat(var.zones, ["c"])}`, []any{"b", "a", "c"}},
		{"lookup", `${lookup(var.tags, "team", "none")}`, "core"},
		{"lookup default", `${lookup(var.tags, "owner", "none")}`, "none"},
		{"length", `${length(var.zones)}`, 2.0},
		{"keys", `${keys(var.tags)}`, []any{"cost", "team"}},
		{"values", `${values(var.tags)}`, []any{"42", "core"}},
		{"coalesce", `${coalesce("", "x")}`, "x"},
		{"jsonencode", `${jsonencode({a = var.size, b = [true]})}`, `{"a":2,"b":[true]}`},
		{"jsondecode", `'${jsondecode("{\"a\": [1, 2]}")}'`, map[string]any{"a": []any{1.0, 2.0}}},
		{"min max", `${min(3, var.size, 7) + max(1, 9)}`, 11.0},
		{"range", `${range(3)}`, []any{0.0, 1.0, 2.0}},
		{"index into a variable", `${var.tags["team"]}`, "core"},
		{"attribute of a variable", `${var.tags.cost}`, "42"},
		{"string escape", `'$${x} ${"}"}'`, "${x} }"},
		{"cidrsubnet", `${cidrsubnet("172.16.0.0/12", 4, 2)}`, "172.18.0.0/16"},
		{"cidrhost", `${cidrhost("10.12.112.0/20", 16)}`, "10.12.112.16"},
		{"cidrnetmask", `${cidrnetmask("172.16.0.0/12")}`, "255.240.0.0"},
		{"cidrsubnets", `${cidrsubnets("10.1.0.0/16", 4, 4, 8, 4)}`, []any{"10.1.0.0/20", "10.1.16.0/20", "10.1.32.0/24", "10.1.48.0/20"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := exprHead + "  - name: a\n    type: t\n    config:\n      v: " + tt.expr + "\n"
			c := expand(t, parse(t, text), Inputs{})
			if d := cmp.Diff(tt.want, c.Resources[0].Config["v"]); d != "" {
				t.Errorf("%s (-want +got):\n%s", tt.expr, d)
			}
		})
	}
}

// TestExpressionReferences: an expression over resources and data stays a
// template, with its references (so dependencies), until they are known;
// it is then evaluated with them, bare keys and [each.key] keeping their
// meaning.
func TestExpressionReferences(t *testing.T) {
	text := exprHead + `  - name: net
    type: network
  - name: web
    type: compute
    for_each: ${var.zones}
    config:
      name: "${upper(each.key)}-${var.env}"
      up: ${lower(net.id)}
      peer: '${web2[each.key].id == "" ? "none" : web2[each.key].id}'
  - name: web2
    type: compute
    for_each: [a, b]
  - name: sum
    type: t
    config:
      copy: ${concat(web2[a].list, [])}
      ids: ${join(",", [web2[a].id, web2["b"].id, net.id])}
      n: ${length(web2[a].id) + 1}
`
	c := expand(t, parse(t, text), Inputs{})
	byName := map[string]*spec.Resource{}
	for _, r := range c.Resources {
		byName[r.Name] = r
	}
	if d := cmp.Diff([]string{"web2[a]", "net"}, byName["web[a]"].DependsOn); d != "" {
		t.Errorf("web[a] depends on (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"web2[a]", "web2[b]", "net"}, byName["sum"].DependsOn); d != "" {
		t.Errorf("sum depends on (-want +got):\n%s", d)
	}
	if got := byName["web[b]"].Config["name"]; got != "B-prod" {
		t.Errorf("name = %#v", got)
	}
	attrs := map[string]any{"net": "NET-1", "web2[a]": "w-a", "web2[b]": "w-b"}
	lookup := func(addr, attr string) (any, bool) {
		v, ok := attrs[addr]
		return v, ok && attr == "id"
	}
	cfg, unknown, err := Config(byName["web[b]"].Config, lookup)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("Config: %v, unknown %v", err, unknown)
	}
	if d := cmp.Diff(map[string]any{"name": "B-prod", "up": "net-1", "peer": "w-b"}, cfg); d != "" {
		t.Errorf("web[b] config (-want +got):\n%s", d)
	}
	cfg, _, err = Config(byName["sum"].Config, lookup)
	if err != nil {
		t.Fatal(err)
	}
	delete(cfg, "copy")
	if d := cmp.Diff(map[string]any{"ids": "w-a,w-b,NET-1", "n": 4.0}, cfg); d != "" {
		t.Errorf("sum config (-want +got):\n%s", d)
	}
	// Not known yet: the values stay unknown, shown as known after apply.
	partial := func(addr, attr string) (any, bool) {
		if addr == "net" {
			return nil, false
		}
		return lookup(addr, attr)
	}
	cfg, unknown, err = Config(byName["sum"].Config, partial)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"copy", "ids"}, unknown); d != "" {
		t.Errorf("unknown (-want +got):\n%s", d)
	}
	if got := DisplayConfig(cfg)["ids"]; got != KnownAfterApply {
		t.Errorf("ids shows %v", got)
	}
	// A value the lookup returns is not shared with the result.
	list := []any{"x"}
	cfg, _, err = Config(map[string]any{"v": byName["sum"].Config["ids"], "w": mustTemplate(t, c, "copy")}, func(addr, attr string) (any, bool) {
		if addr == "web2[a]" && attr == "list" {
			return list, true
		}
		return lookup(addr, attr)
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg["w"].([]any)[0] = "changed"
	if list[0] != "x" {
		t.Errorf("the lookup's list changed: %v", list)
	}
}

// TestExpressionProblems: every problem an expression has is reported at
// once, at FILE:LINE:COL, before any provider starts (Parse or Expand).
func TestExpressionProblems(t *testing.T) {
	text := exprHead + `  - name: a
    type: t
    config:
      f: ${nosuch(var.env)}
      g: "x-${upper(var.env, 2)}"
      h: ${var.env +}
      i: ${upper(var.nope)}
      j: "${[for z in var.zones: nett[z].id]}"
`
	_, err := spec.Parse("stack.yaml", []byte(text))
	if err == nil {
		t.Fatal("parsed")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`stack.yaml:14:10: invalid reference "${nosuch(var.env)}": unknown function "nosuch" (docs/spec.md lists the functions)`,
		`stack.yaml:15:13: invalid reference "${upper(var.env, 2)}": function "upper" takes 1 argument, not 2`,
		`stack.yaml:16:21: invalid reference "${var.env +}": Missing expression: Expected the start of an expression, but found the end of the file`,
		`stack.yaml:17:18: unknown variable "nope" in ${var.nope} (declared under variables: env, size, tags, token, zones)`,
		`stack.yaml:18:34: unknown resource "nett" in ${nett[z].id}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}

	// Type errors show once the values are known: at Expand.
	text = exprHead + `  - name: a
    type: t
    config:
      f: ${upper(var.zones)}
      g: "a-${var.zones}"
      h: "a-${[for z in var.zones: z]}"
      i: ${tonumber(var.token)}
`
	s := parse(t, text)
	vals, _, err := Values(s, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Expand(s, vals)
	if err == nil {
		t.Fatal("expanded")
	}
	got = strings.Split(err.Error(), "\n")
	want = []string{
		`stack.yaml:14:18: ${upper(var.zones)}: Invalid function argument: Invalid value for "str" parameter: string required, but have tuple`,
		`stack.yaml:15:13: ${var.zones} is a list and cannot be part of a string (use it alone, as the whole value, to pass the list)`,
		`stack.yaml:16:13: ${[for z in var.zones: z]} is a list and cannot be part of a string (use it alone, as the whole value, to pass the list)`,
		`stack.yaml:17:21: ${tonumber(var.token)}: Invalid function argument (the details are withheld: the expression uses a sensitive value)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a problem shows the secret: %v", err)
	}
}

// TestExpressionSecrets: a value an expression computes from a sensitive
// variable is recorded as a secret of the concrete spec, whatever its text.
func TestExpressionSecrets(t *testing.T) {
	text := exprHead + `  - name: a
    type: t
    config:
      up: ${upper(var.token)}
      js: ${jsonencode({a = var.token})}
      plain: ${upper(var.env)}
`
	c := expand(t, parse(t, text), Inputs{})
	want := []any{"S3CR3T-VALUE", `{"a":"s3cr3t-value"}`}
	got := c.Secrets
	if d := cmp.Diff(want, sortedAny(got)); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}
}

func sortedAny(vs []any) []any {
	out := append([]any(nil), vs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].(string) < out[i].(string) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func mustTemplate(t *testing.T, c *spec.Spec, key string) any {
	t.Helper()
	for _, r := range c.Resources {
		if v, ok := r.Config[key]; ok {
			return v
		}
	}
	t.Fatalf("no config %s", key)
	return nil
}

// TestForEachExpression: for_each may be an expression over variables; a
// sensitive variable in it is refused, as in a plain for_each.
func TestForEachExpression(t *testing.T) {
	text := exprHead + `  - name: web
    type: t
    for_each: '${toset([for z in var.zones: z if z != "b"])}'
    config: {k: "${each.key}"}
  - name: db
    type: t
    for_each: '${{for k, v in var.tags: k => upper(v)}}'
    config: {v: "${each.value}"}
`
	c := expand(t, parse(t, text), Inputs{})
	var got []string
	for _, r := range c.Resources {
		got = append(got, r.Name+"="+fmtAny(r.Config["k"])+fmtAny(r.Config["v"]))
	}
	if d := cmp.Diff([]string{"web[a]=a", "db[cost]=42", "db[team]=CORE"}, got); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}

	s := parse(t, exprHead+`  - name: web
    type: t
    for_each: '${[upper(var.token)]}'
`)
	vals, _, err := Values(s, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Expand(s, vals); err == nil || !strings.Contains(err.Error(), `for_each cannot use the sensitive variable "token"`) {
		t.Errorf("Expand: %v", err)
	}
}

func fmtAny(v any) string {
	if v == nil {
		return ""
	}
	return v.(string)
}
