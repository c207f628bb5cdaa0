package resolve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// writeTree writes files (path -> text) under a new folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const netModule = `variables:
  cidr: {type: string}
  zones: {type: list, default: [a, b]}
locals:
  prefix: "net-${var.cidr}"
resources:
  - name: vpc
    type: vpc
    config: {cidr: "${var.cidr}", label: "${local.prefix}"}
  - name: subnet
    type: subnet
    for_each: ${var.zones}
    config: {vpc: "${vpc.id}", zone: "${each.key}", cidr: '${cidrsubnet(var.cidr, 8, index(var.zones, each.key))}'}
  - name: db
    type: db
    protection: durable
outputs:
  vpc_id: {value: "${vpc.id}"}
  first: {value: "${subnet[a].id}"}
  label: {value: "${local.prefix}"}
`

// TestModules: two calls of one module with different inputs give
// resources under each call's name, with the inputs, locals and
// references of each; the caller reads outputs plain, inside a string and
// inside an expression; a call raises protection.
func TestModules(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"modules/network/module.yaml": netModule,
		"stack.yaml": `version: 1
stack: demo
variables:
  base: {default: "10.1"}
providers: {mock: {}}
modules:
  - {name: net, source: ./modules/network, inputs: {cidr: "10.0.0.0/16"}}
  - name: other
    source: ./modules/network
    inputs: {cidr: "${var.base}.0.0/16", zones: [c]}
    protection: protected
resources:
  - name: app
    type: app
    depends_on: [other, net.db]
    config:
      vpc: ${module.net.vpc_id}
      where: "in ${module.other.label}"
      sub: '${upper(module.net.first)}'
outputs:
  vpc: {value: "${module.other.vpc_id}"}
`,
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := expand(t, s, Inputs{})
	var names []string
	for _, r := range c.Resources {
		names = append(names, r.Address().String())
	}
	want := "app net.db net.subnet[a] net.subnet[b] net.vpc other.db other.subnet[c] other.vpc"
	got := strings.Join(sortedCopy(names), " ")
	if got != want {
		t.Fatalf("resources: got %s, want %s", got, want)
	}
	res := func(name string) *spec.Resource {
		r, ok := c.Resource(name)
		if !ok {
			t.Fatalf("no resource %s", name)
		}
		return r
	}
	if v := res("net.vpc").Config["cidr"]; v != "10.0.0.0/16" {
		t.Errorf("net.vpc cidr = %v", v)
	}
	if v := res("other.vpc").Config["label"]; v != "net-10.1.0.0/16" {
		t.Errorf("other.vpc label = %v", v)
	}
	if v := res("net.subnet[b]").Config["cidr"]; v != "10.0.1.0/24" {
		t.Errorf("net.subnet[b] cidr = %v", v)
	}
	if refs := Refs(res("net.subnet[a]").Config); strings.Join(refs, " ") != "net.vpc" {
		t.Errorf("net.subnet[a] refs = %v, want net.vpc", refs)
	}
	app := res("app")
	if refs := strings.Join(sortedCopy(Refs(app.Config)), " "); refs != "net.subnet[a] net.vpc" {
		t.Errorf("app refs = %s", refs)
	}
	if got := strings.Join(app.DependsOn, " "); !strings.HasPrefix(got, "other.vpc other.subnet[c] other.db net.db ") {
		t.Errorf("app depends_on = %s", got)
	}
	if v := app.Config["where"]; v != "in net-10.1.0.0/16" {
		t.Errorf("app where = %v", v)
	}
	lookup := func(addr, attr string) (any, bool) { return "id-" + addr, true }
	cfg, _, err := Config(app.Config, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if cfg["vpc"] != "id-net.vpc" || cfg["sub"] != "ID-NET.SUBNET[A]" {
		t.Errorf("app config resolved = %v", cfg)
	}
	if o, _ := c.Output("vpc"); Refs(o.Value)[0] != "other.vpc" {
		t.Errorf("output vpc refs %v", Refs(o.Value))
	}
	for name, want := range map[string]protection.Level{"net.db": protection.Durable, "net.vpc": protection.Ephemeral, "other.vpc": protection.Protected, "other.db": protection.Protected} {
		if got := res(name).Protection; got != want {
			t.Errorf("%s protection = %s, want %s", name, got, want)
		}
	}
}

// TestModuleProblems: a problem inside a module is reported at the module
// file and names the call; the call's own problems at the calling file.
func TestModuleProblems(t *testing.T) {
	tests := []struct {
		name   string
		module string
		call   string
		want   []string
	}{
		{"in module", "resources:\n  - name: vpc\n    type: vpc\n    config: {cidr: \"${var.nope}\"}\n", "{name: net, source: ./m}",
			[]string{"m/module.yaml:4:21: unknown variable \"nope\"", "(in module call net at " + "STACK:7:12)"}},
		{"lower protection", "resources:\n  - name: db\n    type: db\n    protection: protected\n", "{name: net, source: ./m, protection: durable}",
			[]string{"STACK:7:42: module call \"net\": protection durable would lower resource \"net.db\" (protected at ", "m/module.yaml:4:17)"}},
		{"missing input", "variables: {cidr: {}}\nresources: []\n", "{name: net, source: ./m}",
			[]string{"STACK:7:5: module call \"net\": missing input \"cidr\""}},
		{"unknown input", "resources: []\n", "{name: net, source: ./m, inputs: {x: 1}}",
			[]string{"STACK:7:39: module call \"net\": unknown input \"x\""}},
		{"unknown output", "resources: []\noutputs: {a: {value: 1}}\n", "{name: net, source: ./m}\noutputs: {o: {value: \"${module.net.b}\"}}",
			[]string{"STACK:8:23: module call \"net\" has no output \"b\""}},
		{"absolute", "resources: []\n", "{name: net, source: /etc}",
			[]string{"STACK:7:25: module call \"net\": invalid source \"/etc\": an absolute path"}},
		{"no folder", "resources: []\n", "{name: net, source: ./nope}",
			[]string{"STACK:7:25: module call \"net\": source \"./nope\": no such folder"}},
		{"nested", "modules: []\nresources: []\n", "{name: net, source: ./m}",
			[]string{"m/module.yaml:1:1: a module cannot call other modules yet", "(in module call net at STACK:7:12)"}},
		{"input type", "variables: {zones: {type: list}}\nresources: []\n", "{name: net, source: ./m, inputs: {zones: a}}",
			[]string{"STACK:7:39: module call \"net\": input \"zones\" must be a list, not a string"}},
		{"input from a resource", "variables: {v: {}}\nresources: []\n", "{name: net, source: ./m, inputs: {v: \"${x.id}\"}}",
			[]string{"module call \"net\": an input can use only variables and locals, not ${x.id}"}},
		{"both files", "resources:\n  - {name: a, type: t, config: {x: \"${var.nope}\"}}\n", "{name: net, source: ./m}\n  - {name: net, source: ./m}",
			[]string{"STACK:8:12: duplicate module call name \"net\"", "m/module.yaml:2:37: unknown variable \"nope\""}},
		{"reserved name", "resources: []\n", "{name: data, source: ./m}",
			[]string{"STACK:7:12: invalid module call name \"data\": it is reserved"}},
		{"stack field", "stack: x\nresources: []\n", "{name: net, source: ./m}",
			[]string{"m/module.yaml:1:1: unknown field \"stack\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"m/module.yaml": tt.module,
				"stack.yaml":    "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: []\nmodules:\n  # the call\n  - " + tt.call + "\n",
			})
			stack := filepath.Join(dir, "stack.yaml")
			_, err := spec.Load(stack)
			if err == nil {
				t.Fatal("no error")
			}
			msg := strings.ReplaceAll(err.Error(), stack, "STACK")
			msg = strings.ReplaceAll(msg, dir+"/", "")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\ndoes not contain %q", msg, w)
				}
			}
		})
	}
}

// TestModuleDependsOnUnknown: depends_on naming a call's resource that the
// module does not declare is a problem at the calling file.
func TestModuleDependsOnUnknown(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"m/module.yaml": "resources: []\n",
		"stack.yaml":    "version: 1\nstack: demo\nproviders: {mock: {}}\nmodules: [{name: net, source: ./m}]\nresources:\n  - {name: a, type: t, depends_on: [net.x]}\n",
	})
	_, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	want := `stack.yaml:6:36: resource "a" depends on unknown resource "net.x" (no module call declares it)`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// TestModuleReadOnceForEveryCall: a module is parsed once however many
// calls it has, yet each call's resources are its own (a call that raises
// protection leaves the other's alone) and a problem in the module is
// reported once per call, each naming its call.
func TestModuleReadOnceForEveryCall(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"modules/m/module.yaml":   "variables:\n  n: {type: string}\nresources:\n  - name: r\n    type: t\n    config: {n: \"${var.n}\"}\n",
		"modules/bad/module.yaml": "resources:\n  - name: r\n    type: t\n    config: {n: \"${var.nope}\"}\n",
		"stack.yaml": `version: 1
stack: demo
providers: {mock: {}}
modules:
  - {name: a, source: ./modules/m, inputs: {n: one}}
  - {name: b, source: ./modules/m, inputs: {n: two}, protection: protected}
  - {name: c, source: ./modules/m, inputs: {n: three}}
resources: []
`,
		"bad.yaml": `version: 1
stack: demo
providers: {mock: {}}
modules:
  - {name: x, source: ./modules/bad}
  - {name: y, source: ./modules/bad}
resources: []
`,
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := expand(t, s, Inputs{})
	for name, want := range map[string]string{"a.r": "one/ephemeral", "b.r": "two/protected", "c.r": "three/ephemeral"} {
		r, ok := c.Resource(name)
		if !ok {
			t.Fatalf("no resource %s", name)
		}
		if got := r.Config["n"].(string) + "/" + r.Protection.String(); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	_, err = spec.Load(filepath.Join(dir, "bad.yaml"))
	var probs spec.Problems
	if !errors.As(err, &probs) || len(probs) != 2 {
		t.Fatalf("bad.yaml: %v, want two problems", err)
	}
	for i, call := range []string{"x", "y"} {
		if msg := probs[i].Error(); !strings.Contains(msg, "modules/bad/module.yaml:4:") || !strings.Contains(msg, "(in module call "+call+" at ") {
			t.Errorf("problem %d = %s, want it in the module file naming call %s", i, msg, call)
		}
	}
}
