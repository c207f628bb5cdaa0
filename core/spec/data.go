package spec

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// dataNodes is a data entry being parsed, with what the cross-checks need.
type dataNodes struct {
	d      *Data
	named  bool     // name: is a string
	label  string   // names the entry in messages: `data "me"` or `data entry #2`
	prefix string   // label + ": "
	refs   *tmplCtx // the references in config
}

// dataEntry walks one mapping under data:; index is 1-based.
func (p *parser) dataEntry(m *yaml.Node, index int) *dataNodes {
	d := &Data{Config: map[string]any{}, Pos: posOf(m), FieldPos: map[string]Pos{}}
	dn := &dataNodes{d: d, refs: &tmplCtx{where: "a data entry's config"}}
	label := fmt.Sprintf("data entry #%d", index)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; k.Value == "name" && isString(k) && isString(v) {
			label = "data " + quote(v.Value)
			break
		}
	}
	dn.label, dn.prefix = label, label+": "
	var hasName, hasType bool
	p.fields(m, "in "+label, dataFields, func(key string, k, v *yaml.Node) {
		d.FieldPos[key] = posOf(v)
		switch key {
		case "name":
			hasName = true
			if name, ok := p.str(v, dn.prefix, "name"); ok {
				d.Name, dn.named = name, true
				if !nameRE.MatchString(name) {
					p.addf(v, "invalid data name %s: must match %s", quote(name), namePattern)
				}
			}
		case "type":
			hasType = true
			if t, ok := p.str(v, dn.prefix, "type"); ok {
				d.Type = t
				if strings.TrimSpace(t) == "" {
					p.addf(v, "%stype must not be empty", dn.prefix)
				}
			}
		case "provider":
			if isNull(v) {
				return
			}
			if name, ok := p.str(v, dn.prefix, "provider"); ok {
				d.Provider, d.ExplicitProvider = name, true
			}
		case "config":
			if isNull(v) {
				return
			}
			if v.Kind != yaml.MappingNode {
				p.addf(v, "%sconfig must be a mapping, not %s", dn.prefix, describe(v))
				return
			}
			p.tc = dn.refs
			d.Config, _ = p.mapping(v, d.FieldPos)
			p.tc = nil
		}
	})
	if !hasName {
		p.addf(m, "%s is missing required field \"name\"", label)
	}
	if !hasType {
		p.addf(m, "%s is missing required field \"type\"", label)
	}
	return dn
}

// checkDataRefs checks every ${data.NAME.ATTR}: the entry is declared; a
// data entry's config uses only variables and other data entries (never a
// resource, each, or itself, and no cycle), since data is read at plan
// time, before anything is applied. It sets each entry's DependsOn.
// (Provider configs and for_each refuse data in checkRefs: providers start,
// and instance keys are known, before anything is read.)
func (p *parser) checkDataRefs(first map[string]*Data, data []*dataNodes, resources []*resourceNodes, outputs []*tmplCtx) {
	var names []string // built when a message needs it
	check := func(ref *Ref) bool {
		if first[ref.Name] != nil {
			return true
		}
		if names == nil {
			names = make([]string, 0, len(first))
			for n := range first {
				names = append(names, n)
			}
			slices.Sort(names)
		}
		p.add(ref.Pos, "unknown data entry %s in %s (declared under data: %s)", quote(ref.Name), ref, nameList(names))
		return false
	}
	for _, rn := range resources {
		for _, ref := range rn.refs.refs {
			if ref.Kind == RefData {
				check(ref)
			}
		}
	}
	for _, tc := range outputs {
		for _, ref := range tc.refs {
			if ref.Kind == RefData {
				check(ref)
			}
		}
	}
	var nodes []string
	deps := map[string][]string{}
	for _, dn := range data {
		d := dn.d
		isFirst := dn.named && first[d.Name] == d
		if isFirst {
			nodes = append(nodes, d.Name)
		}
		for _, ref := range dn.refs.refs {
			switch ref.Kind {
			case RefVar:
				// checked by checkRefs
			case RefData:
				switch {
				case !check(ref):
				case dn.named && ref.Name == d.Name:
					p.add(ref.Pos, "%sreferences itself in %s (a data entry cannot use its own attributes)", dn.prefix, ref)
				case isFirst && !slices.Contains(d.DependsOn, ref.Name):
					d.DependsOn = append(d.DependsOn, ref.Name)
					deps[d.Name] = append(deps[d.Name], ref.Name)
				}
			case RefResource:
				p.add(ref.Pos, "%sconfig cannot reference resource %s (%s): data is read at plan time, before anything is applied", dn.prefix, quote(ref.Name), ref)
			default:
				p.add(ref.Pos, "%s%s is only allowed in the config of a resource with for_each", dn.prefix, ref)
			}
		}
	}
	for _, c := range findCycles(nodes, deps) {
		p.add(first[c[0]].Pos, "data dependency cycle: %s", c)
	}
}
