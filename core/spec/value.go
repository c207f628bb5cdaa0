package spec

import (
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

// mapping converts a config mapping into a JSON-like map[string]any,
// reporting non-string and repeated keys and values that have no JSON form.
// When fieldPos is not nil it records the position of each key as
// "config.KEY". It returns false when it reported a problem.
func (p *parser) mapping(m *yaml.Node, fieldPos map[string]Pos) (map[string]any, bool) {
	out := make(map[string]any, len(m.Content)/2)
	seen := map[string]*yaml.Node{}
	ok := true
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		val, vok := p.value(v)
		ok = ok && vok
		if p.skip[k] {
			ok = false
			continue
		}
		switch {
		case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
			p.addf(k, "YAML merge keys (<<) are not allowed in a spec")
			ok = false
			continue
		case !isString(k):
			p.addf(k, "config keys must be strings, not %s", describe(k))
			ok = false
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.addf(k, "duplicate key %s in config (first at line %d)", quote(k.Value), first.Line)
			ok = false
			continue
		}
		seen[k.Value] = k
		out[k.Value] = val
		if fieldPos != nil {
			fieldPos["config."+k.Value] = posOf(k)
		}
	}
	return out, ok
}

// value converts a config value into its JSON form: float64, string, bool,
// nil, []any or map[string]any. Aliases and too-deep nodes (in p.skip) were
// reported by scan and are not descended into, which bounds the recursion.
func (p *parser) value(n *yaml.Node) (any, bool) {
	if p.skip[n] {
		return nil, false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return p.scalar(n)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		ok := true
		for _, c := range n.Content {
			v, vok := p.value(c)
			ok = ok && vok
			out = append(out, v)
		}
		return out, ok
	case yaml.MappingNode:
		return p.mapping(n, nil)
	}
	p.addf(n, "config values cannot be %s", describe(n))
	return nil, false
}

// scalar converts a scalar: numbers become float64 and must be finite,
// timestamps keep their text, other tags than YAML's JSON-like ones are
// refused.
func (p *parser) scalar(n *yaml.Node) (any, bool) {
	switch tag := n.ShortTag(); tag {
	case "!!str":
		if p.tc != nil && strings.Contains(n.Value, "${") {
			return p.template(n)
		}
		return n.Value, true
	case "!!timestamp":
		return n.Value, true
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			p.addf(n, "invalid bool %s in config", quote(n.Value))
			return nil, false
		}
		return b, true
	case "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			p.addf(n, "invalid number %s in config", quote(n.Value))
			return nil, false
		}
		var f float64
		switch v := v.(type) {
		case int:
			f = float64(v)
		case int64:
			f = float64(v)
		case uint64:
			f = float64(v)
		case float64:
			f = v
		default:
			p.addf(n, "invalid number %s in config", quote(n.Value))
			return nil, false
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			p.addf(n, "numbers in config must be finite, not %s", clip(n.Value))
			return nil, false
		}
		return f, true
	default:
		p.addf(n, "unsupported YAML tag %s in config (only strings, numbers, bools, null, lists and mappings)", clip(tag))
		return nil, false
	}
}
