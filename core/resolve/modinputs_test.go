package resolve

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
)

const appModule = `variables:
  vpc_id: {type: string}
  bucket: {type: string}
  token: {type: string, default: none}
locals:
  label: "${var.bucket}-logs"
resources:
  - name: web
    type: compute
    config: {zone: "${var.vpc_id}", up: '${upper(var.vpc_id)}', at: "in ${var.vpc_id}"}
  - name: worker
    type: compute
    config: {name: "${local.label}", token: "${var.token}", up: '${upper(local.label)}'}
  - name: alone
    type: compute
    config: {size: 2}
outputs:
  url: {value: "https://${var.bucket}"}
  vpc: {value: "${var.vpc_id}"}
`

// TestModuleInputsFromResources: a call's inputs may use a resource of the
// caller and another call's output; each becomes a dependency of exactly
// the module resources that use it (through a local too), is known after
// apply until then, and reads through outputs, strings and expressions.
func TestModuleInputsFromResources(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"modules/network/module.yaml": netModule,
		"modules/app/module.yaml":     appModule,
		"stack.yaml": `version: 1
stack: demo
providers: {mock: {}}
modules:
  - {name: net, source: ./modules/network, inputs: {cidr: "10.0.0.0/16"}}
  - name: app
    source: ./modules/app
    inputs: {vpc_id: "${module.net.vpc_id}", bucket: "${logs.name}", token: "${logs.secret}"}
resources:
  - {name: logs, type: bucket, config: {name: x}}
  - {name: front, type: lb, config: {vpc: '${lower(module.app.vpc)}'}}
outputs:
  url: {value: "${module.app.url}"}
`,
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := expand(t, s, Inputs{})
	res := func(name string) *spec.Resource {
		r, ok := c.Resource(name)
		if !ok {
			t.Fatalf("no resource %s", name)
		}
		return r
	}
	for name, want := range map[string]string{"app.web": "net.vpc", "app.worker": "logs", "app.alone": "", "front": "net.vpc", "net.vpc": ""} {
		if got := strings.Join(res(name).DependsOn, " "); got != want {
			t.Errorf("%s depends on %q, want %q", name, got, want)
		}
	}
	for _, l := range c.Locals {
		if strings.HasPrefix(l.Name, "app.var.vpc_id") || strings.HasPrefix(l.Name, "app.local.label") {
			t.Errorf("late local %s left in the spec", l.Name)
		}
	}
	// Before apply: known after apply.
	none := func(string, string) (any, bool) { return nil, false }
	cfg, unknown, err := Config(res("app.web").Config, none)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(unknown, " ") != "at up zone" || DisplayConfig(cfg)["zone"] != KnownAfterApply {
		t.Errorf("unknown %v, display %v", unknown, DisplayConfig(cfg))
	}
	// After.
	lookup := func(addr, attr string) (any, bool) { return attr + "-" + addr, true }
	cfg, _, err = Config(res("app.web").Config, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if cfg["zone"] != "id-net.vpc" || cfg["up"] != "ID-NET.VPC" || cfg["at"] != "in id-net.vpc" {
		t.Errorf("app.web config = %v", cfg)
	}
	cfg, _, err = Config(res("app.worker").Config, lookup)
	if err != nil || cfg["name"] != "name-logs-logs" || cfg["up"] != "NAME-LOGS-LOGS" {
		t.Errorf("app.worker config = %v, %v", cfg, err)
	}
	cfg, _, err = Config(res("front").Config, lookup)
	if err != nil || cfg["vpc"] != "id-net.vpc" {
		t.Errorf("front config = %v, %v", cfg, err)
	}
	o, _ := c.Output("url")
	if v, known, err := Value(o.Value, lookup); err != nil || !known || v != "https://name-logs" {
		t.Errorf("output url = %v %v %v", v, known, err)
	}
	// A sensitive attribute stays a secret through the input: what an
	// expression of the module computes from it is one too.
	secret := func(addr, attr string) bool { return addr == "net.vpc" && attr == "id" }
	_, _, derived, err := ConfigSecrets(res("app.web").Config, lookup, secret)
	if err != nil {
		t.Fatal(err)
	}
	if len(derived) != 1 || derived[0] != "ID-NET.VPC" {
		t.Errorf("derived secrets = %v, want [ID-NET.VPC]", derived)
	}
	if refs := Refs(res("app.worker").Config); strings.Join(refs, " ") != "logs" {
		t.Errorf("app.worker refs = %v", refs)
	}
}

// TestModuleInputsFromResourcesProblems: a bad reference, a cycle between
// calls (resource-level and through outputs alone), and a value known only
// after apply where it must be known before, each at FILE:LINE:COL.
func TestModuleInputsFromResourcesProblems(t *testing.T) {
	mod := "variables: {v: {}}\nresources:\n  - {name: r, type: t, config: {v: \"${var.v}\"}}\noutputs: {o: {value: \"${r.id}\"}, p: {value: \"${var.v}\"}}\n"
	tests := []struct {
		name, module, calls, want string
	}{
		{"unknown resource", mod, "  - {name: a, source: ./m, inputs: {v: \"${y.id}\"}}\n",
			`STACK:6:41: module call "a": unknown resource "y" in ${y.id}`},
		{"a call's resource", mod, "  - {name: a, source: ./m, inputs: {v: \"x\"}}\n  - {name: b, source: ./m, inputs: {v: \"${a.r}\"}}\n",
			`STACK:7:41: module call "b": unknown resource "a" in ${a.r}: a module's resources are read through its outputs (${module.a.OUTPUT})`},
		{"unknown call", mod, "  - {name: a, source: ./m, inputs: {v: \"${module.zz.o}\"}}\n",
			`STACK:6:41: unknown module call "zz" in ${module.zz.o} (called under modules: a)`},
		{"own output", mod, "  - {name: a, source: ./m, inputs: {v: \"${module.a.o}\"}}\n",
			`STACK:6:41: module call "a": input uses the call's own output ${module.a.o}`},
		{"resource cycle", mod, "  - {name: a, source: ./m, inputs: {v: \"${module.b.o}\"}}\n  - {name: b, source: ./m, inputs: {v: \"${module.a.o}\"}}\n",
			`STACK:6:37: module call "a": input "v" makes a dependency cycle: a.r -> b.r -> a.r`},
		{"output cycle", mod, "  - {name: a, source: ./m, inputs: {v: \"${module.b.p}\"}}\n  - {name: b, source: ./m, inputs: {v: \"${module.a.p}\"}}\n",
			`STACK:6:37: module call "a": input "v" makes a cycle of module inputs and outputs: a.var.v -> b.var.v -> a.var.v`},
		{"for_each", "variables: {v: {}}\nresources:\n  - {name: r, type: t, for_each: \"${var.v}\"}\n", "  - {name: a, source: ./m, inputs: {v: \"${x.id}\"}}\n",
			`m/module.yaml:3:35: ${var.v} is known only after apply (module call "a"'s input "v" uses a resource, a data entry or another stack's output, at STACK:6:37); resource "a.r": for_each cannot use it`},
		{"count", "variables: {v: {}}\nresources:\n  - {name: r, type: t, count: \"${var.v}\"}\n", "  - {name: a, source: ./m, inputs: {v: \"${x.id}\"}}\n",
			`resource "a.r": count cannot use it`},
		{"in data", "variables: {v: {}}\ndata:\n  - {name: d, type: t, config: {v: \"${var.v}\"}}\nresources: []\n", "  - {name: a, source: ./m, inputs: {v: \"${x.id}\"}}\n",
			`data "a.d" cannot use it: data is read at plan time`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"m/module.yaml": tt.module,
				"stack.yaml":    "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: [{name: x, type: t}]\nmodules:\n" + tt.calls,
			})
			stack := filepath.Join(dir, "stack.yaml")
			_, err := spec.Load(stack)
			if err == nil {
				t.Fatal("no error")
			}
			msg := strings.ReplaceAll(err.Error(), stack, "STACK")
			msg = strings.ReplaceAll(msg, dir+"/", "")
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\ndoes not contain %q", msg, tt.want)
			}
		})
	}
}

// TestModuleInputsFromAnotherStack: an input may read another stack's
// output; it is read with the stack's others, and a sensitive one stays a
// secret through the module's expression.
func TestModuleInputsFromAnotherStack(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"m/module.yaml": "variables: {vpc: {}, pw: {}}\nresources:\n  - {name: r, type: t, config: {zone: \"${var.vpc}\", at: \"in-${var.vpc}\", pw: '${upper(var.pw)}'}}\n",
		"stack.yaml":    "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: []\nmodules:\n  - {name: a, source: ./m, inputs: {vpc: \"${stack.network.outputs.vpc_id}\", pw: \"${stack.network.outputs.password}\"}}\n",
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := expand(t, s, Inputs{})
	var got []string
	for _, r := range StackRefs(c) {
		got = append(got, r.Name+"."+r.Attr)
	}
	if strings.Join(sortedCopy(got), " ") != "network.password network.vpc_id" {
		t.Errorf("StackRefs = %v", got)
	}
	out, err := SubstituteStacks(c, StackOutputs{"network": {"vpc_id": "vpc-1", "password": "hunter2"}}, map[string][]string{"network": {"password"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := out.Resources[0].Config
	if cfg["zone"] != "vpc-1" || cfg["at"] != "in-vpc-1" || cfg["pw"] != "HUNTER2" {
		t.Errorf("config = %v", cfg)
	}
	found := false
	for _, v := range out.Secrets {
		found = found || v == "HUNTER2"
	}
	if !found {
		t.Errorf("the secret computed from the sensitive output is not among the spec's secrets: %v", out.Secrets)
	}
}

// TestModuleInputsFromResourcesNestedAndRepeated: an input known only
// after apply passes through a module into the call it makes, and into
// every instance of a call with for_each; each instance's resource
// depends on what its own input names.
func TestModuleInputsFromResourcesNestedAndRepeated(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"inner/module.yaml": "variables: {v: {}}\nresources:\n  - {name: r, type: t, config: {zone: \"${var.v}\"}}\n  - {name: free, type: t}\n",
		"outer/module.yaml": "variables: {vpc: {}}\nmodules:\n  - {name: net, source: ../inner, inputs: {v: \"${var.vpc}\"}}\nresources: []\noutputs:\n  o: {value: \"${var.vpc}\"}\n",
		"stack.yaml": `version: 1
stack: demo
providers: {mock: {}}
resources:
  - {name: logs, type: t}
  - {name: disk, type: t, for_each: [eu, us]}
modules:
  - {name: svc, source: ./outer, inputs: {vpc: "${logs.id}"}}
  - {name: app, source: ./inner, for_each: [eu, us], inputs: {v: "${disk[eu].id}-${each.key}"}}
outputs:
  o: {value: "${module.svc.o}"}
`,
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := expand(t, s, Inputs{})
	for name, want := range map[string]string{"svc.net.r": "logs", "svc.net.free": "", `app["eu"].r`: "disk[eu]", `app["us"].r`: "disk[eu]", `app["us"].free`: ""} {
		r, ok := c.Resource(name)
		if !ok {
			t.Fatalf("no resource %s", name)
		}
		if got := strings.Join(r.DependsOn, " "); got != want {
			t.Errorf("%s depends on %q, want %q", name, got, want)
		}
	}
	lookup := func(addr, attr string) (any, bool) { return attr + "-" + addr, true }
	r, _ := c.Resource(`app["us"].r`)
	if cfg, _, err := Config(r.Config, lookup); err != nil || cfg["zone"] != "id-disk[eu]-us" {
		t.Errorf(`app["us"].r config = %v, %v`, cfg, err)
	}
	o, _ := c.Output("o")
	if v, _, err := Value(o.Value, lookup); err != nil || v != "id-logs" {
		t.Errorf("output o = %v, %v", v, err)
	}
}

// TestModuleWholeCallInExpression: a whole call (${module.app}) and an
// output that is more than one reference are values inside an expression
// (length, a for expression, keys, an index), their references
// dependencies of the resource that uses them.
func TestModuleWholeCallInExpression(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"m/module.yaml": "variables: {v: {}}\nresources:\n  - {name: r, type: t, config: {v: \"${var.v}\"}}\noutputs:\n  v: {value: \"${var.v}\"}\n  url: {value: \"https://${r.id}/x\"}\n  pair: {value: [\"${r.id}\", \"${var.v}\"]}\n",
		"n/module.yaml": "modules:\n  - {name: fe, source: ../m, for_each: [a, b], inputs: {v: \"${each.key}\"}}\nresources: []\noutputs:\n  urls: {value: '${[for k, a in module.fe : a.url]}'}\n",
		"stack.yaml": `version: 1
stack: demo
providers: {mock: {}}
modules:
  - {name: one, source: ./m, inputs: {v: x}}
  - {name: fe, source: ./m, for_each: [a, b], inputs: {v: "${each.key}"}}
  - {name: cnt, source: ./m, count: 2, inputs: {v: "n${count.index}"}}
  - {name: wrap, source: ./n}
resources:
  - name: top
    type: t
    config:
      n: '${length(module.fe) + length(module.cnt)}'
      urls: '${[for k, a in module.fe : a.url]}'
      keys: '${join(",", keys(module.fe))}'
      first: '${module.cnt[0].pair[0]}'
      up: '${upper(module.one.url)}'
      inner: '${length(module.one.pair)}'
      nested: '${module.wrap.urls}'
      idx: '${module.fe["b"].url}-y'
`,
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := expand(t, s, Inputs{})
	top, _ := c.Resource("top")
	if refs := strings.Join(sortedCopy(Refs(top.Config)), " "); refs != `cnt[0].r cnt[1].r fe["a"].r fe["b"].r one.r wrap.fe["a"].r wrap.fe["b"].r` {
		t.Errorf("refs %s", refs)
	}
	if deps := strings.Join(sortedCopy(top.DependsOn), " "); deps != `cnt[0].r cnt[1].r fe["a"].r fe["b"].r one.r wrap.fe["a"].r wrap.fe["b"].r` {
		t.Errorf("depends on %s", deps)
	}
	lookup := func(addr, attr string) (any, bool) { return "id-" + addr, true }
	cfg, _, err := Config(top.Config, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := `map[first:id-cnt[0].r idx:https://id-fe["b"].r/x-y inner:2 keys:a,b n:4 nested:[https://id-wrap.fe["a"].r/x https://id-wrap.fe["b"].r/x] up:HTTPS://ID-ONE.R/X urls:[https://id-fe["a"].r/x https://id-fe["b"].r/x]]`
	if got := fmt.Sprint(cfg); got != want {
		t.Errorf("config:\n got %s\nwant %s", got, want)
	}
}
