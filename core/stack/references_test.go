package stack_test

import (
	"fmt"
	"testing"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// chainSpec is net -> sub -> vm wired by references (zone is force_new on
// the fake): sub's zone interpolates net's id, vm's sub's.
const chainSpec = `version: 1
stack: chain
variables:
  zone: {type: string, default: z1}
providers:
  fake: {}
resources:
  - name: net
    type: network
    config: {zone: "${var.zone}"}
  - name: sub
    type: generic
    config: {zone: "in-${net.id}"}
  - name: vm
    type: compute
    config: {zone: "on-${sub.id}", size: 1}
outputs:
  vm_zone: {value: "${vm.zone}"}
`

func expanded(t *testing.T, text string, vars map[string]any) *spec.Spec {
	t.Helper()
	sp := parseSpec(t, text)
	var in resolve.Inputs
	for k, v := range vars {
		in.Vars = append(in.Vars, fmt.Sprintf("%s=%v", k, v))
	}
	vals, _, err := resolve.Values(sp, in)
	if err != nil {
		t.Fatal(err)
	}
	sp, err = resolve.Expand(sp, vals)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestReferencesResolvedAtApply: each step's config is resolved from what
// its dependencies recorded, in the same run; a force-new change upstream
// cascades through the references; what is recorded is resolved.
func TestReferencesResolvedAtApply(t *testing.T) {
	e := newEnv(t)
	type want struct {
		plan    map[string]plan.Action
		unknown map[string][]string
	}
	steps := []struct {
		name string
		zone string
		want want
	}{
		{"first apply", "z1", want{
			plan:    map[string]plan.Action{"net": plan.Create, "sub": plan.Create, "vm": plan.Create},
			unknown: map[string][]string{"sub": {"zone"}, "vm": {"zone"}},
		}},
		{"no change", "z1", want{plan: map[string]plan.Action{"net": plan.NoOp, "sub": plan.NoOp, "vm": plan.NoOp}}},
		{"upstream replace cascades", "z2", want{
			plan:    map[string]plan.Action{"net": plan.Replace, "sub": plan.Replace, "vm": plan.Replace},
			unknown: map[string][]string{"sub": {"zone"}, "vm": {"zone"}},
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			sp := expanded(t, chainSpec, map[string]any{"zone": st.zone})
			pv, err := stack.Plan(e.ctx, sp, e.opts())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range pv.Changes {
				if c.Action != st.want.plan[c.Resource] {
					t.Errorf("plan %s: %s, want %s", c.Resource, c.Action, st.want.plan[c.Resource])
				}
				if got, want := c.Unknown, st.want.unknown[c.Resource]; len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
					t.Errorf("plan %s: unknown %v, want %v", c.Resource, got, want)
				}
				if len(c.Unknown) > 0 {
					if _, ok := c.After["zone"].(plan.AfterApply); !ok {
						t.Errorf("plan %s: after.zone = %#v, want plan.AfterApply", c.Resource, c.After["zone"])
					}
				}
			}
			before := len(e.w.Creates())
			res := e.mustApply(t, sp)
			s := e.state(t, "chain")
			net, sub, vm := s.Resources["net"], s.Resources["sub"], s.Resources["vm"]
			if sub.Config["zone"] != "in-"+net.ID || vm.Config["zone"] != "on-"+sub.ID {
				t.Fatalf("recorded configs not resolved from the ids: sub %v (net %s), vm %v (sub %s)", sub.Config["zone"], net.ID, vm.Config["zone"], sub.ID)
			}
			for _, c := range e.w.Creates()[before:] {
				if z, _ := c.Config["zone"].(string); c.Name != "net" && z != "in-"+net.ID && z != "on-"+sub.ID {
					t.Errorf("create %s was sent zone %v", c.Name, c.Config["zone"])
				}
			}
			if got := s.Outputs["vm_zone"].Value; got != "on-"+sub.ID {
				t.Errorf("output vm_zone = %v, want on-%s", got, sub.ID)
			}
			if len(res.Outputs) != 1 || res.Outputs[0].Name != "vm_zone" {
				t.Errorf("result outputs %+v", res.Outputs)
			}
			if err := agree(s, e.w.Snapshot()); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Teardown orders by the dependencies references imply.
	sp := expanded(t, chainSpec, map[string]any{"zone": "z2"})
	if _, err := e.teardown(sp); err != nil {
		t.Fatal(err)
	}
	if err := dependentsFirst(names(succeeded(e.w.Deletes()))[len(e.w.Deletes())-3:], map[string][]string{"sub": {"net"}, "vm": {"sub"}}); err != nil {
		t.Error(err)
	}
	if s := e.state(t, "chain"); len(s.Outputs) != 0 {
		t.Errorf("outputs after teardown: %v", s.Outputs)
	}
}

// TestRollbackToRevisionReappliesItsVariables: rollback --to N expands
// revision N's spec with the variable values it recorded.
func TestRollbackToRevisionReappliesItsVariables(t *testing.T) {
	e := newEnv(t)
	e.mustApply(t, expanded(t, chainSpec, map[string]any{"zone": "z1"}))
	e.mustApply(t, expanded(t, chainSpec, map[string]any{"zone": "z2"}))
	s := e.state(t, "chain")
	if len(s.Revisions) != 2 || s.Revisions[0].Variables["zone"] != "z1" || s.Revisions[1].Variables["zone"] != "z2" {
		t.Fatalf("revisions %+v", s.Revisions)
	}
	// Given z3 now: the rollback uses what revision 1 was applied with.
	res, err := stack.Rollback(e.ctx, expanded(t, chainSpec, map[string]any{"zone": "z3"}), e.opts(), 1)
	if code := stack.ExitCode(res, err); code != stack.ExitOK {
		t.Fatalf("rollback: exit %d, %v %v", code, err, resErr(res))
	}
	s = e.state(t, "chain")
	if s.Resources["net"].Config["zone"] != "z1" || s.Current != 1 {
		t.Fatalf("after rollback: net zone %v, current %d", s.Resources["net"].Config["zone"], s.Current)
	}
	if s.Resources["sub"].Config["zone"] != "in-"+s.Resources["net"].ID {
		t.Fatalf("sub not resolved from the new net: %v", s.Resources["sub"].Config["zone"])
	}
	pv, err := stack.Plan(e.ctx, expanded(t, chainSpec, map[string]any{"zone": "z3"}), e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Variables) != 1 || pv.Variables[0].Name != "zone" || pv.Variables[0].Before != "z1" || pv.Variables[0].After != "z3" {
		t.Errorf("variable changes %+v", pv.Variables)
	}
}

// TestShortSecretDerived: a sensitive variable shorter than the Redactor
// looks for in text still makes what interpolates it sensitive: sealed in
// the state, masked in the plan.
func TestShortSecretDerived(t *testing.T) {
	const text = `version: 1
stack: short
variables:
  pin: {type: string, sensitive: true}
providers:
  fake: {}
resources:
  - name: r
    type: generic
    config: {zone: "pin-${var.pin}"}
outputs:
  z: {value: "${r.zone}"}
`
	e := newEnv(t)
	sp := expanded(t, text, map[string]any{"pin": "7q"})
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := pv.Changes[0].Sensitive; len(got) != 1 || got[0] != "zone" {
		t.Fatalf("plan sensitive %v, want [zone]", got)
	}
	e.mustApply(t, sp)
	st := e.state(t, "short")
	if r := st.Resources["r"]; len(r.Sensitive) != 1 || r.Sensitive[0] != "zone" {
		t.Fatalf("recorded sensitive %v", r.Sensitive)
	}
	if !st.Outputs["z"].Sensitive {
		t.Fatalf("output z derived from the pin is not sensitive: %+v", st.Outputs["z"])
	}
}
