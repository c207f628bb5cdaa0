package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
)

// bigSpec is n resources: a chain of n/4 networks, each referencing the
// one before, and n/16 for_each resources of 4 instances referencing them.
func bigSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nstack: big\nvariables:\n  zones: {type: list, default: [a, b, c, d]}\n  env: {default: dev}\nproviders: {mock: {}}\nresources:\n")
	chain := n / 4
	for i := 0; i < chain; i++ {
		fmt.Fprintf(&b, "  - name: r%d\n    type: network\n    config:\n      zone: \"z-${var.env}\"\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "      tags: {up: \"${r%d.id}\", arn: \"${r%d.arn}\"}\n", i-1, i-1)
		}
	}
	for i := 0; i < (n-chain)/4; i++ {
		fmt.Fprintf(&b, "  - name: w%d\n    type: compute\n    for_each: ${var.zones}\n    config:\n      zone: ${each.key}\n      tags: {n: \"${r%d.id}\"}\n", i, i%chain)
	}
	return []byte(b.String())
}

func benchSchema() map[string]*providers.GetSchemaResponse {
	attrs := []providers.Attribute{{Name: "zone", Type: providers.TypeString}, {Name: "tags", Type: providers.TypeMap}, {Name: "arn", Type: providers.TypeString, Computed: true}}
	return map[string]*providers.GetSchemaResponse{"mock": {ResourceTypes: []providers.ResourceType{{Name: "network", Attributes: attrs}, {Name: "compute", Attributes: attrs}}}}
}

// BenchmarkValidate10k is what validate does before it calls a provider,
// for 10,000 resources with references and for_each: parse, variables,
// expand, schema and reference checks.
func BenchmarkValidate10k(b *testing.B) {
	text := bigSpec(10000)
	schemas := benchSchema()
	for b.Loop() {
		s, err := spec.Parse("big.yaml", text)
		if err != nil {
			b.Fatal(err)
		}
		vals, _, err := Values(s, Inputs{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := Expand(s, vals)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Resources) != 10000 {
			b.Fatalf("%d resources", len(c.Resources))
		}
		if err := c.CheckSchemas(schemas); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParsePlain10k is the baseline: a spec of 10,000 resources with
// no variables, references or for_each, parsed and schema-checked.
func BenchmarkParsePlain10k(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("version: 1\nstack: big\nproviders: {mock: {}}\nresources:\n")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&sb, "  - name: r%d\n    type: network\n    config:\n      zone: \"z-dev\"\n      tags: {up: \"x\", arn: \"y\"}\n", i)
	}
	text := []byte(sb.String())
	schemas := benchSchema()
	for b.Loop() {
		s, err := spec.Parse("big.yaml", text)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CheckSchemas(schemas); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate10kExpressions is BenchmarkValidate10k with every
// interpolation written as an expression (a function call and a
// conditional), to show what HCL parsing and cty evaluation cost over the
// plain references.
func BenchmarkValidate10kExpressions(b *testing.B) {
	text := []byte(strings.NewReplacer(
		`"z-${var.env}"`, `'z-${upper(var.env)}'`,
		`"${r`, `'${var.env == "dev" ? r`,
		`.id}"`, `.id : ""}'`,
		`.arn}"`, `.arn : ""}'`,
	).Replace(string(bigSpec(10000))))
	schemas := benchSchema()
	for b.Loop() {
		s, err := spec.Parse("big.yaml", text)
		if err != nil {
			b.Fatal(err)
		}
		vals, _, err := Values(s, Inputs{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := Expand(s, vals)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.CheckSchemas(schemas); err != nil {
			b.Fatal(err)
		}
	}
}

// moduleShape is the speed shape: n instances of a module of m
// resources (each referencing the one before and a variable), called with
// count, and the same n*m resources written flat; validate of the first
// should stay within 1.5x of the second.
func moduleShape(b *testing.B, n, m int) (module, flat []byte, dir string) {
	var mod strings.Builder
	mod.WriteString("variables:\n  env: {default: dev}\nresources:\n")
	for i := range m {
		fmt.Fprintf(&mod, "  - name: r%d\n    type: network\n    config:\n      zone: \"z-${var.env}\"\n", i)
		if i > 0 {
			fmt.Fprintf(&mod, "      tags: {up: \"${r%d.id}\"}\n", i-1)
		}
	}
	var fl strings.Builder
	fl.WriteString("version: 1\nstack: big\nvariables:\n  env: {default: dev}\nproviders: {mock: {}}\nresources:\n")
	for k := range n {
		for i := range m {
			fmt.Fprintf(&fl, "  - name: m%d-r%d\n    type: network\n    config:\n      zone: \"z-${var.env}\"\n", k, i)
			if i > 0 {
				fmt.Fprintf(&fl, "      tags: {up: \"${m%d-r%d.id}\"}\n", k, i-1)
			}
		}
	}
	dir = b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "m"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", spec.ModuleFile), []byte(mod.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	module = fmt.Appendf(nil, "version: 1\nstack: big\nvariables:\n  env: {default: dev}\nproviders: {mock: {}}\nmodules:\n  - {name: m, source: ./m, count: %d, inputs: {env: \"${var.env}\"}}\nresources: []\n", n)
	return module, []byte(fl.String()), dir
}

func validateBench(b *testing.B, file string, text []byte, want int) {
	schemas := benchSchema()
	for b.Loop() {
		s, err := spec.Parse(file, text)
		if err != nil {
			b.Fatal(err)
		}
		vals, _, err := Values(s, Inputs{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := Expand(s, vals)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Resources) != want {
			b.Fatalf("%d resources", len(c.Resources))
		}
		if err := c.CheckSchemas(schemas); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateModule100x100 validates 100 instances (count: 100) of a
// 100-resource module.
func BenchmarkValidateModule100x100(b *testing.B) {
	module, _, dir := moduleShape(b, 100, 100)
	validateBench(b, filepath.Join(dir, "stack.yaml"), module, 10000)
}

// BenchmarkValidateFlat100x100 is its baseline: the same 10,000 resources
// written flat.
func BenchmarkValidateFlat100x100(b *testing.B) {
	_, flat, dir := moduleShape(b, 100, 100)
	validateBench(b, filepath.Join(dir, "flat.yaml"), flat, 10000)
}
