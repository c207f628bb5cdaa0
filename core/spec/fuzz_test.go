package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// FuzzParse checks that Parse never panics and returns either a Spec that
// keeps Parse's guarantees or a non-empty, sorted Problems. The seeds are
// every spec under testdata/bad and testdata/good.
func FuzzParse(f *testing.F) {
	seeds := 0
	for _, pattern := range []string{"testdata/bad/*.yaml", "testdata/good/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			seeds++
		}
	}
	if seeds == 0 {
		f.Fatal("no seeds")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err == nil {
			if s == nil {
				t.Fatal("Parse returned neither a spec nor an error")
			}
			checkInvariants(t, s)
			return
		}
		if s != nil {
			t.Fatal("Parse returned a spec with its error")
		}
		var ps Problems
		if !errors.As(err, &ps) || len(ps) == 0 {
			t.Fatalf("Parse error is %T %v, want non-empty Problems", err, err)
		}
		for i, p := range ps {
			if p.File != "fuzz.yaml" || p.Msg == "" {
				t.Errorf("bad problem %+v", p)
			}
			if i > 0 {
				a, b := ps[i-1].Pos, p.Pos
				if a.Line > b.Line || a.Line == b.Line && a.Col > b.Col {
					t.Errorf("problems not sorted: %v before %v", a, b)
				}
			}
		}
	})
}

// FuzzTemplate checks that a string is either a template whose String
// parses back to it, or errors every one positioned inside the string.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"", "plain", "${var.a}", "x-${net.id}-y", "$${lit}", "$$${var.a}", "${web[a].arn}", "${web[each.key].id}", "${", "${}", "${each.key}${each.value}", "a$b$", "${var.a", "${ var.a }", "${f(x)}", "${data.a.b}", "x${data.a.b.c}", "${data.x}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, items := splitTemplate(s)
		for _, it := range items {
			if it.off < 0 || it.end > len(s) || it.off >= it.end || !strings.HasPrefix(s[it.off:], "${") {
				t.Fatalf("item %+v out of %q", it, s)
			}
			if (it.ref == nil && it.expr == nil) == (it.msg == "") {
				t.Fatalf("item %+v is neither a reference, an expression nor an error", it)
			}
		}
		if parts == nil {
			return
		}
		v := NewTemplate("f.yaml", Pos{1, 1}, parts)
		tmpl, ok := v.(*Template)
		if !ok {
			if strings.Contains(v.(string), "${") && !strings.Contains(s, "$${") {
				t.Fatalf("%q: plain result %q holds ${ with no escape", s, v)
			}
			return
		}
		back, _ := splitTemplate(tmpl.String())
		if tmpl.hasExpr() {
			// An expression's syntax tree is not comparable: compare the
			// text it parses back to.
			again, ok := NewTemplate("f.yaml", Pos{1, 1}, back).(*Template)
			if !ok || again.String() != tmpl.String() {
				t.Fatalf("%q: String %q parses back to %v", s, tmpl.String(), again)
			}
			return
		}
		if !cmp.Equal(back, tmpl.Parts) {
			t.Fatalf("%q: String %q parses to %#v, not %#v", s, tmpl.String(), back, tmpl.Parts)
		}
	})
}

// genSpec draws a valid spec (dependencies only on earlier resources, so
// acyclic) and returns its YAML text and the resources Parse must return.
func genSpec(t *rapid.T) (string, []*Resource) {
	name := rapid.StringMatching(`[a-z][a-z0-9_-]{0,8}`)
	names := rapid.SliceOfNDistinct(name, 0, 12, rapid.ID[string]).Draw(t, "names")
	var b strings.Builder
	b.WriteString("version: 1\nstack: gen\nproviders:\n  mock: {}\n  other: {source: local}\ndefault_provider: mock\nresources:\n")
	var want []*Resource
	for i, n := range names {
		r := &Resource{
			Name: n, Type: rapid.StringMatching(`[a-z_]{1,10}`).Draw(t, "type"),
			Provider: "mock", Protection: protection.Ephemeral, OnFailure: PolicyCompensate,
			Config: map[string]any{},
		}
		fmt.Fprintf(&b, "  - name: %s\n    type: %s\n", r.Name, r.Type)
		if rapid.Bool().Draw(t, "explicit") {
			r.Provider, r.ExplicitProvider = rapid.SampledFrom([]string{"mock", "other"}).Draw(t, "provider"), true
			fmt.Fprintf(&b, "    provider: %s\n", r.Provider)
		}
		if lvl := rapid.SampledFrom([]string{"", "ephemeral", "durable", "protected"}).Draw(t, "protection"); lvl != "" {
			r.Protection, _ = protection.Parse(lvl)
			fmt.Fprintf(&b, "    protection: %s\n", lvl)
		}
		if i > 0 {
			deps := rapid.SliceOfDistinct(rapid.SampledFrom(names[:i]), rapid.ID[string]).Draw(t, "deps")
			if len(deps) > 0 {
				r.DependsOn = deps
				fmt.Fprintf(&b, "    depends_on: [%s]\n", strings.Join(deps, ", "))
			}
		}
		if pol := rapid.SampledFrom([]FailurePolicy{"", PolicyCompensate, PolicyContinue, PolicyAbort}).Draw(t, "policy"); pol != "" {
			r.OnFailure = pol
			fmt.Fprintf(&b, "    on_failure: %s\n", pol)
		}
		if rapid.Bool().Draw(t, "intervention") {
			r.Intervention = true
			b.WriteString("    intervention: true\n")
		}
		keys := rapid.SliceOfDistinct(rapid.StringMatching(`[a-z]{1,6}`), rapid.ID[string]).Draw(t, "keys")
		if len(keys) > 0 {
			b.WriteString("    config:\n")
		}
		for _, k := range keys {
			n := rapid.IntRange(-1000, 1000).Draw(t, "n")
			r.Config[k] = float64(n)
			fmt.Fprintf(&b, "      %s: %d\n", k, n)
		}
		want = append(want, r)
	}
	if len(names) == 0 {
		b.WriteString("  []\n")
	}
	return b.String(), want
}

// TestParseGenerated checks that generated valid specs parse to what was
// written.
func TestParseGenerated(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text, want := genSpec(t)
		s, err := Parse("gen.yaml", []byte(text))
		if err != nil {
			t.Fatalf("Parse:\n%s\n%v", text, err)
		}
		ignore := cmpopts.IgnoreFields(Resource{}, "Pos", "FieldPos")
		if diff := cmp.Diff(want, s.Resources, ignore, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("resources mismatch (-want +got):\n%s\n%s", diff, text)
		}
		if _, ok := s.Graph().TopoOrder(); !ok {
			t.Fatalf("generated graph has a cycle")
		}
	})
}
