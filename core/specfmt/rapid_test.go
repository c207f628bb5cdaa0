package specfmt

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// token is a scalar and the ways it may be written: in block context and
// inside a flow collection.
type token struct{ block, flow []string }

var tokens = []token{
	{block: []string{"abc", "'abc'", `"abc"`}, flow: []string{"abc", "'abc'", `"abc"`}},
	{block: []string{"'true'", `"true"`}, flow: []string{"'true'", `"true"`}},
	{block: []string{"true", "false"}, flow: []string{"true"}},
	{block: []string{"'x: y'", `"x: y"`}, flow: []string{"'x: y'", `"x: y"`}},
	{block: []string{"'a #b'", `"a #b"`}, flow: []string{`"a #b"`}},
	{block: []string{"${var.v0}", `"${var.v0}"`, "'${var.v0}'"}, flow: []string{`"${var.v0}"`, "'${var.v0}'"}},
	{block: []string{`"pre-${var.v0}-post"`, "pre-${var.v0}-post"}, flow: []string{`"pre-${var.v0}-post"`}},
	{block: []string{"it's", `"it's"`}, flow: []string{`"it's"`, "it's"}},
	{block: []string{"''", `""`}, flow: []string{`""`}},
	{block: []string{"'12'", `"12"`}, flow: []string{"'12'"}},
	{block: []string{"12", "0"}, flow: []string{"12"}},
	{block: []string{"'1.5e3'", "1.5e3"}, flow: []string{`"1.5e3"`}},
	{block: []string{"'null'", "null", "~"}, flow: []string{"null", "'~'"}},
	{block: []string{"'-dash'", "a,b", `"a,b"`}, flow: []string{`"a,b"`, "'-dash'"}},
	{block: []string{"héllo wörld", `"tab\there"`, `"two\nlines"`}, flow: []string{`"tab\there"`, "héllo"}},
	{block: []string{"$${literal}", `"$${literal}"`}, flow: []string{`"$${literal}"`}},
}

// gen writes a random valid spec: sections, fields and config keys in
// random order, flow and block collections, every quoting, comments.
type gen struct {
	t *rapid.T
	b strings.Builder
}

func (g *gen) comment(ind string, label string) {
	if rapid.IntRange(0, 3).Draw(g.t, label) == 0 {
		fmt.Fprintf(&g.b, "%s# %s comment\n", ind, label)
	}
}

func (g *gen) lineComment(label string) string {
	if rapid.IntRange(0, 4).Draw(g.t, label) == 0 {
		return "   # " + label
	}
	return ""
}

func (g *gen) scalar(flow bool, label string) string {
	tk := rapid.SampledFrom(tokens).Draw(g.t, label)
	if flow {
		return rapid.SampledFrom(tk.flow).Draw(g.t, label+"-w")
	}
	return rapid.SampledFrom(tk.block).Draw(g.t, label+"-w")
}

// flowMap is a flow mapping.
func (g *gen) flowMap(depth int, label string) string {
	n := rapid.IntRange(0, 4).Draw(g.t, label+"-n")
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("k%d: %s", i, g.flowValue(depth+1, label+"-m"))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// flowValue is a flow scalar, mapping or list.
func (g *gen) flowValue(depth int, label string) string {
	switch k := rapid.IntRange(0, 4).Draw(g.t, label); {
	case k == 0 && depth < 2:
		n := rapid.IntRange(0, 3).Draw(g.t, label+"-n")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("k%d: %s", i, g.flowValue(depth+1, label+"-m"))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case k == 1 && depth < 2:
		n := rapid.IntRange(0, 3).Draw(g.t, label+"-n")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.flowValue(depth+1, label+"-l")
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return g.scalar(true, label+"-s")
	}
}

// blockMap writes a config-like mapping at indentation ind.
func (g *gen) blockMap(ind string, depth int, label string) {
	n := rapid.IntRange(1, 4).Draw(g.t, label+"-n")
	for i := range n {
		g.comment(ind, label+"-c")
		key := fmt.Sprintf("k%d", i)
		switch k := rapid.IntRange(0, 4).Draw(g.t, label+"-k"); {
		case k == 0 && depth < 3:
			fmt.Fprintf(&g.b, "%s%s:%s\n", ind, key, g.lineComment(label+"-lc"))
			g.blockMap(ind+"  ", depth+1, label+"-m")
		case k == 1 && depth < 3:
			fmt.Fprintf(&g.b, "%s%s:\n", ind, key)
			for j := range rapid.IntRange(1, 3).Draw(g.t, label+"-ln") {
				_ = j
				fmt.Fprintf(&g.b, "%s  - %s%s\n", ind, g.scalar(false, label+"-li"), g.lineComment(label+"-lic"))
			}
		case k == 2:
			fmt.Fprintf(&g.b, "%s%s: %s%s\n", ind, key, g.flowValue(depth, label+"-f"), g.lineComment(label+"-fc"))
		default:
			fmt.Fprintf(&g.b, "%s%s: %s%s\n", ind, key, g.scalar(false, label+"-s"), g.lineComment(label+"-sc"))
		}
	}
}

func (g *gen) spec() string {
	nres := rapid.IntRange(1, 4).Draw(g.t, "resources")
	sections := map[string]func(){
		"version": func() { fmt.Fprintf(&g.b, "version: 1%s\n", g.lineComment("version")) },
		"stack": func() {
			fmt.Fprintf(&g.b, "stack: %s\n", rapid.SampledFrom([]string{"demo", "'demo'", `"demo"`}).Draw(g.t, "stack"))
		},
		"providers": func() {
			if rapid.Bool().Draw(g.t, "providers-flow") {
				g.b.WriteString("providers: {mock: {}}\n")
				return
			}
			g.b.WriteString("providers:\n  mock:\n")
			fields := rapid.Permutation([]string{"source: mock", "config: {}"}).Draw(g.t, "provider")
			for _, f := range fields {
				fmt.Fprintf(&g.b, "    %s\n", f)
			}
		},
		"variables": func() {
			g.b.WriteString("variables:\n")
			fields := rapid.Permutation([]string{"type: string", "default: " + g.scalarString(), "description: \"the v0\"", "sensitive: false"}).Draw(g.t, "variable")
			if rapid.Bool().Draw(g.t, "variable-flow") {
				fmt.Fprintf(&g.b, "  v0: {%s}\n", strings.Join(fields, ", "))
				return
			}
			g.b.WriteString("  v0:\n")
			for _, f := range fields {
				g.comment("    ", "variable-field")
				fmt.Fprintf(&g.b, "    %s\n", f)
			}
		},
		"resources": func() {
			g.b.WriteString("resources:\n")
			for i := range nres {
				g.comment("  ", "resource")
				fields := []string{fmt.Sprintf("name: r%d", i), "type: network", "config"}
				if rapid.Bool().Draw(g.t, "protection") {
					fields = append(fields, "protection: "+rapid.SampledFrom([]string{"durable", "ephemeral", "'protected'"}).Draw(g.t, "level"))
				}
				if i > 0 && rapid.Bool().Draw(g.t, "depends") {
					fields = append(fields, fmt.Sprintf("depends_on: [r%d]", i-1))
				}
				if rapid.Bool().Draw(g.t, "on_failure") {
					fields = append(fields, "on_failure: continue")
				}
				if rapid.Bool().Draw(g.t, "unknown") {
					fields = append(fields, "intervention: false")
				}
				fields = rapid.Permutation(fields).Draw(g.t, "fields")
				for j, f := range fields {
					lead := "    "
					if j == 0 {
						lead = "  - "
					} else {
						g.comment("    ", "field")
					}
					if f != "config" {
						fmt.Fprintf(&g.b, "%s%s%s\n", lead, f, g.lineComment("field-lc"))
						continue
					}
					if rapid.Bool().Draw(g.t, "config-flow") {
						fmt.Fprintf(&g.b, "%sconfig: %s\n", lead, g.flowMap(0, "config"))
						continue
					}
					fmt.Fprintf(&g.b, "%sconfig:\n", lead)
					g.blockMap("      ", 0, "config")
					if i > 0 && rapid.Bool().Draw(g.t, "ref") {
						fmt.Fprintf(&g.b, "      ref: \"${r%d.id}\"\n", i-1)
					}
				}
				switch rapid.IntRange(0, 5).Draw(g.t, "after") {
				case 0:
					fmt.Fprintf(&g.b, "    # after r%d\n", i)
				case 1:
					g.b.WriteString("\n")
				case 2:
					fmt.Fprintf(&g.b, "\n  # before the next\n")
				}
			}
		},
		"outputs": func() {
			g.b.WriteString("outputs:\n")
			fields := rapid.Permutation([]string{`value: "${r0.id}"`, "description: the id", "sensitive: true"}).Draw(g.t, "output")
			fmt.Fprintf(&g.b, "  o0: {%s}\n", strings.Join(fields, ", "))
		},
	}
	names := []string{"version", "stack", "providers", "variables", "resources"}
	if rapid.Bool().Draw(g.t, "has-outputs") {
		names = append(names, "outputs")
	}
	for _, s := range rapid.Permutation(names).Draw(g.t, "sections") {
		g.comment("", "section")
		sections[s]()
	}
	if rapid.Bool().Draw(g.t, "foot") {
		g.b.WriteString("\n# the end\n")
	}
	return g.b.String()
}

func (g *gen) scalarString() string {
	return rapid.SampledFrom([]string{"dev", "'dev'", `"true"`, "'12'", `""`}).Draw(g.t, "default")
}

var templateRE = regexp.MustCompile(`\$\{[^}]*\}`)

// TestFormatProperties formats generated specs: Format keeps their meaning
// (it checks that itself and fails otherwise) and is idempotent.
func TestFormatProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := &gen{t: rt}
		src := g.spec()
		if _, err := spec.Parse("gen.yaml", []byte(src)); err != nil {
			rt.Fatalf("the generator wrote a spec that does not parse: %v\n%s", err, src)
		}
		out, err := Format("gen.yaml", []byte(src))
		if err != nil {
			rt.Fatalf("%v\n%s", err, src)
		}
		again, err := Format("gen.yaml", out)
		if err != nil {
			rt.Fatalf("second pass: %v\n%s", err, out)
		}
		if string(again) != string(out) {
			rt.Fatalf("not idempotent:\n--- source\n%s--- first\n%s--- second\n%s", src, out, again)
		}
		// A ${...} is never rewritten inside: each is in the output as written.
		for _, ref := range templateRE.FindAllString(src, -1) {
			if !strings.Contains(string(out), ref) {
				rt.Fatalf("%s is not in the output as written:\n%s", ref, out)
			}
		}
		for i, line := range strings.Split(string(out), "\n") {
			if strings.TrimRight(line, " \t") != line {
				rt.Fatalf("line %d has trailing space: %q", i+1, line)
			}
		}
	})
}
