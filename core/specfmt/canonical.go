package specfmt

import (
	"bytes"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Orders are the canonical orders of the keys the spec knows, by where the
// mapping is: "top" for the top level, else the section whose entries they
// are. They follow the design's spec section: inputs first (variables,
// locals), then providers, what is read (data), what is created (modules,
// resources), what changes address (moved, removed), and the outputs last.
var Orders = map[string][]string{
	"top":       {"version", "stack", "variables", "locals", "providers", "default_provider", "data", "modules", "resources", "moved", "removed", "outputs"},
	"providers": {"source", "version", "config"},
	"variables": {"type", "default", "description", "sensitive"},
	"outputs":   {"value", "description", "sensitive"},
	"resources": {"name", "type", "provider", "protection", "depends_on", "count", "for_each", "config", "on_failure", "intervention", "import"},
	"data":      {"name", "type", "provider", "depends_on", "count", "for_each", "config"},
	"modules":   {"name", "source", "version", "inputs", "count", "for_each", "protection", "depends_on"},
	"moved":     {"from", "to"},
	"removed":   {"from", "destroy"},
}

// keyed are the sections that map names chosen by the user to entries;
// the others hold a list of entries.
var keyed = map[string]bool{"providers": true, "variables": true, "outputs": true}

// canonical rewrites the document's node tree in place.
func canonical(doc *yaml.Node) {
	top := doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		top = doc.Content[0]
	}
	if top.Kind != yaml.MappingNode {
		return
	}
	first := top.Content
	reorder(top, Orders["top"])
	if len(first) > 0 && len(top.Content) > 0 && first[0] != top.Content[0] && first[0].HeadComment != "" && doc.Kind == yaml.DocumentNode {
		// The comment above the file's first key is its header: it stays at
		// the top when that key moves down.
		doc.HeadComment = strings.TrimSpace(strings.Join([]string{doc.HeadComment, first[0].HeadComment}, "\n\n"))
		first[0].HeadComment = ""
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		section, v := top.Content[i].Value, top.Content[i+1]
		order, ok := Orders[section]
		if !ok || section == "top" {
			continue
		}
		switch {
		case keyed[section] && v.Kind == yaml.MappingNode:
			for j := 1; j < len(v.Content); j += 2 {
				if e := v.Content[j]; e.Kind == yaml.MappingNode {
					reorder(e, order)
				}
			}
		case !keyed[section] && v.Kind == yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind == yaml.MappingNode {
					reorder(e, order)
				}
			}
		}
	}
	scalars(top)
	layout(top, 0, 0)
}

// reorder sorts m's pairs: the keys in order first, in that order, then the
// others as they were. Each pair keeps its comments.
func reorder(m *yaml.Node, order []string) {
	rank := func(k *yaml.Node) int {
		for i, o := range order {
			if k.Kind == yaml.ScalarNode && k.Value == o {
				return i
			}
		}
		return len(order)
	}
	n := len(m.Content) / 2
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return rank(m.Content[2*idx[a]]) < rank(m.Content[2*idx[b]]) })
	content := make([]*yaml.Node, 0, len(m.Content))
	for _, i := range idx {
		content = append(content, m.Content[2*i], m.Content[2*i+1])
	}
	m.Content = content
}

// scalars normalises the quoting of every string in n: plain where the
// encoder can write it plain and it reads back the same (the encoder quotes
// a string that would read as a bool, a number or null, or that holds
// characters plain YAML cannot). Strings holding ${ keep their quoting, as
// do multi-line, literal, folded and explicitly tagged ones.
func scalars(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!str" && n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
			!strings.Contains(n.Value, "${") && !strings.Contains(n.Value, "\n") && !yaml11Scalar(n.Value) {
			n.Style &^= yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle
		}
		return
	}
	for _, c := range n.Content {
		scalars(c)
	}
}

// yaml11Scalar reports whether s, written plain, would read as a boolean
// or a sexagesimal number to a YAML 1.1 reader (yes, off, 1:30): yaml.v3
// reads it as a string, another tool might not, so its quotes stay.
func yaml11Scalar(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return sexagesimal.MatchString(s)
}

var sexagesimal = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$`)

// layout chooses flow or block for every collection under n. n's block
// children start at column ind; prefix is the width of what precedes n on
// its line when n is written inline (its key and ": ").
func layout(n *yaml.Node, ind, prefix int) {
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return
	}
	if len(n.Content) == 0 {
		n.Style |= yaml.FlowStyle
		return
	}
	if n.Style&yaml.FlowStyle != 0 {
		if !innerComments(n) && prefix+width(n) <= MaxWidth {
			return
		}
		n.Style &^= yaml.FlowStyle
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			layout(n.Content[i+1], ind+2, ind+width(n.Content[i])+2)
		}
		return
	}
	for _, item := range n.Content {
		layout(item, ind+2, ind+2)
	}
}

// innerComments reports whether any node under n (not n itself) has a
// comment: a flow collection cannot keep one in place.
func innerComments(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.HeadComment != "" || c.LineComment != "" || c.FootComment != "" || innerComments(c) {
			return true
		}
	}
	return false
}

// width is the length of n written on one line (flow), its own comments
// left out.
func width(n *yaml.Node) int {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if c.Kind != yaml.ScalarNode {
		c.Style |= yaml.FlowStyle
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(&c); err != nil {
		return MaxWidth + 1 // cannot tell: block is always safe
	}
	_ = enc.Close()
	s := strings.TrimRight(buf.String(), "\n")
	if strings.Contains(s, "\n") {
		return MaxWidth + 1
	}
	return len(s)
}
