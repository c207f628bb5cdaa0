package resolve

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
)

const eachModule = `variables:
  name: {type: string}
  size: {default: small}
resources:
  - name: db
    type: db
    config: {name: "${var.name}", size: "${var.size}"}
outputs:
  id: {value: "${db.id}"}
  label: {value: "${var.name}"}
`

const eachStack = `version: 1
stack: demo
variables:
  regions: {type: list, default: [eu, us]}
  names: {type: list, default: [a, b, a]}
  env: {default: dev}
  sizes: {type: map, default: {web: small, api: large}}
locals:
  apps: '${{for k, v in var.sizes : "${var.env}-${k}" => v}}'
providers: {mock: {}}
modules:
  - {name: net, source: ./m, for_each: "${var.regions}", inputs: {name: "net-${each.key}"}}
  - {name: web, source: ./m, for_each: "${toset(var.names)}", inputs: {name: "web-${each.value}"}}
  - {name: cache, source: ./m, count: '${var.env == "prod" ? 3 : 1}', inputs: {name: "cache-${count.index}"}}
  - {name: app, source: ./m, for_each: "${local.apps}", inputs: {name: "${each.key}", size: "${each.value}"}}
resources:
  - name: front
    type: compute
    depends_on: [cache]
    config: {up: '${module.net["us"].id}', label: '${module.web["a"].label}'}
outputs:
  first: {value: '${module.cache[0].label}'}
`

func addresses(s *spec.Spec) string {
	var names []string
	for _, r := range s.Resources {
		names = append(names, r.Address().String())
	}
	return strings.Join(sortedCopy(names), " ")
}

// TestModuleForEachFromVars: a call's for_each and count from variables
// and locals (a list, toset, a conditional, a local built by a for
// expression) make one instance per key, with each.key, each.value and
// count.index in its inputs; other values make other instances; the
// recorded spec and values make the same again (a revision's, a saved
// plan's), with the --provider kept.
func TestModuleForEachFromVars(t *testing.T) {
	dir := writeTree(t, map[string]string{"m/module.yaml": eachModule, "stack.yaml": eachStack})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.PendingCalls()); got != 4 {
		t.Fatalf("pending calls = %d, want 4", got)
	}
	c := expand(t, s, Inputs{})
	want := `app["dev-api"].db app["dev-web"].db cache[0].db front net["eu"].db net["us"].db web["a"].db web["b"].db`
	if got := addresses(c); got != want {
		t.Fatalf("resources:\n got %s\nwant %s", got, want)
	}
	res := func(c *spec.Spec, name string) *spec.Resource {
		t.Helper()
		r, ok := c.Resource(name)
		if !ok {
			t.Fatalf("no resource %s", name)
		}
		return r
	}
	if v := res(c, `app["dev-api"].db`).Config; v["name"] != "dev-api" || v["size"] != "large" {
		t.Errorf(`app["dev-api"].db config = %v`, v)
	}
	if v := res(c, `web["b"].db`).Config["name"]; v != "web-b" {
		t.Errorf(`web["b"].db name = %v`, v)
	}
	if v := res(c, `cache[0].db`).Config["name"]; v != "cache-0" {
		t.Errorf(`cache[0].db name = %v`, v)
	}
	front := res(c, "front")
	if v := front.Config["label"]; v != "web-a" {
		t.Errorf("front label = %v", v)
	}
	if refs := strings.Join(Refs(front.Config), " "); refs != `net["us"].db` {
		t.Errorf("front refs = %s", refs)
	}
	if deps := strings.Join(front.DependsOn, " "); !strings.Contains(deps, "cache[0].db") {
		t.Errorf("front depends_on = %s", deps)
	}

	// Other values, other instances.
	c2 := expand(t, s, Inputs{Vars: []string{"env=prod", "regions=[us, ap]", "names=[c, a]"}})
	want2 := `app["prod-api"].db app["prod-web"].db cache[0].db cache[1].db cache[2].db front net["ap"].db net["us"].db web["a"].db web["c"].db`
	if got := addresses(c2); got != want2 {
		t.Fatalf("resources with prod:\n got %s\nwant %s", got, want2)
	}

	// A key the values do not make is a problem at the reference.
	vals, _, err := Values(s, Inputs{Vars: []string{"names=[b]"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Expand(s, vals)
	if msg := strings.ReplaceAll(errString(err), dir, "DIR"); !strings.Contains(msg, `DIR/stack.yaml:20:52: module call "web" has no instance "a" in ${module.web["a"].label} (its for_each: b)`) {
		t.Errorf("error = %s", msg)
	}

	// Recorded and reloaded with the recorded values, under --provider:
	// the same instances, the module files read from the record.
	p := s.WithDefaultProvider("other")
	c3, err := Expand(p, c2.Values)
	if err != nil {
		t.Fatal(err)
	}
	if r := res(c3, `net["ap"].db`); r.Provider != "other" {
		t.Errorf("provider after deciding the instances = %q, want other", r.Provider)
	}
	r, err := Reload("rev", c3.Recorded(), "other", c2.Values)
	if err != nil {
		t.Fatal(err)
	}
	if got := addresses(r); got != want2 {
		t.Fatalf("reloaded:\n got %s\nwant %s", got, want2)
	}
	if pr := res(r, `cache[2].db`).Provider; pr != "other" {
		t.Errorf("reloaded provider = %q", pr)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestModuleForEachFromVarsProblems: what a call's for_each or count from
// variables may not use (anything not known before plan, anything
// sensitive) is refused when the spec is read, and a value that makes no
// instances when the variables are given, each at its FILE:LINE:COL.
func TestModuleForEachFromVarsProblems(t *testing.T) {
	const head = `version: 1
stack: demo
variables:
  regions: {type: list, default: [eu]}
  token: {sensitive: true, default: t}
  n: {type: number, default: 2}
locals:
  secret: "x-${var.token}"
providers: {mock: {}}
data: [{name: zone, type: zone}]
resources: [{name: vpc, type: vpc}]
modules:
  - `
	tests := []struct {
		name, call string
		atExpand   bool
		want       string
	}{
		{"a resource's attribute", `{name: net, source: ./m, for_each: "${vpc.ids}"}`, false,
			`STACK:13:41: module call "net": invalid for_each: it must be known before plan, and ${vpc.ids} is not; it can use only variables and locals`},
		{"a resource inside an expression", `{name: net, source: ./m, for_each: "${toset(concat(var.regions, [vpc.id]))}"}`, false,
			`STACK:13:70: module call "net": invalid for_each: it must be known before plan, and ${vpc.id} is not`},
		{"a data source", `{name: net, source: ./m, count: "${length(data.zone.names)}"}`, false,
			`STACK:13:47: module call "net": invalid count: it must be known before plan, and ${data.zone.names} is not`},
		{"another stack's output", `{name: net, source: ./m, for_each: "${stack.network.outputs.regions}"}`, false,
			`STACK:13:41: module call "net": invalid for_each: it must be known before plan, and ${stack.network.outputs.regions} is not`},
		{"a module's output", `{name: net, source: ./m, for_each: "${module.other.o}"}`, false,
			`STACK:13:41: module call "net": invalid for_each: it must be known before plan, and ${module.other.o} is not`},
		{"each.key", `{name: net, source: ./m, for_each: "${each.key}"}`, false,
			`STACK:13:41: module call "net": invalid for_each: it must be known before plan, and ${each.key} is not`},
		{"a sensitive variable", `{name: net, source: ./m, for_each: "${toset([var.token])}"}`, false,
			`STACK:13:50: module call "net": for_each cannot use the sensitive variable "token" (${var.token}): its keys are part of every instance's address`},
		{"a sensitive local", `{name: net, source: ./m, count: "${length(local.secret)}"}`, false,
			`STACK:13:47: module call "net": count cannot use local "secret": it uses the sensitive variable "token"`},
		{"text around", `{name: net, source: ./m, for_each: "x-${var.regions}"}`, false,
			`STACK:13:40: module call "net": for_each must be one expression over variables and locals (for_each: ${var.NAME}), not a string`},
		{"not a collection", `{name: net, source: ./m, for_each: "${var.n}"}`, true,
			`STACK:13:40: module call "net": for_each ${var.n} must be a mapping or a list of strings, not a number`},
		{"count not whole", `{name: net, source: ./m, count: "${var.n / 3}"}`, true,
			`STACK:13:37: module call "net": count ${var.n / 3} must be a whole number from 0 to 10000, not 0.6666666666666666`},
		{"count negative", `{name: net, source: ./m, count: "${0 - var.n}"}`, true,
			`STACK:13:37: module call "net": count ${0 - var.n} must be a whole number from 0 to 10000, not -2`},
		{"a bad key", `{name: net, source: ./m, for_each: '${concat(var.regions, ["a b"])}'}`, true,
			`STACK:13:40: module call "net": for_each ${concat(var.regions, ["a b"])}: key "a b" is not a valid instance key`},
		{"a key twice", `{name: net, source: ./m, for_each: '${concat(var.regions, ["eu"])}'}`, true,
			`STACK:13:40: module call "net": for_each ${concat(var.regions, ["eu"])} lists "eu" twice`},
		{"count too large", `{name: net, source: ./m, count: "${var.n * 1000000000}"}`, true,
			`STACK:13:37: module call "net": count ${var.n * 1000000000} must be a whole number from 0 to 10000, not 2000000000`},
		{"too many keys", `{name: net, source: ./m, for_each: '${flatten([for p in range(101) : [for q in range(100) : "k${p}x${q}"]])}'}`, true,
			`STACK:13:40: module call "net": for_each ${flatten([for p in range(101) : [for q in range(100) : "k${p}x$... has 10100 keys, more than the 10000 instances a call may have`},
		{"a number in the list", `{name: net, source: ./m, for_each: '${concat(var.regions, [var.n])}'}`, true,
			`STACK:13:40: module call "net": for_each ${concat(var.regions, [var.n])}: element #2 is a number: a for_each list holds strings`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"m/module.yaml": "variables: {v: {default: x}}\nresources: []\noutputs: {o: {value: \"${var.v}\"}}\n",
				"stack.yaml":    head + tt.call + "\n",
			})
			stack := filepath.Join(dir, "stack.yaml")
			s, err := spec.Load(stack)
			if tt.atExpand {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				vals, _, verr := Values(s, Inputs{})
				if verr != nil {
					t.Fatal(verr)
				}
				_, err = Expand(s, vals)
			}
			msg := strings.ReplaceAll(errString(err), stack, "STACK")
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\ndoes not contain %q", msg, tt.want)
			}
		})
	}
}

// TestModuleForEachFromVarsInModule: a module's own call takes its
// instances from the module's variables when its inputs are known before
// plan through the whole chain (the stack's variables and locals,
// literals, each.key and each.value of the calls around it), per instance
// of its caller; an input known only after apply is refused at the module
// file's field, naming the calls that led there.
func TestModuleForEachFromVarsInModule(t *testing.T) {
	const leaf = "variables: {zone: {default: x}}\nresources: [{name: db, type: db, config: {zone: \"${var.zone}\"}}]\noutputs: {z: {value: \"${var.zone}\"}, id: {value: \"${db.id}\"}}\n"
	const wrap = "variables: {zones: {type: list}, n: {default: 1}}\nresources: []\nmodules:\n  - {name: in, source: ../m, for_each: \"${toset(var.zones)}\", inputs: {zone: \"${each.key}\"}}\n  - {name: c, source: ../m, count: \"${var.n}\"}\noutputs: {first: {value: '${module.in[\"a\"].z}'}}\n"
	const deep = "variables: {sets: {type: map}}\nresources: []\nmodules:\n  - {name: w, source: ../wrap, for_each: \"${var.sets}\", inputs: {zones: \"${each.value}\"}}\n"
	const head = "version: 1\nstack: demo\nvariables: {regions: {type: list, default: [a, b]}, hosts: {type: map, default: {web: [a], api: [a, c]}}, token: {sensitive: true, default: tk}}\nproviders: {mock: {}}\nresources: [{name: src, type: db}]\nmodules:\n"
	tests := []struct {
		name, call string
		want       string // the addresses, or the problem
		fails      bool
	}{
		{"from a stack variable", `  - {name: w, source: ./wrap, inputs: {zones: "${var.regions}", n: 2}}`,
			`src w.c[0].db w.c[1].db w.in["a"].db w.in["b"].db`, false},
		{"from a literal", `  - {name: w, source: ./wrap, inputs: {zones: [a, a], n: 0}}`,
			`src w.in["a"].db`, false},
		{"from an outer call's each.value", `  - {name: w, source: ./wrap, for_each: "${var.hosts}", inputs: {zones: "${each.value}"}}`,
			`src w["api"].c[0].db w["api"].in["a"].db w["api"].in["c"].db w["web"].c[0].db w["web"].in["a"].db`, false},
		{"two levels down", `  - {name: d, source: ./deep, inputs: {sets: {x: [a], y: [a, b]}}}`,
			`d.w["x"].c[0].db d.w["x"].in["a"].db d.w["y"].c[0].db d.w["y"].in["a"].db d.w["y"].in["b"].db src`, false},
		{"from a resource", `  - {name: w, source: ./wrap, inputs: {zones: ["${src.id}"]}}`,
			`wrap/module.yaml:4:40: module call "w.in": invalid for_each: it must be known before plan, and the input it uses comes from ${src.id}, which is not; a module's call can take its instances only from inputs made of the stack's variables and locals, literals and the each and count of the calls around it (in module call w at stack.yaml:7:12)`, true},
		{"from another call's output", "  - {name: o, source: ./m}\n" + `  - {name: w, source: ./wrap, inputs: {zones: ["${module.o.id}"]}}`,
			`wrap/module.yaml:4:40: module call "w.in": invalid for_each`, true},
		{"from a sensitive variable", `  - {name: w, source: ./wrap, inputs: {zones: ["${var.token}"]}}`,
			`wrap/module.yaml:4:40: module call "w.in": for_each cannot use the sensitive variable "token", through its module's inputs`, true},
		{"a key that is not one", `  - {name: w, source: ./wrap, inputs: {zones: ["no way"]}}`,
			`wrap/module.yaml:4:40: module call "w.in": for_each ${toset(var.zones)}: key "no way" is not a valid instance key`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"m/module.yaml":    leaf,
				"wrap/module.yaml": wrap,
				"deep/module.yaml": deep,
				"stack.yaml":       head + tt.call + "\n",
			})
			s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
			var got string
			if err == nil {
				var vals map[string]any
				vals, _, err = Values(s, Inputs{})
				if err == nil {
					var c *spec.Spec
					if c, err = Expand(s, vals); err == nil {
						got = addresses(c)
					}
				}
			}
			if err != nil {
				got = strings.ReplaceAll(errString(err), dir+string(filepath.Separator), "")
			}
			if tt.fails && !strings.Contains(got, tt.want) || !tt.fails && got != tt.want {
				t.Errorf("got\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

// TestModuleForEachFromVarsUnknown: validate without values checks a call
// whose for_each or count is not known once, under the call's name, with
// each and count unknown, and says its instances are decided at plan; the
// references to its instances and a move into one are not refused.
func TestModuleForEachFromVarsUnknown(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"m/module.yaml": eachModule,
		"stack.yaml": `version: 1
stack: demo
variables:
  regions: {type: list}
  env: {type: string}
providers: {mock: {}}
modules:
  - {name: net, source: ./m, for_each: "${var.regions}", inputs: {name: "net-${each.key}"}}
  - {name: cache, source: ./m, count: '${var.env == "prod" ? 3 : 1}', inputs: {name: "c-${count.index}", size: "${upper(var.env)}"}}
resources:
  - name: front
    type: compute
    config: {up: '${module.net["eu"].id}', label: '${module.cache[0].label}'}
moved:
  - {from: old, to: 'net["fr"].db'}
`,
	})
	stack := filepath.Join(dir, "stack.yaml")
	s, err := spec.Load(stack)
	if err != nil {
		t.Fatal(err)
	}
	vals, _, err := Values(s, Inputs{Unknown: true})
	if err != nil {
		t.Fatal(err)
	}
	c, notes, err := ExpandUnknown(s, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := addresses(c); got != "cache.db front net.db" {
		t.Errorf("resources = %s", got)
	}
	var msgs []string
	for _, n := range notes {
		msgs = append(msgs, strings.ReplaceAll(n.Error(), stack, "STACK"))
	}
	want := `STACK:8:40: module call "net": for_each is not known (variable "regions" has no value): its module is checked once, under net, without instances; they are decided at plan` + "\n" +
		`STACK:9:39: module call "cache": count is not known (variable "env" has no value): its module is checked once, under cache, without instances; they are decided at plan`
	if got := strings.Join(msgs, "\n"); got != want {
		t.Errorf("notes\n got %s\nwant %s", got, want)
	}
	if r, _ := c.Resource("net.db"); Known(r.Config["name"]) {
		t.Errorf("net.db name is known without the instance's key: %v", r.Config["name"])
	}

	// One value known, the other not: that call's instances are made.
	vals, _, err = Values(s, Inputs{Unknown: true, Vars: []string{"regions=[eu, fr]"}})
	if err != nil {
		t.Fatal(err)
	}
	c, notes, err = ExpandUnknown(s, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := addresses(c); got != `cache.db front net["eu"].db net["fr"].db` || len(notes) != 1 {
		t.Errorf("resources = %s, notes %v", got, notes)
	}
}

// TestModuleForEachFromConstant: a call's count written as an expression
// over nothing is still decided by Expand, and the parsed spec does not
// pass for an expanded one meanwhile.
func TestModuleForEachFromConstant(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"m/module.yaml": "resources: [{name: db, type: db}]\n",
		"stack.yaml":    "version: 1\nstack: demo\nproviders: {mock: {}}\nresources: []\nmodules:\n  - {name: net, source: ./m, count: \"${1 + 1}\"}\n",
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Expanded() {
		t.Fatal("a spec with a pending call reports itself expanded")
	}
	if got := addresses(expand(t, s, Inputs{})); got != "net[0].db net[1].db" {
		t.Errorf("resources = %s", got)
	}
}

// TestModuleForEachFromVarsInModuleUnknown: validate without values checks
// a module's call fed by a variable with no value once, under its name,
// and the note is at the module file's field, naming the chain.
func TestModuleForEachFromVarsInModuleUnknown(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"m/module.yaml":    "resources: [{name: db, type: db}]\n",
		"wrap/module.yaml": "variables: {zones: {type: list}}\nresources: []\nmodules:\n  - {name: in, source: ../m, for_each: \"${var.zones}\"}\n",
		"stack.yaml":       "version: 1\nstack: demo\nvariables: {regions: {type: list}}\nproviders: {mock: {}}\nresources: []\nmodules:\n  - {name: w, source: ./wrap, inputs: {zones: \"${var.regions}\"}}\n",
	})
	s, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vals, _, err := Values(s, Inputs{Unknown: true})
	if err != nil {
		t.Fatal(err)
	}
	c, notes, err := ExpandUnknown(s, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := addresses(c); got != "w.in.db" {
		t.Errorf("resources = %s", got)
	}
	want := `wrap/module.yaml:4:40: module call "w.in": for_each is not known (variable "regions" has no value): its module is checked once, under w.in, without instances; they are decided at plan (in module call w at stack.yaml:7:12)`
	if len(notes) != 1 || strings.ReplaceAll(notes[0].Error(), dir+string(filepath.Separator), "") != want {
		t.Errorf("notes %v\nwant %s", notes, want)
	}
}
