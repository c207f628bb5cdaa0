package spec

import (
	"errors"
	"strings"
	"testing"
)

const movedHead = `version: 1
stack: s
providers: {mock: {}}
resources:
  - {name: net, type: network}
  - {name: web, type: compute, for_each: [a, b]}
`

func TestParseMoved(t *testing.T) {
	s := mustParse(t, "stack.yaml", []byte(movedHead+`moved:
  - {from: network, to: net}
  - {from: old_web, to: web}
  - {from: solo, to: "web[a]"}
  - {from: web, to: "web[b]"}
removed:
  - {from: cache, destroy: false}
  - {from: scratch, destroy: true}
`))
	var got []string
	for _, m := range s.Moved {
		got = append(got, m.From.String()+">"+m.To.String())
	}
	if want := "network>net old_web>web solo>web[a] web>web[b]"; strings.Join(got, " ") != want {
		t.Errorf("moved = %v, want %s", got, want)
	}
	if len(s.Removed) != 2 || s.Removed[0].From != "cache" || s.Removed[0].Destroy || s.Removed[1].From != "scratch" || !s.Removed[1].Destroy {
		t.Errorf("removed = %+v %+v", s.Removed[0], s.Removed[1])
	}
	if p := s.Moved[0].FieldPos["to"]; p != (Pos{8, 25}) {
		t.Errorf("moved[0].to at %v", p)
	}
}

func TestParseMovedProblems(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // each a substring of one problem, in order
	}{
		{"still declared", `moved: [{from: net, to: web}]`, []string{`7:16: moved entry #1: "net" is still declared under resources: (line 5)`}},
		{"to undeclared", `moved: [{from: old, to: gone}]`, []string{`7:25: moved entry #1: "gone" is not declared under resources:`}},
		{"to instance of plain", `moved: [{from: old, to: "net[a]"}]`, []string{`moved entry #1: "net" has no for_each, so it has no instance "net[a]"`}},
		{"same", `moved: [{from: net, to: net}]`, []string{`7:25: moved entry #1: from and to are the same address ("net")`}},
		{"twice", "moved:\n  - {from: old, to: net}\n  - {from: old, to: \"web[a]\"}", []string{`9:12: moved entry #2: "old" is moved twice (first at line 8)`}},
		{"into one", "moved:\n  - {from: a, to: net}\n  - {from: b, to: net}", []string{`9:19: moved entry #2: two entries move into "net" (first at line 8)`}},
		{"bad address", `moved: [{from: "Web", to: net}]`, []string{`7:16: moved entry #1: from: invalid address "Web"`}},
		{"missing to", `moved: [{from: old}]`, []string{`7:9: moved entry #1: missing required field "to"`}},
		{"unknown field", `moved: [{from: old, to: net, why: x}]`, []string{`unknown field "why" in moved entry #1 (allowed: from, to)`}},
		{"not a list", `moved: {from: old, to: net}`, []string{`moved must be a list of moved entries ({from, to}), not a mapping`}},
		{"removed needs destroy", `removed: [{from: old}]`, []string{`7:11: removed entry #1: missing required field "destroy": false keeps`}},
		{"removed destroy not bool", `removed: [{from: old, destroy: "no"}]`, []string{`removed entry #1: destroy must be true or false, not a string`}},
		{"removed instance", `removed: [{from: "web[a]", destroy: false}]`, []string{`removed entry #1: from must name a resource, not one instance ("web[a]")`}},
		{"removed declared", `removed: [{from: net, destroy: false}]`, []string{`removed entry #1: "net" is still declared under resources: (line 5)`}},
		{"removed and moved", "moved: [{from: old, to: net}]\nremoved: [{from: old, destroy: false}]", []string{`removed entry #1: "old" is also in the moved entry at line 7`}},
		{"removed twice", "removed:\n  - {from: old, destroy: false}\n  - {from: old, destroy: true}", []string{`removed entry #2: "old" is removed twice (first at line 8)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("stack.yaml", []byte(movedHead+tt.text+"\n"))
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("err = %v, want problems", err)
			}
			if len(ps) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(ps), len(tt.want), ps)
			}
			for i, w := range tt.want {
				if !strings.Contains(ps[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, ps[i].Error(), w)
				}
			}
		})
	}
}

func TestParseMovedCycle(t *testing.T) {
	// A cycle through names the spec does not declare is reported as one.
	_, err := Parse("stack.yaml", []byte(movedHead+"moved:\n  - {from: net, to: \"web[a]\"}\n  - {from: \"web[a]\", to: net}\n"))
	if err == nil || !strings.Contains(err.Error(), "moved entries form a cycle: net -> web[a] -> net") {
		t.Fatalf("err = %v", err)
	}
}
