package spec

import (
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// VarValue is one variable's value as a --var-file gives it.
type VarValue struct {
	// Value is JSON-normalised. Strings are never templates: a value
	// given from outside the spec is data, so "${" in it is kept as is.
	Value any
	// Text is the scalar as written ("8080" for 8080), so that a string
	// variable can take a number or bool written without quotes; empty for
	// a list or mapping.
	Text string
	Pos  Pos // position of the value
}

// LoadVarFile reads a --var-file: a YAML mapping of variable names to
// values. Like a spec it is bounded (1 MiB, no anchors or aliases, 64
// levels) and every problem is reported as FILE:LINE:COL: message.
func LoadVarFile(path string) (map[string]VarValue, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read --var-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read --var-file: %w", err)
	}
	if len(data) > maxSize {
		return nil, Problems{{File: path, Msg: fmt.Sprintf("var file is larger than %d bytes (1 MiB); refusing to read it", maxSize)}}
	}
	return ParseVarFile(path, data)
}

// ParseVarFile parses the --var-file text data; file names it in problems.
// An empty file gives no values.
func ParseVarFile(file string, data []byte) (map[string]VarValue, error) {
	p := &parser{file: file, src: data, skip: map[*yaml.Node]bool{}}
	out := map[string]VarValue{}
	top := p.decodeValues(data)
	switch {
	case top == nil:
	case isNull(top):
	case top.Kind != yaml.MappingNode:
		p.addf(top, "a var file must be a mapping of variable names to values, not %s", describe(top))
	default:
		p.names(top, "variable", varNameRE, varNamePattern, func(name string, k, v *yaml.Node) {
			val, ok := p.value(v)
			if !ok {
				return
			}
			vv := VarValue{Value: val, Pos: posOf(v)}
			if v.Kind == yaml.ScalarNode {
				vv.Text = v.Value
			}
			out[name] = vv
		})
	}
	if len(p.probs) > 0 {
		p.probs.sort()
		return nil, p.probs
	}
	return out, nil
}

// ParseValue parses text, a --var or BULWARK_VAR_ value of a list, map,
// number or bool variable, as one YAML value ("[a, b]", "{env: prod}",
// "3"); a problem is named what ("--var zones"), with no position.
func ParseValue(what, text string) (any, error) {
	p := &parser{file: what, src: []byte(text), skip: map[*yaml.Node]bool{}}
	var val any
	top := p.decodeValues(p.src)
	switch {
	case top == nil:
	case isNull(top):
	default:
		val, _ = p.value(top)
	}
	if len(p.probs) > 0 {
		// Positions in a one-line value say little; the message says
		// what is wrong.
		for i := range p.probs {
			p.probs[i].Pos = Pos{}
		}
		return nil, p.probs
	}
	return val, nil
}

// decodeValues parses data as one YAML document of values: like decode,
// but any node may be the top and an empty document is null.
func (p *parser) decodeValues(data []byte) (top *yaml.Node) {
	defer func() {
		if r := recover(); r != nil {
			p.add(Pos{}, "invalid YAML: the YAML parser failed: %v", r)
			top = nil
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.yamlError(err)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	top = doc.Content[0]
	p.scan(top, 1)
	if p.skip[top] {
		return nil
	}
	return top
}
