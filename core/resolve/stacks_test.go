package resolve

import (
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
)

func TestSubstituteStacks(t *testing.T) {
	s := expand(t, parse(t, `version: 1
stack: app
providers: {mock: {}}
resources:
  - name: net
    type: network
    config:
      vpc: "${stack.network.outputs.vpc_id}"
      zone: "z-${stack.network.outputs.zone}"
      upper: "${upper(stack[\"network\"].outputs.zone)}"
      pw: "${stack.network.outputs.password}"
      pw_up: "${upper(stack.network.outputs.password)}"
      after: "${other.id}"
  - name: other
    type: network
outputs:
  o: {value: "${stack.network.outputs.vpc_id} and ${other.arn}"}
`), Inputs{})
	refs := StackRefs(s)
	var got []string
	for _, r := range refs {
		got = append(got, r.Name+"."+r.Attr)
	}
	if want := []string{"network.password", "network.zone", "network.vpc_id"}; !slices.Equal(got, want) {
		t.Errorf("StackRefs = %v, want %v", got, want)
	}
	vals := StackOutputs{"network": {"vpc_id": "vpc-1", "zone": "eu", "password": "hunter2"}}
	c, err := SubstituteStacks(s, vals, map[string][]string{"network": {"password"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Resources[0].Config
	for k, want := range map[string]any{"vpc": "vpc-1", "zone": "z-eu", "upper": "EU", "pw": "hunter2", "pw_up": "HUNTER2"} {
		if cfg[k] != want {
			t.Errorf("config %s = %#v, want %#v", k, cfg[k], want)
		}
	}
	if tm, ok := cfg["after"].(*spec.Template); !ok || tm.Single().Name != "other" {
		t.Errorf("a resource reference was not kept: %#v", cfg["after"])
	}
	if out, ok := c.Outputs[0].Value.(*spec.Template); !ok || out.String() != "vpc-1 and ${other.arn}" {
		t.Errorf("output = %#v", c.Outputs[0].Value)
	}
	if !slices.Contains(c.Secrets, any("HUNTER2")) {
		t.Errorf("a value computed from a sensitive output is not a secret: %v", c.Secrets)
	}
	if _, isTmpl := s.Resources[0].Config["vpc"].(*spec.Template); !isTmpl {
		t.Error("SubstituteStacks changed its input")
	}

	for _, tt := range []struct {
		name string
		vals StackOutputs
		want string
	}{
		{"missing stack", StackOutputs{}, `stack "network" was not read`},
		{"missing output", StackOutputs{"network": {"vpc_id": "v"}}, `stack "network" has no output "zone"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SubstituteStacks(s, tt.vals, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestStackRefParse(t *testing.T) {
	for _, tt := range []struct {
		expr, wantErr string
	}{
		{`${stack.network.outputs.vpc_id}`, ""},
		{`${stack["network"].outputs.vpc_id}`, ""},
		{`${stack.id}`, "unknown resource"},
		{`${stack.network.vpc_id}`, "want ${stack.NAME.outputs.X}"},
		{`${stack["app-${var.env}"].outputs.x}`, ""},
		{`${stack[var.env].outputs.x}`, "want stack.NAME.outputs.X"}, // a bare key is a literal, as web[a]'s
		{`${length(stack)}`, "want stack.NAME.outputs.X"},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			src := "version: 1\nstack: app\nproviders: {mock: {}}\nvariables: {env: {default: dev}}\nresources:\n  - name: a\n    type: network\n    config: {x: '" + tt.expr + "'}\n"
			_, err := spec.Parse("s.yaml", []byte(src))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "s.yaml:8:") {
				t.Fatalf("err = %v, want %q at s.yaml:8", err, tt.wantErr)
			}
		})
	}
}

// stack[EXPR]: the name is computed from variables and locals by Expand.
func TestSubstituteComputedStackName(t *testing.T) {
	text := `version: 1
stack: app-${var.env}
providers: {mock: {}}
variables: {env: {default: dev}, pw: {default: x, sensitive: true}}
locals: {net: "net-${var.env}"}
resources:
  - name: a
    type: network
    config:
      zone: "${stack[\"net-${var.env}\"].outputs.zone}"
      size: "${stack[\"${local.net}\"].outputs.size + 1}"
`
	s := expand(t, parse(t, text), Inputs{Vars: []string{"env=prod"}})
	refs := StackRefs(s)
	if len(refs) != 2 || refs[0].Name != "net-prod" || refs[1].Name != "net-prod" {
		t.Fatalf("StackRefs = %+v", refs)
	}
	c, err := SubstituteStacks(s, StackOutputs{"net-prod": {"zone": "eu", "size": 2.0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.Resources[0].Config; cfg["zone"] != "eu" || cfg["size"] != 3.0 {
		t.Errorf("config = %v", cfg)
	}
	// A sensitive variable never names a stack.
	sp := parse(t, strings.Replace(text, `${local.net}`, `${var.pw}`, 1))
	vals, _, err := Values(sp, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Expand(sp, vals)
	if err == nil || !strings.Contains(err.Error(), "sensitive variable") || !strings.Contains(err.Error(), "stack.yaml:11:") {
		t.Errorf("a sensitive name: %v", err)
	}
}
