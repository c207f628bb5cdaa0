package resolve

import (
	"errors"
	"fmt"
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
		{"calls itself", "modules: [{name: again, source: ./}]\nresources: []\n", "{name: net, source: ./m}",
			[]string{"m/module.yaml:1:33: module call \"again\": source \"./\" makes a cycle of modules: ", "(in module call net at STACK:7:12)"}},
		{"input type", "variables: {zones: {type: list}}\nresources: []\n", "{name: net, source: ./m, inputs: {zones: a}}",
			[]string{"STACK:7:39: module call \"net\": input \"zones\" must be a list, not a string"}},
		{"input from a resource", "variables: {v: {}}\nresources: []\n", "{name: net, source: ./m, inputs: {v: \"${x.id}\"}}",
			[]string{"STACK:7:43: module call \"net\": unknown resource \"x\" in ${x.id}"}},
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

// TestModuleForEachCount: a call with for_each makes one instance per key
// (CALL["KEY"].NAME), with each.key and each.value in its inputs; one with
// count one per index (CALL[N].NAME, count.index); the caller reads one
// instance's output, alone and inside an expression; depends_on on the call
// is every instance's resources.
func TestModuleForEachCount(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"modules/network/module.yaml": netModule,
		"stack.yaml": `version: 1
stack: demo
providers: {mock: {}}
modules:
  - name: net
    source: ./modules/network
    for_each: {eu: {cidr: 10.1.0.0/16, zones: [a]}, us: {cidr: 10.2.0.0/16, zones: [a, b]}}
    inputs: {cidr: "${each.value.cidr}", zones: "${each.value.zones}"}
  - {name: edge, source: ./modules/network, count: 2, inputs: {cidr: "10.${count.index + 8}.0.0/16", zones: []}}
resources:
  - name: app
    type: app
    depends_on: [edge]
    config:
      eu: '${module.net["eu"].vpc_id}'
      label: '${upper(module.edge[1].label)}'
      sub: '${module.net["us"].first}'
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
	want := `app edge[0].db edge[0].vpc edge[1].db edge[1].vpc net["eu"].db net["eu"].subnet[a] net["eu"].vpc net["us"].db net["us"].subnet[a] net["us"].subnet[b] net["us"].vpc`
	if got := strings.Join(sortedCopy(names), " "); got != want {
		t.Fatalf("resources:\n got %s\nwant %s", got, want)
	}
	res := func(name string) *spec.Resource {
		r, ok := c.Resource(name)
		if !ok {
			t.Fatalf("no resource %s", name)
		}
		return r
	}
	if v := res(`net["us"].subnet[b]`).Config["cidr"]; v != "10.2.1.0/24" {
		t.Errorf(`net["us"].subnet[b] cidr = %v`, v)
	}
	if v := res(`edge[1].vpc`).Config["label"]; v != "net-10.9.0.0/16" {
		t.Errorf("edge[1].vpc label = %v", v)
	}
	if refs := Refs(res(`net["us"].subnet[a]`).Config); strings.Join(refs, " ") != `net["us"].vpc` {
		t.Errorf("subnet refs = %v", refs)
	}
	app := res("app")
	if refs := strings.Join(sortedCopy(Refs(app.Config)), " "); refs != `net["eu"].vpc net["us"].subnet[a]` {
		t.Errorf("app refs = %s", refs)
	}
	if v := app.Config["label"]; v != "NET-10.9.0.0/16" {
		t.Errorf("app label = %v", v)
	}
	if got := strings.Join(sortedCopy(app.DependsOn), " "); !strings.HasPrefix(got, "edge[0].db edge[0].vpc edge[1].db edge[1].vpc ") {
		t.Errorf("app depends_on = %s", got)
	}
	a, err := spec.ParseAddress(`net["us"].subnet[b]`)
	if err != nil || a != (spec.Address{Name: `net["us"].subnet`, Key: "b", Keyed: true}) {
		t.Errorf("ParseAddress = %+v, %v", a, err)
	}
}

// TestModuleForEachProblems: a call's for_each and count problems, and
// references to its instances, at the calling file's FILE:LINE:COL.
func TestModuleForEachProblems(t *testing.T) {
	tests := []struct {
		name, call, want string
	}{
		{"from an undeclared variable", `{name: net, source: ./m, for_each: "${var.x}"}`,
			`STACK:7:41: module call "net": unknown variable "x" in ${var.x} (declared under variables: none)`},
		{"count from an undeclared variable", `{name: net, source: ./m, count: "${var.n}"}`,
			`STACK:7:38: module call "net": unknown variable "n" in ${var.n} (declared under variables: none)`},
		{"negative count", `{name: net, source: ./m, count: -1}`,
			`STACK:7:37: module call "net": count -1 is negative`},
		{"both", `{name: net, source: ./m, count: 1, for_each: [a]}`,
			`STACK:7:50: module call "net": count and for_each cannot both be set`},
		{"bad key", `{name: net, source: ./m, for_each: ["a b"]}`,
			`STACK:7:41: module call "net": invalid for_each key "a b"`},
		{"duplicate key", `{name: net, source: ./m, for_each: [a, a]}`,
			`STACK:7:44: module call "net": duplicate for_each key "a"`},
		{"each without for_each", `{name: net, source: ./m, inputs: {v: "${each.key}"}}`,
			`STACK:7:43: module call "net": ${each.key} is only allowed in the inputs of a module call with for_each`},
		{"count.index without count", `{name: net, source: ./m, for_each: [a], inputs: {v: "${count.index}"}}`,
			`STACK:7:58: module call "net": ${count.index} is only allowed in the inputs of a module call with count`},
		{"no such instance", "{name: net, source: ./m, count: 1}\noutputs: {o: {value: \"${module.net[3].o}\"}}",
			`STACK:8:23: module call "net" has no instance "3" in ${module.net[3].o} (its count: 0)`},
		{"whole call", "{name: net, source: ./m, for_each: [a]}\noutputs: {o: {value: \"${module.net.o}\"}}",
			`STACK:8:23: module call "net" has for_each: name one instance, ${module.net[KEY].o}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"m/module.yaml": "variables: {v: {default: x}}\nresources: []\noutputs: {o: {value: \"${var.v}\"}}\n",
				"stack.yaml":    "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: []\nmodules:\n  # the call\n  - " + tt.call + "\n",
			})
			stack := filepath.Join(dir, "stack.yaml")
			_, err := spec.Load(stack)
			if err == nil {
				t.Fatal("no error")
			}
			msg := strings.ReplaceAll(err.Error(), stack, "STACK")
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\ndoes not contain %q", msg, tt.want)
			}
		})
	}
}

// TestModuleNestedDepth: a chain of modules deeper than the limit is
// refused at the call that goes too deep, naming every call above it.
func TestModuleNestedDepth(t *testing.T) {
	files := map[string]string{
		"stack.yaml": "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: []\nmodules: [{name: m, source: ./m0}]\n",
	}
	for i := range 20 {
		files[fmt.Sprintf("m%d/module.yaml", i)] = fmt.Sprintf("modules: [{name: m, source: ../m%d}]\nresources: [{name: r, type: t}]\n", i+1)
	}
	files["m20/module.yaml"] = "resources: []\n"
	dir := writeTree(t, files)
	_, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err == nil {
		t.Fatal("no error")
	}
	msg := strings.ReplaceAll(err.Error(), dir+"/", "")
	want := "m15/module.yaml:1:29: module call \"m\": modules nest more than 16 deep"
	if !strings.HasPrefix(msg, want) || strings.Count(msg, "(in module call m at ") != 16 {
		t.Errorf("error %q\nwant %q and 16 calls named", msg, want)
	}
}

// TestModuleNested: a module's call is instantiated inside it, addressed
// outer.inner.NAME (outer["k"].inner.NAME with for_each), its source
// relative to the calling module's folder; outputs pass through each level.
func TestModuleNested(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"modules/network/module.yaml": netModule,
		"modules/svc/module.yaml": `variables: {cidr: {}}
modules:
  - {name: net, source: ../network, inputs: {cidr: "${var.cidr}", zones: [z]}}
resources:
  - {name: app, type: app, config: {vpc: "${module.net.vpc_id}"}}
outputs:
  vpc: {value: "${module.net.vpc_id}"}
`,
		"stack.yaml": `version: 1
stack: demo
providers: {mock: {}}
modules:
  - {name: svc, source: ./modules/svc, for_each: [a], inputs: {cidr: "10.${length(each.key)}.0.0/16"}}
resources:
  - {name: top, type: app, config: {vpc: '${module.svc["a"].vpc}'}}
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
	want := `svc["a"].app svc["a"].net.db svc["a"].net.subnet[z] svc["a"].net.vpc top`
	if got := strings.Join(sortedCopy(names), " "); got != want {
		t.Fatalf("resources:\n got %s\nwant %s", got, want)
	}
	sub, _ := c.Resource(`svc["a"].net.subnet[z]`)
	if v := sub.Config["cidr"]; v != "10.1.0.0/24" {
		t.Errorf("subnet cidr = %v", v)
	}
	if !strings.HasSuffix(sub.File, filepath.Join("modules", "network", "module.yaml")) || !strings.Contains(sub.Via, "(in module call net at ") || !strings.Contains(sub.Via, "(in module call svc at ") {
		t.Errorf("subnet file %s via %s", sub.File, sub.Via)
	}
	for _, name := range []string{"top", `svc["a"].app`} {
		r, _ := c.Resource(name)
		if refs := Refs(r.Config); strings.Join(refs, " ") != `svc["a"].net.vpc` {
			t.Errorf("%s refs = %v", name, refs)
		}
	}
}

// TestModuleEntriesBounded: counts multiplied through nested calls cannot
// make an unbounded number of resources.
func TestModuleEntriesBounded(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"stack.yaml":    "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: []\nmodules: [{name: a, source: ./a, count: 1000}]\n",
		"a/module.yaml": "modules: [{name: b, source: ../b, count: 1000}]\nresources: []\n",
		"b/module.yaml": "resources: [{name: r, type: t}]\n",
	})
	_, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	want := `stack.yaml:5:41: module call "a": its 1000 instances would make more than 50000 resources and data entries`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// TestModuleEntriesBoundedWithoutCount: calls without count multiply too
// (a module calling another ten times, nested).
func TestModuleEntriesBoundedWithoutCount(t *testing.T) {
	files := map[string]string{
		"stack.yaml":     "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: []\nmodules: [{name: a, source: ./m0}]\n",
		"m6/module.yaml": "resources: [{name: r, type: t}]\n",
	}
	for i := range 6 {
		var calls []string
		for j := range 10 {
			calls = append(calls, fmt.Sprintf("{name: c%d, source: ../m%d}", j, i+1))
		}
		files[fmt.Sprintf("m%d/module.yaml", i)] = "modules: [" + strings.Join(calls, ", ") + "]\nresources: []\n"
	}
	dir := writeTree(t, files)
	_, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	want := "would make more than 50000 resources and data entries with the calls before it"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// TestModuleWholeCall: ${module.CALL} alone is an object of its outputs;
// of a call with for_each a map of them by key, with count a list; and
// ${module.CALL["KEY"]} one instance's object.
func TestModuleWholeCall(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"m/module.yaml": "variables: {v: {}}\nresources:\n  - {name: r, type: t, config: {v: \"${var.v}\"}}\noutputs:\n  v: {value: \"${var.v}\"}\n  id: {value: \"${r.id}\"}\n",
		"stack.yaml": `version: 1
stack: demo
providers: {mock: {}}
modules:
  - {name: one, source: ./m, inputs: {v: x}}
  - {name: fe, source: ./m, for_each: [a, b], inputs: {v: "${each.key}"}}
  - {name: cnt, source: ./m, count: 2, inputs: {v: "n${count.index}"}}
resources:
  - name: top
    type: t
    config:
      one: ${module.one}
      fe: ${module.fe}
      cnt: ${module.cnt}
      b: '${module.fe["b"]}'
`,
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := expand(t, s, Inputs{})
	top, _ := c.Resource("top")
	lookup := func(addr, attr string) (any, bool) { return "id-" + addr, true }
	cfg, _, err := Config(top.Config, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := `map[b:map[id:id-fe["b"].r v:b] cnt:[map[id:id-cnt[0].r v:n0] map[id:id-cnt[1].r v:n1]] fe:map[a:map[id:id-fe["a"].r v:a] b:map[id:id-fe["b"].r v:b]] one:map[id:id-one.r v:x]]`
	if got := fmt.Sprint(cfg); got != want {
		t.Errorf("config:\n got %s\nwant %s", got, want)
	}
	if refs := strings.Join(sortedCopy(Refs(top.Config)), " "); refs != `cnt[0].r cnt[1].r fe["a"].r fe["b"].r one.r` {
		t.Errorf("refs %s", refs)
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
