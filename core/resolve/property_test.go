package resolve

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// genValue draws a config value: scalars, lists, maps and templates made
// of literals and references to resources r0..r3's attributes.
func genValue(t *rapid.T, depth int) any {
	kinds := []string{"string", "number", "bool", "null", "template"}
	if depth < 3 {
		kinds = append(kinds, "list", "map")
	}
	switch rapid.SampledFrom(kinds).Draw(t, "kind") {
	case "string":
		return rapid.StringMatching(`[a-z$ {}]{0,6}`).Draw(t, "s")
	case "number":
		return float64(rapid.IntRange(-5, 5).Draw(t, "n"))
	case "bool":
		return rapid.Bool().Draw(t, "b")
	case "null":
		return nil
	case "list":
		n := rapid.IntRange(0, 3).Draw(t, "len")
		out := make([]any, n)
		for i := range out {
			out[i] = genValue(t, depth+1)
		}
		return out
	case "map":
		out := map[string]any{}
		for _, k := range rapid.SliceOfDistinct(rapid.StringMatching(`[a-z]{1,3}`), rapid.ID[string]).Draw(t, "keys") {
			out[k] = genValue(t, depth+1)
		}
		return out
	}
	var parts []spec.Part
	for i, n := 0, rapid.IntRange(1, 4).Draw(t, "parts"); i < n; i++ {
		if rapid.Bool().Draw(t, "lit") {
			parts = append(parts, spec.Part{Lit: rapid.StringMatching(`[a-z-]{1,4}`).Draw(t, "lit")})
			continue
		}
		parts = append(parts, spec.Part{Ref: &spec.Ref{Kind: spec.RefResource,
			Name: fmt.Sprintf("r%d", rapid.IntRange(0, 3).Draw(t, "res")),
			Attr: rapid.SampledFrom([]string{"id", "n", "l", "m", "z", "s"}).Draw(t, "attr"),
			Pos:  spec.Pos{Line: rapid.IntRange(1, 9).Draw(t, "line"), Col: 1}}})
	}
	return spec.NewTemplate("p.yaml", spec.Pos{Line: 1, Col: 1}, parts)
}

// TestConfigDeterministic: resolving the same config against the same
// recorded attributes always gives the same result, unknown paths and
// error; what is unknown is exactly what references an unknown resource;
// and resolving again once everything is known gives what resolving all
// at once does.
func TestConfigDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := map[string]any{}
		for _, k := range rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z]{1,4}`), 0, 6, rapid.ID[string]).Draw(t, "top") {
			cfg[k] = genValue(t, 0)
		}
		attrs := map[string]any{"id": "i-1", "n": 2.5, "l": []any{"x"}, "m": map[string]any{"k": "v"}, "z": nil, "s": "str"}
		known := map[string]bool{}
		for i := 0; i < 4; i++ {
			known[fmt.Sprintf("r%d", i)] = rapid.Bool().Draw(t, "known")
		}
		partial := func(addr, attr string) (any, bool) {
			if !known[addr] {
				return nil, false
			}
			v, ok := attrs[attr]
			return v, ok
		}
		all := func(addr, attr string) (any, bool) { v, ok := attrs[attr]; return v, ok }

		got1, unknown1, err1 := Config(cfg, partial)
		for i := 0; i < 3; i++ {
			got2, unknown2, err2 := Config(cfg, partial)
			if fmt.Sprint(err1) != fmt.Sprint(err2) || !cmp.Equal(unknown1, unknown2) || !cmp.Equal(Display(got1), Display(got2)) {
				t.Fatalf("not deterministic:\n%v %v %v\n%v %v %v", got1, unknown1, err1, got2, unknown2, err2)
			}
		}
		if err1 != nil {
			return
		}
		if Known(got1) != (len(unknown1) == 0) {
			t.Fatalf("Known %v but unknown %v", Known(got1), unknown1)
		}
		for _, a := range Refs(got1) {
			if known[a] {
				t.Fatalf("%s is known but still referenced in %v", a, got1)
			}
		}
		once, u1, e1 := Config(cfg, all)
		twice, u2, e2 := Config(got1, all)
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("resolving in two steps fails differently: %v, %v", e1, e2)
		}
		if e1 == nil && (len(u1)+len(u2) > 0 || !cmp.Equal(once, twice)) {
			t.Fatalf("resolving in two steps differs:\n%v (%v %v)\n%v (%v %v)", once, u1, e1, twice, u2, e2)
		}
	})
}
