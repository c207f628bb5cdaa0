package spec

import (
	"slices"

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
	e := entryFields{kind: "data", Name: &d.Name, Type: &d.Type, Provider: &d.Provider, Explicit: &d.ExplicitProvider,
		Config: &d.Config, FieldPos: d.FieldPos, refs: dn.refs}
	dn.label, dn.prefix = e.start(m, "data entry", index)
	p.fields(m, "in "+dn.label, dataFields, func(key string, k, v *yaml.Node) {
		d.FieldPos[key] = posOf(v)
		p.entryField(&e, key, v)
	})
	dn.named = e.named
	p.entryRequired(m, &e)
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
			case RefVar, RefLocal:
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
			case RefStack:
				p.add(ref.Pos, "%sconfig cannot use another stack's output (%s): not supported yet; read it in a resource's config or an output", dn.prefix, ref)
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
