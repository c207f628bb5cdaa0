package resolve

import (
	"errors"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
)

const envStack = `version: 1
stack: ${local.prefix}-${var.env}
variables:
  env: {type: string}
  team: {type: string, default: Core}
  size: {type: number}
  region: {type: string}
locals:
  prefix: ${lower(var.team)}
  big: ${var.size * 2}
providers: {mock: {}}
resources:
  - name: net
    type: network
    config: {size: "${local.big}", region: "${var.region}"}
`

// TestStackName: the stack name is resolved from the variables (and
// locals) it uses and no other, then checked against the pattern; a bad
// result is a problem at the stack: field naming the value and the
// expression.
func TestStackName(t *testing.T) {
	tests := []struct {
		name    string
		stack   string // replaces the stack: line's value
		vars    map[string]any
		want    string
		wantErr string
	}{
		{name: "through a local", vars: map[string]any{"env": "prod", "team": "Core"}, want: "core-prod"},
		{name: "other variables unneeded", stack: "app-${var.env}", vars: map[string]any{"env": "dev"}, want: "app-dev"},
		{name: "plain", stack: "demo", vars: nil, want: "demo"},
		{name: "conditional", stack: `'${var.env == "prod" ? "live" : "test-${var.env}"}'`, vars: map[string]any{"env": "qa"}, want: "test-qa"},
		{name: "bad resolved name", stack: "app-${var.env}", vars: map[string]any{"env": "Prod"},
			wantErr: `stack.yaml:2:8: stack "app-Prod" (from app-${var.env}) is not a valid stack name: must match [a-z][a-z0-9-]{0,62}`},
		{name: "empty", stack: "${var.env}", vars: map[string]any{"env": ""},
			wantErr: `stack.yaml:2:8: stack "" (from ${var.env}) is not a valid stack name: must match [a-z][a-z0-9-]{0,62}`},
		{name: "not a string", stack: "${var.size}", vars: map[string]any{"size": 3.0},
			wantErr: `stack.yaml:2:8: the stack name ${var.size} must be a string, not a number`},
		{name: "missing value", stack: "app-${var.env}", vars: map[string]any{},
			wantErr: `stack.yaml:2:8: the stack name app-${var.env} needs variable "env", which has no value: give one with --var env=VALUE, in a --var-file, or as BULWARK_VAR_env`},
		{name: "function fails", stack: "${jsondecode(var.env)}", vars: map[string]any{"env": "dev"},
			wantErr: `stack.yaml:2:10: ${jsondecode(var.env)}: Error in function call`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := envStack
			if tt.stack != "" {
				text = strings.Replace(text, "${local.prefix}-${var.env}", tt.stack, 1)
			}
			s := parse(t, text)
			got, err := StackName(s, tt.vars)
			if tt.wantErr != "" {
				var ps spec.Problems
				if !errors.As(err, &ps) || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("StackName = %q, %v; want problems starting %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("StackName = %q, %v; want %q", got, err, tt.want)
			}
			ws, err := WithStackName(s, tt.vars)
			if err != nil || ws.Stack != tt.want || s.Stack == tt.want && s.StackExpr != nil {
				t.Errorf("WithStackName: Stack %q, %v; the parsed spec's %q", ws.Stack, err, s.Stack)
			}
		})
	}
}

// TestStackValues: a command that needs only the stack's name needs
// values only for the variables the name uses, and the error for a
// missing one says the name needs it; Values says the same.
func TestStackValues(t *testing.T) {
	s := parse(t, envStack)
	tests := []struct {
		name    string
		in      Inputs
		want    string // the stack's name
		wantErr string
	}{
		{name: "environment", in: Inputs{Env: []string{"BULWARK_VAR_env=prod"}}, want: "core-prod"},
		{name: "flag wins", in: Inputs{Env: []string{"BULWARK_VAR_env=prod"}, Vars: []string{"env=dev", "team=Ops"}}, want: "ops-dev"},
		{name: "missing",
			wantErr: `stack.yaml:4:3: variable "env" has no value, and the stack name ${local.prefix}-${var.env} needs it to say which stack this is: give one with --var env=VALUE, in a --var-file, or as BULWARK_VAR_env (or declare a default)`},
		{name: "undeclared flag", in: Inputs{Vars: []string{"envv=dev"}}, wantErr: `--var envv: the spec stack.yaml declares no variable "envv"`},
		{name: "ill-typed value of another variable", in: Inputs{Vars: []string{"env=dev", "size=big"}}, wantErr: `--var size: variable "size" is a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, err := StackValues(s, tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("StackValues = %v, %v; want an error holding %q", vals, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), `"size" has no value`) || strings.Contains(err.Error(), `"region" has no value`) {
					t.Errorf("StackValues asks for variables the name does not use: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := vals["size"]; ok {
				t.Errorf("StackValues gave a value to size, which the name does not use: %v", vals)
			}
			got, err := StackName(s, vals)
			if err != nil || got != tt.want {
				t.Errorf("StackName = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	plain := parse(t, strings.Replace(envStack, "${local.prefix}-${var.env}", "demo", 1))
	if vals, err := StackValues(plain, Inputs{}); err != nil || len(vals) != 0 {
		t.Errorf("StackValues of a plain name = %v, %v; want none needed", vals, err)
	}
	if _, err := StackValues(plain, Inputs{Vars: []string{"nope=1"}}); err == nil {
		t.Errorf("StackValues of a plain name took an undeclared --var")
	}
	_, _, err := Values(s, Inputs{Vars: []string{"size=1", "region=eu"}})
	if err == nil || !strings.Contains(err.Error(), `variable "env" has no value, and the stack name ${local.prefix}-${var.env} needs it`) {
		t.Errorf("Values: %v", err)
	}
}

// TestExpandStackName: Expand gives the spec its resolved stack name, and
// Reload, from the recorded values, the same one (rollback and a saved
// plan compare them); a bad name is one of Expand's problems.
func TestExpandStackName(t *testing.T) {
	s := parse(t, envStack)
	in := Inputs{Vars: []string{"env=prod", "size=2", "region=eu"}}
	c := expand(t, s, in)
	if c.Stack != "core-prod" || s.Stack != "" {
		t.Fatalf("expanded Stack %q, parsed %q", c.Stack, s.Stack)
	}
	r, err := Reload("stack.yaml", []byte(envStack), "", c.Values)
	if err != nil || r.Stack != c.Stack {
		t.Fatalf("Reload: Stack %v, %v; want %q", r, err, c.Stack)
	}
	vals, _, err := Values(s, Inputs{Vars: []string{"env=Prod!", "size=2", "region=eu"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Expand(s, vals)
	if err == nil || !strings.Contains(err.Error(), `stack.yaml:2:8: stack "core-Prod!" (from ${local.prefix}-${var.env}) is not a valid stack name`) {
		t.Errorf("Expand: %v", err)
	}
}
