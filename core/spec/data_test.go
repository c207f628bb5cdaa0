package spec

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/google/go-cmp/cmp"
)

func TestParseData(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(`version: 1
stack: s
providers: {mock: {}, other: {source: mock}}
default_provider: mock
variables: {v: {default: x}}
data:
  - name: found
    type: lookup
    config: {type: network, name: "${var.v}"}
  - name: again
    type: lookup
    provider: other
    config: {name: "${data.found.id}-b", type: "${data.found.zone}"}
resources:
  - name: net
    type: network
    config: {zone: "${data.found.zone}", tags: {of: "x-${data.again.arn}"}}
  - name: data
    type: network
outputs:
  arn: {value: "${data.found.arn}"}
  res: {value: "${data.id}"}
`))
	if len(s.Data) != 2 {
		t.Fatalf("data = %v", s.Data)
	}
	found, again := s.Data[0], s.Data[1]
	if found.Name != "found" || found.Type != "lookup" || found.Provider != "mock" || found.ExplicitProvider || found.Pos != (Pos{7, 5}) {
		t.Errorf("found = %+v", found)
	}
	if found.FieldPos["config.name"] != (Pos{9, 29}) || found.FieldPos["type"] != (Pos{8, 11}) {
		t.Errorf("found positions = %v", found.FieldPos)
	}
	if again.Provider != "other" || !again.ExplicitProvider || !cmp.Equal(again.DependsOn, []string{"found"}) {
		t.Errorf("again = %+v", again)
	}
	ref := s.Resources[0].Config["zone"].(*Template).Single()
	if ref == nil || ref.Kind != RefData || ref.Name != "found" || ref.Attr != "zone" || ref.String() != "${data.found.zone}" || ref.Address() != "" || ref.Pos != (Pos{17, 21}) {
		t.Errorf("zone ref = %#v", ref)
	}
	// A data reference makes no dependency between resources.
	if len(s.Resources[0].DependsOn) != 0 {
		t.Errorf("net depends on %v", s.Resources[0].DependsOn)
	}
	// ${data.ATTR} stays a reference to a resource named data.
	if r := s.Outputs[1].Value.(*Template).Single(); r.Kind != RefResource || r.Name != "data" {
		t.Errorf("res ref = %#v", r)
	}
	if got := s.ProvidersUsed(); !cmp.Equal(got, []string{"mock", "other"}) {
		t.Errorf("ProvidersUsed = %v", got)
	}
	if d, ok := s.DataEntry("again"); !ok || d != again {
		t.Errorf("DataEntry(again) = %v, %v", d, ok)
	}
	w := s.WithDefaultProvider("x")
	if w.Data[0].Provider != "x" || w.Data[1].Provider != "other" || s.Data[0].Provider != "mock" {
		t.Errorf("WithDefaultProvider: %s %s, original %s", w.Data[0].Provider, w.Data[1].Provider, s.Data[0].Provider)
	}
}

func TestParseDataProblems(t *testing.T) {
	const head = "version: 1\nstack: s\nproviders: {mock: {}}\n"
	tests := []struct {
		name, body string
		want       []string
	}{
		{"duplicate name", `resources: []
data:
  - {name: a, type: lookup}
  - {name: a, type: lookup}
`, []string{`7:12: duplicate data name "a" (first at line 6)`}},
		{"unknown provider", `resources: []
data:
  - {name: a, type: lookup, provider: aws}
`, []string{`6:39: data "a": provider "aws" is not declared (declared: mock)`}},
		{"no provider to choose", `resources: []
data:
  - {name: a, type: lookup}
`, nil}, // one provider: it is the default
		{"fields", `resources: []
data:
  - {name: A, type: "", config: [x], depends_on: [b]}
  - {provider: mock}
  - just a string
data2: x
`, []string{
			`6:12: invalid data name "A": must match ` + namePattern,
			`6:21: data "A": type must not be empty`,
			`6:33: data "A": config must be a mapping, not a list`,
			`6:38: unknown field "depends_on" in data "A" (allowed: name, type, provider, config)`,
			`7:5: data entry #2 is missing required field "name"`,
			`7:5: data entry #2 is missing required field "type"`,
			`8:5: data entry #3 must be a mapping, not a string`,
			`9:1: unknown field "data2" at top level (allowed: version, stack, variables, locals, providers, default_provider, resources, data, outputs, moved, removed, modules)`,
		}},
		{"data not a list", `resources: []
data: {a: 1}
`, []string{`5:7: data must be a list of data entries ({name, type, provider, config}), not a mapping`}},
		{"data references a resource", `resources:
  - {name: net, type: network}
data:
  - {name: a, type: lookup, config: {name: "${net.id}"}}
`, []string{`7:45: data "a": config cannot reference resource "net" (${net.id}): data is read at plan time, before anything is applied`}},
		{"data references itself, each, and a cycle", `resources: []
data:
  - {name: a, type: lookup, config: {name: "${data.a.id}", k: "${each.key}"}}
  - {name: b, type: lookup, config: {name: "${data.c.id}"}}
  - {name: c, type: lookup, config: {name: "${data.b.id}"}}
`, []string{
			`6:45: data "a": references itself in ${data.a.id} (a data entry cannot use its own attributes)`,
			`6:64: data "a": ${each.key} is only allowed in the config of a resource with for_each`,
			`7:5: data dependency cycle: b -> c -> b`,
		}},
		{"provider config and for_each refuse data", `providers2: x
resources:
  - {name: net, type: network, for_each: "${data.a.names}"}
  - {name: web, type: network, for_each: ["${data.a.id}"]}
data:
  - {name: a, type: lookup}
`, []string{
			`4:1: unknown field "providers2" at top level (allowed: version, stack, variables, locals, providers, default_provider, resources, data, outputs, moved, removed, modules)`,
			`6:43: resource "net": for_each can use only variables and literal lists or mappings, not ${data.a.names}: its keys must be known before any provider starts (and so before any data is read)`,
			`7:44: resource "web": for_each can use only variables and literal lists or mappings, not ${data.a.id}: its keys must be known before any provider starts (and so before any data is read)`,
		}},
		{"unknown data name, too deep, bad name", `variables: {v: {}}
resources:
  - {name: net, type: network, config: {a: "${data.nope.id}", b: "${data.a.tags.x}", c: "${data.A.id}"}}
data:
  - {name: a, type: lookup, config: {x: "${data.zz.id}", y: "${var.w}"}}
outputs:
  o: {value: "${data.gone.arn}"}
`, []string{
			`6:45: unknown data entry "nope" in ${data.nope.id} (declared under data: a)`,
			`6:67: invalid reference "${data.a.tags.x}": a data reference reaches one attribute deep, ${data.NAME.ATTR}, as a resource's does`,
			`6:90: invalid reference "${data.A.id}": want ${data.NAME.ATTR}, NAME matching ` + namePattern,
			`8:42: unknown data entry "zz" in ${data.zz.id} (declared under data: a)`,
			`8:62: unknown variable "w" in ${var.w} (declared under variables: v)`,
			`10:15: unknown data entry "gone" in ${data.gone.arn} (declared under data: a)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("stack.yaml", []byte(head+tt.body))
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
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

func TestParseDataProviderConfig(t *testing.T) {
	_, err := Parse("stack.yaml", []byte(`version: 1
stack: s
providers: {mock: {config: {world: "${data.a.id}"}}}
resources: []
data:
  - {name: a, type: lookup}
`))
	want := `stack.yaml:3:37: a provider's config can use only variables, not ${data.a.id} (providers start before any data is read: the data is read through them)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestParseDataTwoProvidersNoDefault(t *testing.T) {
	_, err := Parse("stack.yaml", []byte(`version: 1
stack: s
providers: {a: {source: mock}, b: {source: mock}}
resources: []
data:
  - {name: x, type: lookup}
`))
	want := `stack.yaml:6:5: data "x" names no provider, and there is no default_provider to choose among the declared ones (a, b)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func dataSchema(readData bool) *providers.GetSchemaResponse {
	sc := fakeSchema()
	sc.Capabilities.ReadData = readData
	sc.DataSources = []providers.DataSourceType{{Name: "lookup", Attributes: []providers.Attribute{
		{Name: "type", Type: providers.TypeString, Required: true},
		{Name: "name", Type: providers.TypeString, Required: true},
		{Name: "id", Type: providers.TypeString, Computed: true},
		{Name: "size", Type: providers.TypeNumber, Computed: true},
		{Name: "tags", Type: providers.TypeMap, Computed: true},
	}}}
	return sc
}

func TestCheckSchemasData(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(`version: 1
stack: s
providers: {mock: {}, old: {source: legacy}}
default_provider: mock
data:
  - {name: ok, type: lookup, config: {type: network, name: a}}
  - {name: typo, type: lookupp}
  - {name: bad, type: lookup, config: {type: 3, colour: red, id: x}}
  - {name: old, type: lookup, provider: old}
  - {name: chained, type: lookup, config: {type: network, name: "${data.ok.size}"}}
resources:
  - name: b
    type: s3_bucket
    config: {bucket: "${data.ok.nope}", size: "${data.ok.tags}", tags: "${data.ok.tags}"}
outputs:
  o: {value: "${data.ok.zone}"}
`))
	err := s.CheckSchemas(map[string]*providers.GetSchemaResponse{"mock": dataSchema(true), "old": dataSchema(false)})
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v", err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, strings.TrimPrefix(p.Error(), "stack.yaml:"))
	}
	want := []string{
		`7:24: data "typo": unknown data source type "lookupp" for provider mock (has: lookup)`,
		`8:39: data "bad": missing required attribute "name" for type lookup`,
		`8:40: data "bad": attribute "type" must be a string, not a number`,
		`8:49: data "bad": unknown attribute "colour" for type lookup`,
		`8:62: data "bad": attribute "id" is computed by the provider and cannot be set`,
		`9:41: data "old": provider old (legacy) reads no data sources (its plugin does not offer ReadData)`,
		`10:59: data "chained": attribute "name" must be a string, not a number`,
		`14:14: resource "b": missing required attribute "bucket" for type s3_bucket (the value of ${data.ok.nope})`,
		`14:23: unknown attribute "nope" in ${data.ok.nope}: data source lookup of provider mock has type, name, id, size, tags`,
		`14:41: resource "b": attribute "size" must be a number, not a map (the value of ${data.ok.tags})`,
		`16:15: unknown attribute "zone" in ${data.ok.zone}: data source lookup of provider mock has type, name, id, size, tags`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
