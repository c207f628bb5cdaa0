package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStackNameExpression: a stack: field that uses variables or locals
// is kept as an expression (Stack empty until resolved), with the
// variables and locals it needs; a plain one, $${ escapes included, is
// the name.
func TestStackNameExpression(t *testing.T) {
	tests := []struct {
		name, stack string
		wantStack   string // Stack as parsed
		wantExpr    string // StackExpr.String(), "" for none
		wantVars    []string
		wantLocals  []string
	}{
		{name: "plain", stack: "demo", wantStack: "demo"},
		{name: "variable", stack: "app-${var.env}", wantExpr: "app-${var.env}", wantVars: []string{"env"}},
		{name: "two variables", stack: `"${var.team}-${var.env}"`, wantExpr: "${var.team}-${var.env}", wantVars: []string{"env", "team"}},
		{name: "function", stack: `'${lower(var.team)}-app'`, wantExpr: "${lower(var.team)}-app", wantVars: []string{"team"}},
		{name: "local over variables", stack: "${local.name}", wantExpr: "${local.name}", wantVars: []string{"env", "team"}, wantLocals: []string{"prefix", "name"}},
		{name: "local without variables", stack: "${local.fixed}", wantExpr: "${local.fixed}", wantLocals: []string{"fixed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := `version: 1
stack: ` + tt.stack + `
variables:
  env: {type: string}
  team: {type: string, default: Core}
  unused: {type: string}
locals:
  prefix: ${lower(var.team)}
  name: "${local.prefix}-${var.env}"
  fixed: shared
  other: ${var.unused}
providers: {mock: {}}
resources: []
`
			s := mustParse(t, "stack.yaml", []byte(text))
			if s.Stack != tt.wantStack {
				t.Errorf("Stack = %q, want %q", s.Stack, tt.wantStack)
			}
			expr := ""
			if s.StackExpr != nil {
				expr = s.StackExpr.String()
			}
			if expr != tt.wantExpr {
				t.Errorf("StackExpr = %q, want %q", expr, tt.wantExpr)
			}
			if d := cmp.Diff(tt.wantVars, s.StackVars()); d != "" {
				t.Errorf("StackVars (-want +got):\n%s", d)
			}
			var locals []string
			for _, l := range s.StackLocals() {
				locals = append(locals, l.Name)
			}
			if d := cmp.Diff(tt.wantLocals, locals); d != "" {
				t.Errorf("StackLocals (-want +got):\n%s", d)
			}
			if s.StackPos != (Pos{Line: 2, Col: 8}) {
				t.Errorf("StackPos = %+v, want 2:8", s.StackPos)
			}
			if s.StackExpr != nil && s.Expanded() {
				t.Errorf("Expanded() with StackExpr %q unresolved", tt.wantExpr)
			}
		})
	}
}

// TestStackNameProblems: what the stack name cannot use is a problem at
// parse time, at the reference's FILE:LINE:COL: a resource, data, each, an
// unknown variable or local, a sensitive variable (directly or through a
// local); a plain bad name is refused as before.
func TestStackNameProblems(t *testing.T) {
	why := "the stack name is resolved before anything else: before the state is opened and any provider starts"
	tests := []struct {
		name, stack string
		want        []string
	}{
		{"resource", "app-${net.id}", []string{`2:12: the stack name can use only variables and locals, not ${net.id}: ` + why}},
		{"resource instance in expression", `'${upper(web[a].id)}'`, []string{`2:17: the stack name can use only variables and locals, not ${web[a].id}: ` + why}},
		{"data", "app-${data.acct.id}", []string{`2:12: the stack name can use only variables and locals, not ${data.acct.id}: ` + why}},
		{"each", "app-${each.key}", []string{`2:12: the stack name can use only variables and locals, not ${each.key}: ` + why}},
		{"unknown variable", "app-${var.envv}", []string{`2:12: unknown variable "envv" in ${var.envv} (declared under variables: env, token)`}},
		{"unknown local", "app-${local.nope}", []string{`2:12: unknown local "nope" in ${local.nope} (declared under locals: secret)`}},
		{"sensitive variable", "app-${var.token}", []string{`2:12: the stack name cannot use the sensitive variable "token" (${var.token}): a stack's name is written in clear in folder names, the state and every output`}},
		{"sensitive through a local", "app-${local.secret}", []string{`2:12: the stack name cannot use local "secret": it uses the sensitive variable "token", and a stack's name is written in clear in folder names, the state and every output`}},
		{"bad plain name", "App", []string{`2:8: invalid stack name "App": must match [a-z][a-z0-9-]{0,62}`}},
		{"escape only", "app-$${x}", []string{`2:8: invalid stack name "app-${x}": must match [a-z][a-z0-9-]{0,62}`}},
		{"not a string", "[a]", []string{`2:8: stack must be a string, not a list`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := `version: 1
stack: ` + tt.stack + `
variables:
  env: {type: string}
  token: {type: string, sensitive: true}
locals:
  secret: ${lower(var.token)}
providers: {mock: {}}
data:
  - {name: acct, type: account}
resources:
  - {name: net, type: network}
  - {name: web, type: compute, for_each: [a]}
`
			got := problemLines(t, []byte(text))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}
