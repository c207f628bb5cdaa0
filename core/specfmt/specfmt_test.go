package specfmt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bulwark-iac/bulwark/core/spec"
)

const head = "version: 1\nstack: demo\nproviders:\n  mock: {}\n"

func TestFormat(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "top-level sections in canonical order, each with its comments, the header on top",
			in:   "# header\nresources: []   # empty\n# who\nstack: demo\n# the providers\nproviders: {mock: {}}\nversion: 1\n",
			want: "# header\n\nversion: 1\n# who\nstack: demo\n# the providers\nproviders: {mock: {}}\nresources: [] # empty\n",
		},
		{
			name: "resource fields in canonical order",
			in:   head + "resources:\n  - config: {a: 1}\n    on_failure: abort\n    type: network\n    # the name\n    name: net\n    protection: durable\n",
			want: head + "resources:\n  - # the name\n    name: net\n    type: network\n    protection: durable\n    config: {a: 1}\n    on_failure: abort\n",
		},
		{
			name: "variable and output fields ordered, user names kept in their order",
			in:   "version: 1\nstack: demo\nvariables:\n  zz: {description: d, type: string, default: x}\n  aa: {sensitive: true, type: string}\nproviders:\n  mock: {}\nresources: []\noutputs:\n  z: {sensitive: true, value: \"${var.aa}\"}\n  a: {description: d, value: \"${var.zz}\"}\n",
			want: "version: 1\nstack: demo\nvariables:\n  zz: {type: string, default: x, description: d}\n  aa: {type: string, sensitive: true}\nproviders:\n  mock: {}\nresources: []\noutputs:\n  z: {value: \"${var.aa}\", sensitive: true}\n  a: {value: \"${var.zz}\", description: d}\n",
		},
		{
			name: "config keys keep their order",
			in:   head + "resources:\n  - name: n\n    type: network\n    config:\n      zeta: 1\n      alpha: 2\n",
			want: head + "resources:\n  - name: n\n    type: network\n    config:\n      zeta: 1\n      alpha: 2\n",
		},
		{
			name: "quotes dropped only where the string reads the same",
			in:   head + "resources:\n  - name: 'web'\n    type: \"network\"\n    config:\n      a: \"true\"\n      b: '12'\n      c: \"null\"\n      d: 'x: y'\n      e: \"plain words\"\n      f: ''\n      g: \"1.5e3\"\n      h: '~'\n      i: \"a #b\"\n      j: 'yes'\n      k: \"off\"\n      l: '1:30'\n      m: \"y\"\n",
			want: head + "resources:\n  - name: web\n    type: network\n    config:\n      a: \"true\"\n      b: \"12\"\n      c: \"null\"\n      d: 'x: y'\n      e: plain words\n      f: \"\"\n      g: \"1.5e3\"\n      h: \"~\"\n      i: 'a #b'\n      j: 'yes'\n      k: \"off\"\n      l: '1:30'\n      m: \"y\"\n",
		},
		{
			name: "a string holding ${ keeps its quoting",
			in:   head + "variables:\n  v: {type: string, default: x}\nresources:\n  - name: n\n    type: network\n    config:\n      a: \"${var.v}\"\n      b: ${var.v}\n      c: 'pre-${var.v}'\n      d: \"$${not}\"\n",
			want: "version: 1\nstack: demo\nvariables:\n  v: {type: string, default: x}\nproviders:\n  mock: {}\nresources:\n  - name: n\n    type: network\n    config:\n      a: \"${var.v}\"\n      b: ${var.v}\n      c: 'pre-${var.v}'\n      d: \"$${not}\"\n",
		},
		{
			name: "numbers, booleans and nulls as written",
			in:   head + "resources:\n  - name: n\n    type: network\n    config: {a: 0x10, b: True, c: ~, d: 1e3}\n",
			want: head + "resources:\n  - name: n\n    type: network\n    config: {a: 0x10, b: True, c: ~, d: 1e3}\n",
		},
		{
			name: "a flow collection too wide for one line becomes block",
			in:   head + "resources:\n  - name: n\n    type: network\n    config: {first: aaaaaaaaaaaaaaaaaaaa, second: bbbbbbbbbbbbbbbbbbbb, third: cccccccccccccccccccc}\n",
			want: head + "resources:\n  - name: n\n    type: network\n    config:\n      first: aaaaaaaaaaaaaaaaaaaa\n      second: bbbbbbbbbbbbbbbbbbbb\n      third: cccccccccccccccccccc\n",
		},
		{
			name: "a flow collection with a comment inside becomes block",
			in:   head + "resources:\n  - name: n\n    type: network\n    depends_on: [\n      m, # first\n    ]\n  - name: m\n    type: network\n",
			want: head + "resources:\n  - name: n\n    type: network\n    depends_on:\n      - m # first\n  - name: m\n    type: network\n",
		},
		{
			name: "block collections stay block, empty ones are flow",
			in:   head + "resources:\n  - name: n\n    type: network\n    depends_on:\n      - m\n    config: {}\n  - name: m\n    type: network\n    config:\n",
			want: head + "resources:\n  - name: n\n    type: network\n    depends_on:\n      - m\n    config: {}\n  - name: m\n    type: network\n    config:\n",
		},
		{
			name: "indentation two spaces, trailing spaces dropped, one final newline",
			in:   "version: 1    \nstack: demo\nproviders:\n    mock:    {}\nresources:\n-   name: n\n    type:     network\n\n\n\n",
			want: head + "resources:\n  - name: n\n    type: network\n",
		},
		{
			name: "blank lines: several become one, none above a collection's first entry",
			in:   "version: 1\nstack: demo\n\n\nproviders:\n  mock: {}\nresources:\n\n  - name: a\n    type: network\n\n\n  # b next\n  - name: b\n    type: network\n",
			want: "version: 1\nstack: demo\n\nproviders:\n  mock: {}\nresources:\n  - name: a\n    type: network\n\n  # b next\n  - name: b\n    type: network\n",
		},
		{
			name: "multi-line and literal strings keep their style",
			in:   head + "resources:\n  - name: n\n    type: network\n    config:\n      a: \"two\\nlines\"\n      b: |\n        one\n        two\n",
			want: head + "resources:\n  - name: n\n    type: network\n    config:\n      a: \"two\\nlines\"\n      b: |\n        one\n        two\n",
		},
		{
			name: "data, moved-like unknown sections and outputs in order",
			in:   "outputs: {}\ndata:\n  - config: {}\n    name: d\n    type: network\nresources: []\nproviders: {mock: {}}\nstack: demo\nversion: 1\n",
			want: "version: 1\nstack: demo\nproviders: {mock: {}}\ndata:\n  - name: d\n    type: network\n    config: {}\nresources: []\noutputs: {}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkFormat(t, "stack.yaml", []byte(tt.in))
			if got == nil {
				return
			}
			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestFormatRefuses: a file that does not parse is refused with its
// problems, FILE:LINE:COL, and nothing is returned.
func TestFormatRefuses(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"bad YAML", "version: 1\nstack: [demo\n", "stack.yaml:2:"},
		{"not a spec", "a: 1\n", "stack.yaml:1:1: unknown field"},
		{"unknown field in a resource", head + "resources:\n  - name: n\n    type: network\n    colour: red\n", "stack.yaml:8:5:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Format("stack.yaml", []byte(tt.in))
			if out != nil {
				t.Errorf("returned text for a spec that does not parse:\n%s", out)
			}
			var problems spec.Problems
			if !errors.As(err, &problems) {
				t.Fatalf("err = %v, want spec.Problems", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

// TestEqualSpecs: the comparison Format relies on sees a change of meaning
// and ignores a change of place.
func TestEqualSpecs(t *testing.T) {
	base := head + "resources:\n  - name: n\n    type: network\n    config: {a: \"1\", b: [x, y]}\n"
	tests := []struct {
		name, other string
		same        bool
	}{
		{"same text", base, true},
		{"moved and restyled", "# moved\n" + head + "resources:\n- type: network\n  name: n\n  config:\n    a: '1'\n    b:\n      - x\n      - y\n", true},
		{"a string becomes a number", strings.Replace(base, `"1"`, "1", 1), false},
		{"a list reordered", strings.Replace(base, "[x, y]", "[y, x]", 1), false},
		{"another protection", strings.Replace(base, "type: network\n", "type: network\n    protection: durable\n", 1), false},
		{"a reference instead of a literal", "version: 1\nstack: demo\nvariables: {v: {default: x}}\nproviders:\n  mock: {}\nresources:\n  - name: n\n    type: network\n    config: {a: \"${var.v}\", b: [x, y]}\n", false},
	}
	a, err := spec.Parse("stack.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := spec.Parse("stack.yaml", []byte(tt.other))
			if err != nil {
				t.Fatal(err)
			}
			if path, same := equalSpecs(a, b); same != tt.same {
				t.Errorf("equalSpecs = %v (at %s), want %v", same, path, tt.same)
			}
		})
	}
}

// TestFormatModuleCallMoves: formatting moves a module call's name (its
// fields are reordered); the call's resources name the call by where it is written, which is a
// place, not a meaning, so the spec formats (it was refused before).
func TestFormatModuleCallMoves(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "modules", "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	module := "resources:\n  - {name: r, type: network}\n"
	if err := os.WriteFile(filepath.Join(dir, "modules", "m", spec.ModuleFile), []byte(module), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "stack.yaml")
	src := head + "modules: [{name: a, source: ./modules/m}, {source: ./modules/m, name: b}]\nresources: []\n"
	out, err := Format(file, []byte(src))
	if err != nil {
		t.Fatalf("Format: %v", err)
	}
	want := head + "modules: [{name: a, source: ./modules/m}, {name: b, source: ./modules/m}]\nresources: []\n"
	if string(out) != want {
		t.Errorf("Format =\n%s\nwant\n%s", out, want)
	}
	// A change of meaning inside the call is still seen.
	a, _ := spec.Parse(file, []byte(src))
	b, err := spec.Parse(file, []byte(strings.Replace(src, "{name: a, source: ./modules/m}", "{name: a, source: ./modules/m, protection: durable}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if path, same := equalSpecs(a, b); same {
		t.Errorf("equalSpecs ignores a call's protection (at %s)", path)
	}
}

// TestReorder: known keys first in their order, unknown ones after in the
// order they were written (a field a newer spec knows and this order not).
func TestReorder(t *testing.T) {
	tests := []struct {
		in    string
		order []string
		want  string
	}{
		{"{c: 1, x: 2, a: 3, y: 4, b: 5}", []string{"a", "b", "c"}, "a b c x y"},
		{"{y: 1, x: 2}", []string{"a"}, "y x"},
		{"{b: 1, a: 2}", nil, "b a"},
		{"{}", []string{"a"}, ""},
	}
	for _, tt := range tests {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tt.in), &n); err != nil {
			t.Fatal(err)
		}
		m := n.Content[0]
		reorder(m, tt.order)
		var keys []string
		for i := 0; i < len(m.Content); i += 2 {
			keys = append(keys, m.Content[i].Value)
		}
		if got := strings.Join(keys, " "); got != tt.want {
			t.Errorf("reorder(%s, %v) = %q, want %q", tt.in, tt.order, got, tt.want)
		}
	}
}

// A saved plan stays applicable after an edit that keeps what the spec
// means (a comment, layout, quoting) and goes stale after one that changes
// it (issue 23 item 7).
func TestSameMeaning(t *testing.T) {
	const base = "version: 1\nstack: s\nproviders:\n  mock: {}\nresources:\n  - name: a\n    type: generic\n    config: {size: 2}\n"
	for _, tt := range []struct {
		name, text string
		same       bool
	}{
		{"identical", base, true},
		{"comment", "# reviewed\n" + base + "# end\n", true},
		{"layout", "version: 1\nstack: \"s\"\nproviders:\n  mock: {}\nresources:\n- name: a\n  type: generic\n  config:\n    size: 2  # two\n", true},
		{"value", strings.Replace(base, "size: 2", "size: 3", 1), false},
		{"value as string", strings.Replace(base, "size: 2", "size: \"2\"", 1), false},
		{"stack name", strings.Replace(base, "stack: s", "stack: t", 1), false},
		{"added key", strings.Replace(base, "    config: {size: 2}\n", "    config: {size: 2}\n    protection: durable\n", 1), false},
		{"does not parse", base + "  - {\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameMeaning("s.yaml", []byte(base), []byte(tt.text)); got != tt.same {
				t.Fatalf("SameMeaning = %v, want %v", got, tt.same)
			}
		})
	}
}

// TestFormatModule: a module.yaml is formatted as a module's fragment (no
// version, stack or providers; any provider named), comments kept; a
// broken one is refused at its FILE:LINE:COL.
func TestFormatModule(t *testing.T) {
	in := "outputs:\n    id: {value: \"${vpc.id}\"}   # the id\nresources:\n    - {type: network, name: vpc, provider: aws}\n"
	want := "resources:\n  - {name: vpc, type: network, provider: aws}\noutputs:\n  id: {value: \"${vpc.id}\"} # the id\n"
	got, err := Format("m/module.yaml", []byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("Format = %q, %v; want %q", got, err, want)
	}
	_, err = Format("m/module.yaml", []byte("resources:\n  - {name: x, typ: t}\n"))
	if err == nil || !strings.Contains(err.Error(), `m/module.yaml:2:15: unknown field "typ"`) {
		t.Errorf("broken module: %v", err)
	}
	// The same text as a stack's spec is not one (no version, stack...).
	if _, err := Format("stack.yaml", []byte(in)); err == nil {
		t.Error("a fragment formatted as a stack's spec")
	}
}
