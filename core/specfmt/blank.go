package specfmt

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Blank lines: yaml.v3's node tree does not keep them, so fmt marks, before
// a pass, the entries (a block mapping's pairs, a block sequence's items)
// that had a blank line above them, and puts one blank line back above each
// in the text it wrote. Several blank lines become one; none is kept above a
// collection's first entry.

// markBlanks records the entries under n that have a blank line above
// them in src's lines.
func markBlanks(n *yaml.Node, lines []string, marks map[*yaml.Node]bool) {
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			markBlanks(c, lines, marks)
		}
		return
	case n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode, n.Style&yaml.FlowStyle != 0:
		return
	}
	step := 1
	if n.Kind == yaml.MappingNode {
		step = 2
	}
	for i := 0; i < len(n.Content); i += step {
		c := n.Content[i]
		if i > 0 {
			if l := startLine(c) - 1; l >= 1 && l <= len(lines) && strings.TrimSpace(lines[l-1]) == "" {
				marks[c] = true
			}
		}
	}
	for _, c := range n.Content {
		markBlanks(c, lines, marks)
	}
}

// startLine is the first line of an entry: its head comment's, else its
// own (an item mapping's first key may hold the comment).
func startLine(n *yaml.Node) int {
	l := n.Line - commentLines(n.HeadComment)
	if n.Kind == yaml.MappingNode && len(n.Content) > 0 {
		k := n.Content[0]
		l = min(l, k.Line-commentLines(k.HeadComment))
	}
	return l
}

func commentLines(c string) int {
	if c == "" {
		return 0
	}
	return strings.Count(c, "\n") + 1
}

// putBlanks inserts a blank line in out above each marked entry of doc,
// the tree out was written from, unless it is its collection's first now.
func putBlanks(doc *yaml.Node, out []byte, marks map[*yaml.Node]bool) []byte {
	if len(marks) == 0 {
		return out
	}
	var written yaml.Node
	if err := yaml.Unmarshal(out, &written); err != nil {
		return out // the meaning check refuses it anyway
	}
	at := map[int]bool{}
	var walk func(a, b *yaml.Node)
	walk = func(a, b *yaml.Node) {
		if len(a.Content) != len(b.Content) || a.Kind != b.Kind {
			return
		}
		step := 1
		if a.Kind == yaml.MappingNode {
			step = 2
		}
		for i := range a.Content {
			if i > 0 && i%step == 0 && marks[a.Content[i]] && a.Style&yaml.FlowStyle == 0 {
				at[startLine(b.Content[i])] = true
			}
			walk(a.Content[i], b.Content[i])
		}
	}
	walk(doc, &written)
	lines := strings.Split(string(out), "\n")
	res := make([]string, 0, len(lines)+len(at))
	for i, l := range lines {
		if at[i+1] && len(res) > 0 && strings.TrimSpace(res[len(res)-1]) != "" {
			res = append(res, "")
		}
		res = append(res, l)
	}
	return []byte(strings.Join(res, "\n"))
}
