package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseHostile parses data as problemLines does. It sets no time limit of
// its own: a test that asserts a duration fails on a loaded machine, not on
// a slow parser. A parser that hangs or blows up exponentially is caught by
// go test's -timeout; that Parse stays linear is measured by the benchmarks
// (BenchmarkParsePlain10k, BenchmarkValidate10k).
func parseHostile(t *testing.T, data []byte) []string {
	t.Helper()
	s, err := Parse("", data)
	return linesOf(t, s, err)
}

// TestAliasBomb parses the classic nine-level "billion laughs" document,
// both alone and hidden in a resource's config: aliases are refused, never
// expanded, so Parse returns at once.
func TestAliasBomb(t *testing.T) {
	bomb := string(readFile(t, "testdata/bad/alias_bomb.yaml"))
	lines := parseHostile(t, []byte(bomb))
	// 9 anchors, 8 lines of 9 aliases.
	var anchors, aliases int
	for _, l := range lines {
		switch {
		case strings.Contains(l, "YAML anchors are not allowed in a spec"):
			anchors++
		case strings.Contains(l, "YAML aliases are not allowed in a spec"):
			aliases++
		}
	}
	if anchors != 9 || aliases != 72 {
		t.Errorf("got %d anchor and %d alias problems, want 9 and 72:\n%s", anchors, aliases, strings.Join(lines, "\n"))
	}
	if want := "3:8: YAML aliases are not allowed in a spec (*a)"; !contains(lines, want) {
		t.Errorf("missing %q", want)
	}

	// The same bomb as a resource's config.
	var b strings.Builder
	b.WriteString("version: 1\nstack: s\nproviders: {mock: {}}\nresources:\n  - name: r\n    type: t\n    config:\n")
	for _, l := range strings.Split(strings.TrimSpace(bomb), "\n")[1:] {
		b.WriteString("      " + l + "\n")
	}
	lines = parseHostile(t, []byte(b.String()))
	if len(lines) != 9+72 {
		t.Errorf("got %d problems, want 81:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if want := "8:10: YAML anchors are not allowed in a spec (&a)"; lines[0] != want {
		t.Errorf("first problem %q, want %q", lines[0], want)
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// deepConfig returns a spec whose resource config holds n nested values
// (flow lists, flow mappings or block lists) around a number.
func deepConfig(n int, style string) string {
	head := "version: 1\nstack: s\nproviders: {mock: {}}\nresources:\n  - name: r\n    type: t\n    config:\n      x: "
	switch style {
	case "list":
		return head + strings.Repeat("[", n) + "1" + strings.Repeat("]", n) + "\n"
	case "map":
		return head + strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) + "\n"
	default: // block lists, one more level of indentation each
		var b strings.Builder
		b.WriteString(head + "\n")
		for i := range n {
			b.WriteString(strings.Repeat(" ", 8+2*i) + "-\n")
		}
		return b.String()
	}
}

// TestDeepNesting checks that deeply nested input is refused with a
// problem, neither overflowing the stack nor accepted. The top mapping is
// at depth 1, so the config value x is at depth 5 and up to 59 levels may
// nest inside it.
func TestDeepNesting(t *testing.T) {
	for _, style := range []string{"list", "map"} {
		t.Run(style, func(t *testing.T) {
			s := mustParse(t, "ok.yaml", []byte(deepConfig(59, style)))
			v := s.Resources[0].Config["x"]
			for i := 0; i < 59; i++ {
				switch w := v.(type) {
				case []any:
					v = w[0]
				case map[string]any:
					v = w["a"]
				default:
					t.Fatalf("level %d is %T", i, v)
				}
			}
			if v != 1.0 {
				t.Errorf("innermost value %v", v)
			}
			col := map[string]int{"list": 70, "map": 247}[style]
			want := []string{fmt.Sprintf("8:%d: value is nested more than 64 levels deep", col)}
			if diff := cmp.Diff(want, problemLines(t, []byte(deepConfig(60, style)))); diff != "" {
				t.Errorf("60 levels (-want +got):\n%s", diff)
			}
			lines := parseHostile(t, []byte(deepConfig(10000, style)))
			if len(lines) != 1 || !strings.Contains(lines[0], "value is nested more than 64 levels deep") {
				t.Errorf("10000 levels: %v", lines)
			}
		})
	}
	t.Run("block", func(t *testing.T) {
		lines := parseHostile(t, []byte(deepConfig(1000, "block")))
		if want := []string{"69:129: value is nested more than 64 levels deep"}; !cmp.Equal(lines, want) {
			t.Errorf("got %v, want %v", lines, want)
		}
	})
	t.Run("past yaml's own limit", func(t *testing.T) {
		lines := parseHostile(t, []byte(deepConfig(200000, "list")))
		if want := []string{"8: invalid YAML: exceeded max depth of 10000"}; !cmp.Equal(lines, want) {
			t.Errorf("got %v, want %v", lines, want)
		}
	})
}

// TestMessagesBounded checks that a message quotes at most 64 bytes of a
// value from the spec and lists at most 10 names, so that problems stay
// proportional to the spec however it repeats a long value.
func TestMessagesBounded(t *testing.T) {
	long := strings.Repeat("é", 40) // 80 bytes
	var b strings.Builder
	b.WriteString("version: 1\nstack: s\nproviders:\n")
	for i := range 12 {
		fmt.Fprintf(&b, "  p%02d: {}\n", i)
	}
	b.WriteString("resources:\n  - name: " + long + "\n    type: t\n    provider: nope\n    protection: " + long + "\n    depends_on: [x, x]\n")
	got := problemLines(t, []byte(b.String()))
	quoted := `"` + strings.Repeat("é", 32) + `"...`
	want := []string{
		"17:11: invalid resource name " + quoted + ": must match [a-z][a-z0-9_-]{0,62}",
		"19:15: resource " + quoted + ": provider \"nope\" is not declared (declared: p00, p01, p02, p03, p04, p05, p06, p07, p08, p09 and 2 more)",
		"20:17: unknown protection level " + quoted + " (want ephemeral, durable or protected)",
		"21:18: resource " + quoted + " depends on unknown resource \"x\"",
		"21:21: resource " + quoted + ": duplicate dependency \"x\" in depends_on",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestManyReferencesOneLine parses a 1 MiB spec written on one line, in
// flow style, whose one config holds tens of thousands of references, half
// of them malformed: each is positioned at its own column (the search for
// it resumes where the last one was found, so this is linear, not
// quadratic in the line's length), and the problems stay bounded.
func TestManyReferencesOneLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{version: 1, stack: s, providers: {mock: {}}, variables: {v: {}}, resources: [{name: a, type: t, config: {`)
	n := 0
	for b.Len() < maxSize-200 {
		fmt.Fprintf(&b, `k%d: "${var.v}-${f(x)}", `, n)
		n++
	}
	b.WriteString(`last: 1}}]}`)
	text := b.String()
	lines := parseHostile(t, []byte(text))
	if len(lines) != n {
		t.Fatalf("%d problems, want %d", len(lines), n)
	}
	// The problems are sorted; the last is at the last ${f(x)}.
	col := strings.LastIndex(text, "${f(x)}") + 1
	if want := fmt.Sprintf("1:%d: invalid reference", col); !strings.HasPrefix(lines[len(lines)-1], want) {
		t.Errorf("last problem %q, want it at %s", lines[len(lines)-1], want)
	}
}
