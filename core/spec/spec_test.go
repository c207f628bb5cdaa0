package spec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// problemLines parses data and returns its problems as "LINE:COL: message"
// lines (the file name left out), failing the test if Parse succeeds or
// returns something other than a non-empty Problems.
func problemLines(t *testing.T, data []byte) []string {
	t.Helper()
	s, err := Parse("", data)
	return linesOf(t, s, err)
}

// linesOf returns the problems of a Parse result as problemLines does.
func linesOf(t *testing.T, s *Spec, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatalf("Parse succeeded, want problems; got %+v", s)
	}
	if s != nil {
		t.Errorf("Parse returned a spec with its error")
	}
	var ps Problems
	if !errors.As(err, &ps) || len(ps) == 0 {
		t.Fatalf("Parse error is %T %v, want non-empty Problems", err, err)
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return lines
}

func mustParse(t *testing.T, file string, data []byte) *Spec {
	t.Helper()
	s, err := Parse(file, data)
	if err != nil {
		t.Fatalf("Parse(%s): %v", file, err)
	}
	return s
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseFull(t *testing.T) {
	s := mustParse(t, "full.yaml", readFile(t, "testdata/good/full.yaml"))
	want := &Spec{
		File:     "full.yaml",
		Version:  1,
		Stack:    "demo",
		StackPos: Pos{3, 8},
		Providers: map[string]*Provider{
			"mock":  {Name: "mock", Source: "mock", Pos: Pos{5, 3}},
			"cloud": {Name: "cloud", Source: "aws", Config: map[string]any{"region": "us-east-1", "retries": 3.0}, Pos: Pos{6, 3}},
		},
		DefaultProvider: "mock",
		Resources: []*Resource{
			{
				Name: "network", Type: "network", Provider: "mock",
				Protection: protection.Ephemeral,
				Config:     map[string]any{"cidr": "10.0.0.0/16", "zones": []any{"a", "b"}},
				OnFailure:  PolicyCompensate,
				Pos:        Pos{9, 5},
			},
			{
				Name: "storage", Type: "s3_bucket", Provider: "cloud", ExplicitProvider: true,
				Protection: protection.Durable,
				DependsOn:  []string{"network"},
				Config: map[string]any{
					"bucket": "my-bucket", "versioned": true, "size": 1.5,
					"tags": map[string]any{"team": "infra"}, "note": nil, "created": "2001-12-14",
				},
				OnFailure: PolicyCompensate,
				Pos:       Pos{14, 5},
			},
			{
				Name: "compute", Type: "compute", Provider: "mock",
				Protection:   protection.Protected,
				DependsOn:    []string{"network", "storage"},
				Config:       map[string]any{},
				OnFailure:    PolicyAbort,
				Intervention: true,
				Pos:          Pos{22, 5},
			},
		},
	}
	if diff := cmp.Diff(want, s, cmpopts.IgnoreFields(Resource{}, "FieldPos"), cmpopts.IgnoreFields(Provider{}, "FieldPos"), cmpopts.IgnoreFields(Spec{}, "Text")); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	wantPos := map[string]Pos{
		"name":             {14, 11},
		"type":             {15, 11},
		"provider":         {16, 15},
		"protection":       {17, 17},
		"depends_on":       {18, 17},
		"config":           {19, 13},
		"config.bucket":    {19, 14},
		"config.versioned": {19, 33},
		"config.size":      {19, 50},
		"config.tags":      {19, 61},
		"config.note":      {19, 82},
		"config.created":   {19, 94},
		"on_failure":       {20, 17},
		"intervention":     {21, 19},
	}
	if diff := cmp.Diff(wantPos, s.Resources[1].FieldPos); diff != "" {
		t.Errorf("storage FieldPos mismatch (-want +got):\n%s", diff)
	}
	if got := s.Resources[0].FieldPos["config.zones"]; got != (Pos{13, 7}) {
		t.Errorf("network config.zones at %v, want 13:7", got)
	}
}

// TestParseGood checks what Parse guarantees on every good spec.
func TestParseGood(t *testing.T) {
	files, err := filepath.Glob("testdata/good/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no good specs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := mustParse(t, f, readFile(t, f))
			checkInvariants(t, s)
		})
	}
}

// checkInvariants checks what a successfully parsed spec guarantees.
func checkInvariants(t *testing.T, s *Spec) {
	t.Helper()
	if s.Version != 1 {
		t.Errorf("Version = %d", s.Version)
	}
	seen := map[string]bool{}
	for _, r := range s.Resources {
		if seen[r.Name] {
			t.Errorf("duplicate resource %q", r.Name)
		}
		seen[r.Name] = true
		if r.Type == "" || r.Provider == "" || r.Config == nil || r.FieldPos == nil {
			t.Errorf("resource %q incomplete: %+v", r.Name, r)
		}
		if _, ok := s.Providers[r.Provider]; !ok {
			t.Errorf("resource %q uses undeclared provider %q", r.Name, r.Provider)
		}
		if r.Protection == protection.Unspecified {
			t.Errorf("resource %q has no protection", r.Name)
		}
		switch r.OnFailure {
		case PolicyCompensate, PolicyContinue, PolicyAbort:
		default:
			t.Errorf("resource %q has policy %q", r.Name, r.OnFailure)
		}
	}
	for _, r := range s.Resources {
		for _, d := range r.DependsOn {
			if !seen[d] || d == r.Name {
				t.Errorf("resource %q has bad dependency %q", r.Name, d)
			}
		}
	}
	for name, p := range s.Providers {
		if p.Name != name || p.Source == "" {
			t.Errorf("provider %q: %+v", name, p)
		}
	}
	if c := s.Graph().Cycles(); c != nil {
		t.Errorf("graph has cycles %v", c)
	}
	seenData := map[string]bool{}
	for _, d := range s.Data {
		if seenData[d.Name] || d.Type == "" || d.Config == nil {
			t.Errorf("data %q repeated or incomplete: %+v", d.Name, d)
		}
		seenData[d.Name] = true
		if _, ok := s.Providers[d.Provider]; !ok {
			t.Errorf("data %q uses undeclared provider %q", d.Name, d.Provider)
		}
	}
	for _, d := range s.Data {
		for _, dep := range d.DependsOn {
			if !seenData[dep] || dep == d.Name {
				t.Errorf("data %q has bad dependency %q", d.Name, dep)
			}
		}
	}
	checkTemplates(t, s)
}

// checkTemplates checks the references a parsed spec keeps: each is
// positioned and well-formed, names a declared variable or a resource of
// the spec other than its own (keyed exactly when that one has for_each),
// each.* only in a for_each resource, for_each only variables; and a
// template's String parses back to the same parts.
func checkTemplates(t *testing.T, s *Spec) {
	t.Helper()
	vars := map[string]bool{}
	for _, v := range s.Variables {
		vars[v.Name] = true
	}
	byName := map[string]*Resource{}
	for _, r := range s.Resources {
		byName[r.Name] = r
	}
	var walk func(v any, self *Resource, where string)
	walk = func(v any, self *Resource, where string) {
		switch v := v.(type) {
		case *Template:
			if v.Pos.Line <= 0 || len(v.Parts) == 0 {
				t.Errorf("%s: template %q unpositioned or empty", where, v)
			}
			back, items := splitTemplate(v.String())
			if len(items) != len(v.Refs()) || !cmp.Equal(back, v.Parts, cmpopts.IgnoreFields(Ref{}, "Pos")) {
				t.Errorf("%s: %q does not parse back: %#v", where, v, back)
			}
			for _, ref := range v.Refs() {
				if ref.Pos.Line <= 0 {
					t.Errorf("%s: %s unpositioned", where, ref)
				}
				switch ref.Kind {
				case RefVar:
					if !vars[ref.Name] {
						t.Errorf("%s: %s undeclared", where, ref)
					}
				case RefResource:
					tr := byName[ref.Name]
					if tr == nil || tr == self || (tr.ForEach != nil) != ref.Keyed || strings.HasPrefix(where, "data ") {
						t.Errorf("%s: bad %s", where, ref)
					}
				case RefData:
					if _, ok := s.DataEntry(ref.Name); !ok || where == "for_each" || strings.HasPrefix(where, "provider ") || where == "data "+ref.Name {
						t.Errorf("%s: bad %s", where, ref)
					}
				default:
					if self == nil || self.ForEach == nil || where == "for_each" {
						t.Errorf("%s: %s outside for_each", where, ref)
					}
				}
			}
		case map[string]any:
			for _, e := range v {
				walk(e, self, where)
			}
		case []any:
			for _, e := range v {
				walk(e, self, where)
			}
		}
	}
	for _, r := range s.Resources {
		walk(r.Config, r, "resource "+r.Name)
		if r.ForEach != nil {
			if r.ForEach.Ref != nil && r.ForEach.Ref.Kind != RefVar {
				t.Errorf("for_each of %s is %s", r.Name, r.ForEach.Ref)
			}
			walk(r.ForEach.Value, nil, "for_each")
		}
	}
	for _, o := range s.Outputs {
		walk(o.Value, nil, "output "+o.Name)
	}
	for _, p := range s.Providers {
		walk(p.Config, nil, "provider "+p.Name)
	}
	for _, d := range s.Data {
		walk(d.Config, nil, "data "+d.Name)
	}
}

func TestParseBad(t *testing.T) {
	unknownWeb := `unknown field "colour" in resource "web" (allowed: name, type, provider, protection, depends_on, for_each, count, config, on_failure, intervention, import)`
	tests := map[string][]string{
		"unknown_field_resource.yaml": {"8:5: " + unknownWeb},
		"unknown_field_top.yaml": {
			`4:1: unknown field "stacks" at top level (allowed: version, stack, variables, locals, providers, default_provider, resources, data, outputs, moved, removed, modules)`,
		},
		"unknown_field_provider.yaml": {
			`5:24: unknown field "versions" in provider "mock" (allowed: source, version, config)`,
		},
		"provider_version_not_terraform.yaml": {
			`5:33: provider "mock": version is for a Terraform provider (source: NAMESPACE/TYPE); bulwark's own plugins are pinned by bulwark.lock`,
		},
		"three_problems.yaml": {
			`8:17: unknown protection level "forever" (want ephemeral, durable or protected)`,
			`11:18: resource "web" depends on unknown resource "storagee"`,
			"12:5: " + unknownWeb,
		},
		"references.yaml": {
			`11:14: unknown variable "envv" in ${var.envv} (declared under variables: env)`,
			`12:18: unknown resource "nett" in ${nett.id}`,
			`12:35: ${each.key} is only allowed in the config of a resource with for_each`,
			`12:53: resource "web" has for_each: name one instance, as ${web[KEY].id}`,
			`16:21: resource "net" has no for_each, so it has no instance [a]: write ${net.id}`,
			`16:43: resource "web" references itself in ${web[a].size} (a resource cannot use its own attributes)`,
			`18:17: unknown variable "nope" in ${var.nope} (declared under variables: env)`,
		},
		"reference_syntax.yaml": {
			`9:11: invalid reference "${upperr(net.id)}": unknown function "upperr" (did you mean upper?)`,
			`10:11: unterminated reference "${net.id": a ${ needs its } (write $${ for a literal ${)`,
			`11:11: empty reference ${}: want ${var.NAME}, ${RESOURCE.ATTR}, ${RESOURCE[KEY].ATTR}, ${data.NAME.ATTR}, ${each.key} or ${each.value}; no functions or expressions ($${ is a literal ${)`,
			`12:11: invalid reference "${each.index}": each has only .key and .value`,
		},
		"reference_cycle.yaml": {`6:5: dependency cycle: a -> b -> a`},
		"variables_bad.yaml": {
			`5:33: variable "size": the default must be a number, not a string`,
			`6:16: variable "kind": unknown type "enum" (want string, number, bool, list or map)`,
			`7:3: invalid variable name "dash-name": must match [A-Za-z][A-Za-z0-9_]{0,62}`,
			`8:20: variable "from": a default cannot hold references (${var.size}); write $${ for a literal ${`,
			`12:12: output "nothing": missing required field "value"`,
		},
		"import_bad.yaml": {
			`9:13: resource "a": import must be a string, not a bool`,
			`12:13: resource "b": import must be the id of the resource to take over, not empty`,
			`15:13: resource "c": import must be a string, not a list`,
		},
		"version_missing.yaml":     {`2:1: missing required field "version" (this bulwark reads version 1)`},
		"version_unsupported.yaml": {`2:10: unsupported spec version 2 (this bulwark reads version 1)`},
		"version_string.yaml":      {`2:10: version must be an integer, not a string`},
		"stack_bad.yaml":           {`3:8: invalid stack name "My_Stack": must match [a-z][a-z0-9-]{0,62}`},
		"missing_required.yaml": {
			`2:1: missing required field "stack"`,
			`2:1: missing required field "resources"`,
		},
		"resource_missing_fields.yaml": {
			`6:5: resource #1 is missing required field "name"`,
			`7:5: resource "web" is missing required field "type"`,
			`9:11: resource "db": type must not be empty`,
		},
		"bad_names.yaml": {
			`5:3: invalid provider name "Mock": must match [a-z][a-z0-9_-]{0,62}`,
			`7:11: invalid resource name "Web": must match [a-z][a-z0-9_-]{0,62}`,
			`9:11: invalid resource name "9lives": must match [a-z][a-z0-9_-]{0,62}`,
		},
		"duplicate_resource.yaml": {`10:11: duplicate resource name "web" (first at line 6)`},
		"duplicate_keys.yaml": {
			`4:1: duplicate field "version" at top level (first at line 2)`,
			`7:3: duplicate provider "mock" (first at line 6)`,
			`11:5: duplicate field "type" in resource "web" (first at line 10)`,
			`14:7: duplicate key "size" in config (first at line 13)`,
		},
		"unknown_dependency.yaml": {`8:18: resource "web" depends on unknown resource "network"`},
		"self_and_duplicate_dependency.yaml": {
			`10:18: resource "web" depends on itself`,
			`10:28: resource "web": duplicate dependency "net" in depends_on`,
		},
		"cycle.yaml": {`12:5: dependency cycle: a -> b -> c -> a`},
		"two_cycles.yaml": {
			`7:5: dependency cycle: x -> y -> x`,
			`8:5: dependency cycle: p -> q -> p`,
		},
		"protection_unknown.yaml": {
			`8:17: unknown protection level "forever" (want ephemeral, durable or protected)`,
			`9:17: unknown on_failure policy "retry" (want compensate, continue or abort)`,
		},
		"undeclared_provider.yaml": {`8:15: resource "web": provider "cloud" is not declared (declared: mock)`},
		"no_providers.yaml":        {`2:1: no providers declared (add a providers: mapping)`},
		"several_providers_no_default.yaml": {
			`11:5: resource "db" names no provider, and there is no default_provider to choose among the declared ones (local, mock)`,
		},
		"default_provider_undeclared.yaml": {
			`7:19: default_provider "aws" is not a declared provider (declared: local, mock)`,
		},
		"wrong_kinds.yaml": {
			`3:8: stack must be a string, not a list`,
			`5:18: provider "mock": source must be a string, not an integer`,
			`5:29: provider "mock": config must be a mapping, not a list`,
			`6:19: default_provider must be a string, not a mapping`,
			`9:11: resource "web": type must be a string, not a mapping`,
			`10:15: resource "web": provider must be a string, not an integer`,
			`11:17: resource "web": protection must be a string, not a bool`,
			`12:17: resource "web": depends_on must be a list of resource names, not a string (write depends_on: [net])`,
			`13:13: resource "web": config must be a mapping, not a list`,
			`14:17: resource "web": on_failure must be a string, not an integer`,
			`15:19: resource "web": intervention must be a bool (true or false), not a string`,
			`18:18: resource "db": depends_on entries must be resource names (strings), not a mapping`,
			`18:31: resource "db": depends_on entries must be resource names (strings), not an integer`,
		},
		"not_mapping.yaml": {
			`2:1: spec must be a mapping with fields version, stack, variables, locals, providers, default_provider, resources, data, outputs, moved, removed, modules, not a list`,
		},
		"syntax_error.yaml": {`5: invalid YAML: found character that cannot start any token`},
		"empty.yaml":        {`spec is empty`},
		"alias_in_config.yaml": {
			`8:13: YAML anchors are not allowed in a spec (&shared)`,
			`11:13: YAML aliases are not allowed in a spec (*shared)`,
		},
		"config_bad_values.yaml": {
			`9:7: config keys must be strings, not an integer`,
			`11:14: numbers in config must be finite, not .nan`,
			`12:12: numbers in config must be finite, not -.inf`,
			`13:27: config keys must be strings, not a bool`,
			`14:13: unsupported YAML tag !!binary in config (only strings, numbers, bools, null, lists and mappings)`,
			`15:15: unsupported YAML tag !thing in config (only strings, numbers, bools, null, lists and mappings)`,
			`16:7: YAML merge keys (<<) are not allowed in a spec`,
		},
		"resources_shapes.yaml": {
			`5:9: provider "mock" must be a mapping (with source, version, config) or empty, not a string`,
			`7:5: resource #1 must be a mapping, not a string`,
		},
		"resources_not_list.yaml": {
			`4:12: providers must be a mapping of local names to providers, not a list`,
			`5:12: resources must be a list, not a mapping`,
		},
		"multi_document.yaml": {`6:1: spec has more than one YAML document (only one is allowed)`},
		"provider_source.yaml": {
			`5:18: provider "evil": invalid source "../../bin/sh": a Terraform provider's source address is [HOSTNAME/]NAMESPACE/TYPE`,
		},
		"deep_config.yaml": {`8:77: value is nested more than 64 levels deep`},
		"data_sources.yaml": {
			`9:21: unknown data entry "nope" in ${data.nope.zone} (declared under data: a)`,
			`11:45: data "a": config cannot reference resource "net" (${net.id}): data is read at plan time, before anything is applied`,
			`12:12: duplicate data name "a" (first at line 11)`,
			`12:39: data "a": provider "aws" is not declared (declared: mock)`,
		},
		// alias_bomb.yaml has a test of its own.
		"alias_bomb.yaml": nil,
	}
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	onDisk := map[string]bool{}
	for _, f := range files {
		onDisk[filepath.Base(f)] = true
		if _, ok := tests[filepath.Base(f)]; !ok {
			t.Errorf("%s has no expected problems in TestParseBad", f)
		}
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			if !onDisk[name] {
				t.Fatalf("testdata/bad/%s does not exist", name)
			}
			data := readFile(t, filepath.Join("testdata/bad", name))
			if !strings.HasPrefix(string(data), "# ") {
				t.Errorf("line 1 is not a comment saying what the file tests")
			}
			got := problemLines(t, data)
			if want == nil {
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProblemError(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{"stack.yaml", Pos{12, 5}, `unknown field "colour" in resource`}, `stack.yaml:12:5: unknown field "colour" in resource`},
		{Problem{"stack.yaml", Pos{3, 0}, "invalid YAML: x"}, "stack.yaml:3: invalid YAML: x"},
		{Problem{"stack.yaml", Pos{}, "spec is empty"}, "stack.yaml: spec is empty"},
		{Problem{"", Pos{1, 2}, "m"}, "1:2: m"},
		{Problem{"", Pos{}, "m"}, "m"},
	}
	for _, tt := range tests {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	ps := Problems{tests[0].p, tests[2].p}
	if got, want := ps.Error(), tests[0].want+"\n"+tests[2].want; got != want {
		t.Errorf("Problems.Error() = %q, want %q", got, want)
	}
}

// TestProblemsSortedWithFile checks that problems carry the file name and
// come sorted by position whatever order they were found in.
func TestProblemsSortedWithFile(t *testing.T) {
	data := []byte(`resources:
  - name: b
    type: generic
    depends_on: [zz]
stack: Bad
version: 3
`)
	_, err := Parse("stack.yaml", data)
	want := `stack.yaml:1:1: no providers declared (add a providers: mapping)
stack.yaml:4:18: resource "b" depends on unknown resource "zz"
stack.yaml:5:8: invalid stack name "Bad": must match [a-z][a-z0-9-]{0,62}
stack.yaml:6:10: unsupported spec version 3 (this bulwark reads version 1)`
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

func TestCyclePath(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{"three", `
version: 1
stack: s
providers: {mock: {}}
resources:
  - {name: a, type: t, depends_on: [b]}
  - {name: b, type: t, depends_on: [c]}
  - {name: c, type: t, depends_on: [a]}
`, []string{"6:5: dependency cycle: a -> b -> c -> a"}},
		{"two", `
version: 1
stack: s
providers: {mock: {}}
resources:
  - {name: web, type: t, depends_on: [db]}
  - {name: db, type: t, depends_on: [web]}
`, []string{"7:5: dependency cycle: db -> web -> db"}},
		{"cycle and self", `
version: 1
stack: s
providers: {mock: {}}
resources:
  - {name: a, type: t, depends_on: [a, b]}
  - {name: b, type: t, depends_on: [a]}
`, []string{
			`6:37: resource "a" depends on itself`,
			"6:5: dependency cycle: a -> b -> a",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problemLines(t, []byte(tt.spec))
			// Same position sorts by discovery; compare as sets of lines.
			if diff := cmp.Diff(tt.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "   ", "# nothing\n# at all\n", "---\n", "~\n", "null\n"} {
		got := problemLines(t, []byte(in))
		if diff := cmp.Diff([]string{"spec is empty"}, got); diff != "" {
			t.Errorf("Parse(%q) mismatch (-want +got):\n%s", in, diff)
		}
	}
	_, err := Parse("stack.yaml", nil)
	if err == nil || err.Error() != "stack.yaml: spec is empty" {
		t.Errorf("Parse(nil) = %v", err)
	}
}

func TestSyntaxErrors(t *testing.T) {
	// yaml.v3 prints a parser error's line 0-based and a scanner error's
	// 1-based; both come out 1-based here.
	tests := map[string]string{
		"version: 1\nstack: [demo\n":              "2: invalid YAML: did not find expected ',' or ']'",
		"version: 1\n  stack: demo\n":             "2: invalid YAML: mapping values are not allowed in this context",
		"version: 1\nstack: \"demo\n\n":           "2: invalid YAML: found unexpected end of stream",
		"version: 1\nstack: !e!x 1\n":             "2: invalid YAML: found undefined tag handle",
		"- a\n- b\nc: d\n":                        "3: invalid YAML: did not find expected '-' indicator",
		"version: 1\nresources:\n  - a\n  b: 1\n": "3: invalid YAML: did not find expected '-' indicator",
		"version: 1\nstack:\n\tx\n":               "3: invalid YAML: found character that cannot start any token",
		"version: 1\nstack: *x\n":                 "invalid YAML: unknown anchor 'x' referenced",
		"version: 1\nstack: \xff\n":               "invalid YAML: invalid leading UTF-8 octet",
		"a: b: c\n":                               "invalid YAML: mapping values are not allowed in this context",
	}
	for in, want := range tests {
		got := problemLines(t, []byte(in))
		if diff := cmp.Diff([]string{want}, got); diff != "" {
			t.Errorf("Parse(%q) mismatch (-want +got):\n%s", in, diff)
		}
	}
}

func TestConfigNormalisation(t *testing.T) {
	s := mustParse(t, "n.yaml", []byte(`
version: 1
stack: s
providers:
  mock:
  other: {config: {}}
default_provider: mock
resources:
  - name: r
    type: t
    config:
      int: 3
      neg: -7
      hex: 0x10
      big: 18446744073709551615
      float: 2.5
      exp: 1e3
      str: "3"
      plain: hello
      yes: yes
      bool: false
      nil: ~
      empty: null
      when: 2024-01-02T03:04:05Z
      list: [1, a, [true]]
      map: {k: {j: 1}}
      quotedkey: {"1": one}
  - name: bare
    type: t
`))
	want := map[string]any{
		"int": 3.0, "neg": -7.0, "hex": 16.0, "big": 18446744073709551615.0,
		"float": 2.5, "exp": 1000.0, "str": "3", "plain": "hello", "yes": "yes",
		"bool": false, "nil": nil, "empty": nil, "when": "2024-01-02T03:04:05Z",
		"list":      []any{1.0, "a", []any{true}},
		"map":       map[string]any{"k": map[string]any{"j": 1.0}},
		"quotedkey": map[string]any{"1": "one"},
	}
	if diff := cmp.Diff(want, s.Resources[0].Config); diff != "" {
		t.Errorf("config mismatch (-want +got):\n%s", diff)
	}
	if c := s.Resources[1].Config; c == nil || len(c) != 0 {
		t.Errorf("absent config = %#v, want empty non-nil map", c)
	}
	if c := s.Providers["mock"].Config; c != nil {
		t.Errorf("absent provider config = %#v, want nil", c)
	}
	if c := s.Providers["other"].Config; c == nil || len(c) != 0 {
		t.Errorf("empty provider config = %#v, want empty map", c)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "stack.yaml")
	if err := os.WriteFile(good, readFile(t, "testdata/good/demo.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if s.File != good || len(s.Resources) != 5 {
		t.Errorf("Load = %+v", s)
	}

	_, err = Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want not-exist", err)
	}

	big := filepath.Join(dir, "big.yaml")
	line := "# " + strings.Repeat("x", 97) + "\n"
	if err := os.WriteFile(big, []byte(strings.Repeat(line, (1<<20)/len(line)+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(big)
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(err.Error(), "larger than 1048576 bytes (1 MiB)") {
		t.Errorf("Load(big) = %v", err)
	}
	if !strings.HasPrefix(err.Error(), big+": ") {
		t.Errorf("Load(big) error does not name the file: %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if err == nil || !strings.Contains(err.Error(), "\n"+bad+":1:10: unsupported spec version 2 (this bulwark reads version 1)") {
		t.Errorf("Load(bad) = %v", err)
	}
}

const twoProviders = `
version: 1
stack: s
providers:
  mock: {}
  cloud: {source: aws, config: {region: eu-west-1}}
default_provider: mock
resources:
  - {name: net, type: network, config: {tags: {a: b}}}
  - {name: bucket, type: s3_bucket, provider: cloud, depends_on: [net]}
  - {name: vm, type: compute, provider: mock, depends_on: [net, bucket]}
`

func TestWithDefaultProvider(t *testing.T) {
	s := mustParse(t, "s.yaml", []byte(twoProviders))
	if got, want := s.ProvidersUsed(), []string{"cloud", "mock"}; !cmp.Equal(got, want) {
		t.Errorf("ProvidersUsed = %v, want %v", got, want)
	}

	local := s.WithDefaultProvider("local")
	if got := local.DefaultProvider; got != "local" {
		t.Errorf("DefaultProvider = %q", got)
	}
	if diff := cmp.Diff(&Provider{Name: "local", Source: "local"}, local.Providers["local"]); diff != "" {
		t.Errorf("added provider mismatch (-want +got):\n%s", diff)
	}
	var got []string
	for _, r := range local.Resources {
		got = append(got, r.Name+"="+r.Provider)
	}
	// vm named mock explicitly, so it keeps it.
	if want := []string{"net=local", "bucket=cloud", "vm=mock"}; !cmp.Equal(got, want) {
		t.Errorf("providers = %v, want %v", got, want)
	}
	if got, want := local.ProvidersUsed(), []string{"cloud", "local", "mock"}; !cmp.Equal(got, want) {
		t.Errorf("ProvidersUsed = %v, want %v", got, want)
	}

	// The original is untouched, deeply.
	local.Resources[0].Config["tags"].(map[string]any)["a"] = "changed"
	local.Providers["cloud"].Config["region"] = "changed"
	local.Resources[2].DependsOn[0] = "changed"
	fresh := mustParse(t, "s.yaml", []byte(twoProviders))
	if diff := cmp.Diff(fresh, s); diff != "" {
		t.Errorf("WithDefaultProvider changed the original (-want +got):\n%s", diff)
	}

	// A declared provider keeps its config and source.
	cloud := s.WithDefaultProvider("cloud")
	if diff := cmp.Diff(s.Providers, cloud.Providers); diff != "" {
		t.Errorf("providers changed (-want +got):\n%s", diff)
	}
	if r, _ := cloud.Resource("net"); r.Provider != "cloud" {
		t.Errorf("net uses %q, want cloud", r.Provider)
	}
	if got, want := cloud.ProvidersUsed(), []string{"cloud", "mock"}; !cmp.Equal(got, want) {
		t.Errorf("ProvidersUsed = %v, want %v", got, want)
	}
}

func TestResourceAndGraph(t *testing.T) {
	s := mustParse(t, "s.yaml", []byte(twoProviders))
	if r, ok := s.Resource("bucket"); !ok || r.Type != "s3_bucket" {
		t.Errorf("Resource(bucket) = %+v, %v", r, ok)
	}
	if _, ok := s.Resource("nope"); ok {
		t.Errorf("Resource(nope) found")
	}
	g := s.Graph()
	if got, want := g.Nodes(), []string{"bucket", "net", "vm"}; !cmp.Equal(got, want) {
		t.Errorf("Nodes = %v, want %v", got, want)
	}
	if got, want := g.DependsOn("vm"), []string{"bucket", "net"}; !cmp.Equal(got, want) {
		t.Errorf("DependsOn(vm) = %v, want %v", got, want)
	}
	order, ok := g.TopoOrder()
	if want := []string{"net", "bucket", "vm"}; !ok || !cmp.Equal(order, want) {
		t.Errorf("TopoOrder = %v, %v; want %v", order, ok, want)
	}
}

func TestParseImport(t *testing.T) {
	sp, err := Parse("s.yaml", []byte("version: 1\nstack: demo\nproviders:\n  mock: {}\nresources:\n  - {name: a, type: compute, import: \"mock-compute-a-1\"}\n  - {name: b, type: compute}\n  - {name: c, type: compute, import: 0042}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := sp.Resource("a"); a.Import != "mock-compute-a-1" || a.FieldPos["import"].Line != 6 {
		t.Errorf("a: import %q at %v", a.Import, a.FieldPos["import"])
	}
	if b, _ := sp.Resource("b"); b.Import != "" {
		t.Errorf("b: import %q", b.Import)
	}
	if c, _ := sp.Resource("c"); c.Import != "0042" {
		t.Errorf("c: a numeric id is kept as written, got %q", c.Import)
	}
}
