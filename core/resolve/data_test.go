package resolve

import (
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/google/go-cmp/cmp"
)

func TestSubstituteData(t *testing.T) {
	s := expand(t, parse(t, `version: 1
stack: s
providers: {mock: {}}
variables: {kind: {default: network}}
data:
  - {name: a, type: lookup, config: {type: "${var.kind}", name: a}}
  - {name: b, type: lookup, config: {type: "${var.kind}", name: "${data.a.id}-x", size: "${data.a.size}"}}
resources:
  - name: net
    type: network
    config: {size: "${data.a.size}", zone: "z-${data.b.zone}", tags: "${data.a.tags}", after: "${other.id}", missing: "${data.a.nothing}"}
  - name: other
    type: network
outputs:
  o: {value: "${data.b.arn} and ${other.arn}"}
`), Inputs{})
	if got := s.Data[1].Config["type"]; got != "network" {
		t.Errorf("Expand left the data config's variable: %v", got)
	}
	vals := DataValues{
		"a": {"id": "net-1", "size": 3.0, "tags": map[string]any{"k": "v"}},
		"b": {"zone": "eu", "arn": "mock:network:b"},
	}
	cfg, err := DataConfig(s.Data[1], vals)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"type": "network", "name": "net-1-x", "size": 3.0}, cfg); d != "" {
		t.Errorf("DataConfig (-want +got):\n%s", d)
	}
	if got := DataRefs(s.Data[1].Config); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("DataRefs = %v", got)
	}
	c, err := SubstituteData(s, vals)
	if err != nil {
		t.Fatal(err)
	}
	net := c.Resources[0].Config
	if net["size"] != 3.0 || net["zone"] != "z-eu" || !cmp.Equal(net["tags"], map[string]any{"k": "v"}) || net["missing"] != nil {
		t.Errorf("net config = %v", net)
	}
	if tm, ok := net["after"].(*spec.Template); !ok || tm.Single().Name != "other" {
		t.Errorf("a resource reference was not kept: %#v", net["after"])
	}
	out, ok := c.Outputs[0].Value.(*spec.Template)
	if !ok || out.String() != "mock:network:b and ${other.arn}" {
		t.Errorf("output = %#v", c.Outputs[0].Value)
	}
	// The values are copies; s is unchanged.
	net["tags"].(map[string]any)["k"] = "changed"
	if vals["a"]["tags"].(map[string]any)["k"] != "v" {
		t.Error("SubstituteData shares memory with the values read")
	}
	if _, isTmpl := s.Resources[0].Config["size"].(*spec.Template); !isTmpl {
		t.Error("SubstituteData changed its input")
	}
	// What is left resolves as before; a data reference never reaches Config.
	if _, _, err := Config(s.Resources[0].Config, func(string, string) (any, bool) { return "x", true }); err == nil || !strings.Contains(err.Error(), "the data was not read") {
		t.Errorf("Config of an unsubstituted data reference: %v", err)
	}
}

func TestSubstituteDataProblems(t *testing.T) {
	s := expand(t, parse(t, `version: 1
stack: s
providers: {mock: {}}
data:
  - {name: a, type: lookup}
  - {name: b, type: lookup}
resources:
  - name: net
    type: network
    config: {x: "in ${data.a.tags}", y: "${data.b.id}"}
`), Inputs{})
	_, err := SubstituteData(s, DataValues{"a": {"tags": map[string]any{}}})
	want := "stack.yaml:10:21: ${data.a.tags} is a map and cannot be part of a string (use it alone, as the whole value, to pass the map)\nstack.yaml:10:42: ${data.b.id}: data \"b\" was not read"
	if err == nil || err.Error() != want {
		t.Errorf("err =\n%v\nwant\n%s", err, want)
	}
}
