package spec

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// PathAt returns the attribute path of what sits at pos in a spec's text,
// for a machine reading a problem: "resources[1].config.zone" (keys
// dotted, list items by index from 0), "" for the whole document or when
// nothing sits there; resource is the name of the resource the position is
// in ("" when none). It reads the text as YAML on its own, so it works for
// a spec Parse refused; it never fails.
//
// Where a key and the mapping it opens share a position (a block mapping
// starts at its first key), the key is taken, unless msg says a field is
// missing (then the mapping is what the problem is about).
func PathAt(text []byte, pos Pos, msg string) (path, resource string) {
	if pos.Line <= 0 || len(text) > maxSize {
		return "", ""
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(text))
	if err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		return dec.Decode(&doc)
	}(); err != nil || len(doc.Content) == 0 {
		return "", ""
	}
	preferContainer := strings.Contains(msg, "missing required field")
	w := pathWalk{pos: pos, container: preferContainer, seen: map[*yaml.Node]bool{}}
	w.walk(doc.Content[0], nil, "", 0)
	return w.path, w.resource
}

type pathWalk struct {
	pos       Pos
	container bool
	seen      map[*yaml.Node]bool // aliases can make cycles
	found     bool
	depth     int
	path      string
	resource  string
}

func (w *pathWalk) at(n *yaml.Node) bool { return n.Line == w.pos.Line && n.Column == w.pos.Col }

// hit records a match at depth d unless a better one is known: deeper wins,
// or shallower when the problem is about a container.
func (w *pathWalk) hit(parts []string, resource string, d int) {
	if w.found && (w.container && d >= w.depth || !w.container && d <= w.depth) {
		return
	}
	w.found, w.depth, w.resource = true, d, resource
	w.path = strings.Join(parts, "")
	w.path = strings.TrimPrefix(w.path, ".")
}

func (w *pathWalk) walk(n *yaml.Node, parts []string, resource string, d int) {
	if n == nil || w.seen[n] || d > maxDepth+2 {
		return
	}
	w.seen[n] = true
	if w.at(n) {
		w.hit(parts, resource, d)
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(append([]string(nil), parts...), "."+k.Value)
			if w.at(k) {
				w.hit(p, resource, d+1)
			}
			w.walk(v, p, resource, d+1)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := append(append([]string(nil), parts...), fmt.Sprintf("[%d]", i))
			r := resource
			if len(parts) == 1 && parts[0] == ".resources" && item.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(item.Content); j += 2 {
					if item.Content[j].Value == "name" && item.Content[j+1].Kind == yaml.ScalarNode {
						r = item.Content[j+1].Value
					}
				}
			}
			w.walk(item, p, r, d+1)
		}
	case yaml.AliasNode:
		w.walk(n.Alias, parts, resource, d+1)
	}
}
