package spec

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	movedFields   = []string{"from", "to"}
	removedFields = []string{"from", "destroy"}
)

// Moved is one entry under moved: a resource renamed in the spec, which the
// state's record follows instead of the old object being deleted and a new
// one created (the declarative `bulwark state mv`, as Terraform's moved
// block). From and To are addresses: a resource ("net"), or an instance
// ("web[a]"), so a resource that gains or loses for_each keeps its object.
// A resource-to-resource move (neither keyed) moves every instance the
// state records under From's name too: old[a] becomes new[a].
//
// The entry stays in the spec as history: once the state records To, it has
// nothing left to do. What must hold (From no longer declared, To declared,
// never both recorded) is checked here as far as the spec alone tells, and
// by the planner against the expanded spec and the state.
type Moved struct {
	From, To Address
	Pos      Pos            // position of the entry's mapping
	FieldPos map[string]Pos // position of "from" and "to"
}

// Removed is one entry under removed: a resource that left the spec. With
// Destroy false its record is dropped and the object is kept, whatever its
// protection (the declarative `bulwark state forget`, as Terraform 1.7's
// removed block with destroy = false); with Destroy true the entry only
// documents the deletion an absent resource gets anyway, under the ladder.
// destroy: must be written: leaving a resource's fate to a default is the
// one thing this entry exists to avoid.
type Removed struct {
	From     string // a resource name: every instance of it goes
	Destroy  bool
	Pos      Pos
	FieldPos map[string]Pos
}

// movedEntries walks the list under moved:.
func (p *parser) movedEntries(s *Spec, v *yaml.Node) {
	p.list(v, "moved", "{from, to}", func(m *yaml.Node, index int) {
		mv := &Moved{Pos: posOf(m), FieldPos: map[string]Pos{}}
		var haveFrom, haveTo bool
		p.fields(m, "in moved entry #"+strconv.Itoa(index), movedFields, func(key string, _, v *yaml.Node) {
			mv.FieldPos[key] = posOf(v)
			a, ok := p.address(v, "moved entry #"+strconv.Itoa(index)+": ", key)
			switch key {
			case "from":
				mv.From, haveFrom = a, ok
			case "to":
				mv.To, haveTo = a, ok
			}
		})
		for _, f := range movedFields {
			if _, ok := mv.FieldPos[f]; !ok {
				p.addf(m, "moved entry #%d: missing required field %s", index, quote(f))
			}
		}
		if haveFrom && haveTo {
			s.Moved = append(s.Moved, mv)
		}
	})
}

// removedEntries walks the list under removed:.
func (p *parser) removedEntries(s *Spec, v *yaml.Node) {
	p.list(v, "removed", "{from, destroy}", func(m *yaml.Node, index int) {
		rm := &Removed{Pos: posOf(m), FieldPos: map[string]Pos{}}
		ok := true
		p.fields(m, "in removed entry #"+strconv.Itoa(index), removedFields, func(key string, _, v *yaml.Node) {
			rm.FieldPos[key] = posOf(v)
			switch key {
			case "from":
				a, aok := p.address(v, "removed entry #"+strconv.Itoa(index)+": ", key)
				switch {
				case !aok:
					ok = false
				case a.Keyed:
					ok = false
					p.addf(v, "removed entry #%d: from must name a resource, not one instance (%s): an instance leaves the spec by leaving its for_each", index, quote(a.String()))
				default:
					rm.From = a.Name
				}
			case "destroy":
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
					ok = false
					p.addf(v, "removed entry #%d: destroy must be true or false, not %s", index, describe(v))
					return
				}
				rm.Destroy = v.Value == "true"
			}
		})
		if _, has := rm.FieldPos["from"]; !has {
			ok = false
			p.addf(m, "removed entry #%d: missing required field \"from\"", index)
		}
		if _, has := rm.FieldPos["destroy"]; !has {
			ok = false
			p.addf(m, "removed entry #%d: missing required field \"destroy\": false keeps the resource and stops managing it, true deletes it under its protection level", index)
		}
		if ok {
			s.Removed = append(s.Removed, rm)
		}
	})
}

// list calls fn for each mapping of the sequence v under the top-level
// section (data, moved, removed), with its 1-based index, reporting what is
// not one; shape describes an entry for messages ("{from, to}").
func (p *parser) list(v *yaml.Node, section, shape string, fn func(m *yaml.Node, index int)) {
	switch {
	case isNull(v):
	case v.Kind == yaml.SequenceNode:
		for i, item := range v.Content {
			if p.skip[item] {
				continue
			}
			if item.Kind != yaml.MappingNode {
				p.addf(item, "%s entry #%d must be a mapping, not %s", section, i+1, describe(item))
				continue
			}
			fn(item, i+1)
		}
	default:
		p.addf(v, "%s must be a list of %s entries (%s), not %s", section, section, shape, describe(v))
	}
}

// address reads the string v as a resource address.
func (p *parser) address(v *yaml.Node, prefix, field string) (Address, bool) {
	str, ok := p.str(v, prefix, field)
	if !ok {
		return Address{}, false
	}
	a, err := ParseAddress(str)
	if err != nil {
		p.addf(v, "%s%s: %v", prefix, field, err)
		return Address{}, false
	}
	return a, true
}

// checkMoved checks the moved: and removed: entries against each other and
// against the resources the spec declares (first maps a name to its first
// declaration), as far as the spec alone tells; instance keys are known only
// once for_each is expanded, and the planner checks the rest.
func (p *parser) checkMoved(s *Spec, first map[string]*Resource) {
	fromSeen := map[string]*Moved{}
	toSeen := map[string]*Moved{}
	for i, mv := range s.Moved {
		label := "moved entry #" + strconv.Itoa(i+1)
		from, to := mv.From.String(), mv.To.String()
		if from == to {
			p.add(mv.FieldPos["to"], "%s: from and to are the same address (%s)", label, quote(from))
			continue
		}
		if f := fromSeen[from]; f != nil {
			p.add(mv.FieldPos["from"], "%s: %s is moved twice (first at line %d)", label, quote(from), f.Pos.Line)
		}
		fromSeen[from] = mv
		if f := toSeen[to]; f != nil {
			p.add(mv.FieldPos["to"], "%s: two entries move into %s (first at line %d)", label, quote(to), f.Pos.Line)
		}
		toSeen[to] = mv
		if r := first[mv.From.Name]; r != nil && !mv.From.Keyed {
			// Still declared: only a resource that gained for_each may be
			// moved from its unkeyed self into one of its instances.
			if r.ForEach == nil || !mv.To.Keyed || mv.To.Name != mv.From.Name {
				p.add(mv.FieldPos["from"], "%s: %s is still declared under resources: (line %d); a moved entry is for a resource the spec no longer has: remove one or the other", label, quote(from), r.Pos.Line)
			}
		}
		switch r := first[mv.To.Name]; {
		case r == nil && strings.Contains(mv.To.Name, "."):
			// Into a module call's resource: checked once the modules are
			// instantiated (checkMovedIntoModules).
		case r == nil:
			p.add(mv.FieldPos["to"], "%s: %s is not declared under resources:; a move keeps an object for a resource the spec declares (to delete it, remove it and this entry)", label, quote(mv.To.Name))
		case mv.To.Keyed && r.ForEach == nil:
			p.add(mv.FieldPos["to"], "%s: %s has no for_each, so it has no instance %s", label, quote(mv.To.Name), quote(to))
		case !mv.To.Keyed && r.ForEach != nil && mv.From.Keyed:
			p.add(mv.FieldPos["to"], "%s: %s has for_each: name the instance to move %s into (%s[KEY])", label, quote(mv.To.Name), quote(from), mv.To.Name)
		}
	}
	for _, c := range movedCycles(s.Moved) {
		p.add(c.Pos, "moved entries form a cycle: %s", c.text)
	}
	removed := map[string]*Removed{}
	for i, rm := range s.Removed {
		label := "removed entry #" + strconv.Itoa(i+1)
		if f := removed[rm.From]; f != nil {
			p.add(rm.FieldPos["from"], "%s: %s is removed twice (first at line %d)", label, quote(rm.From), f.Pos.Line)
			continue
		}
		removed[rm.From] = rm
		if r := first[rm.From]; r != nil {
			p.add(rm.FieldPos["from"], "%s: %s is still declared under resources: (line %d): remove it from resources:, or this entry", label, quote(rm.From), r.Pos.Line)
		}
		for _, mv := range s.Moved {
			if mv.From.Name == rm.From || mv.To.Name == rm.From {
				p.add(rm.FieldPos["from"], "%s: %s is also in the moved entry at line %d: a resource is either moved or removed", label, quote(rm.From), mv.Pos.Line)
				break
			}
		}
	}
}

type movedCycle struct {
	Pos  Pos
	text string
}

// movedCycles finds chains of moves that come back to where they started
// (a -> b, b -> a), which no state could follow.
func movedCycles(moves []*Moved) []movedCycle {
	next := map[string]*Moved{}
	for _, mv := range moves {
		if mv.From != mv.To { // reported as the same address
			next[mv.From.String()] = mv
		}
	}
	var out []movedCycle
	reported := map[string]bool{}
	for _, mv := range moves {
		start := mv.From.String()
		if reported[start] || next[start] != mv {
			continue
		}
		path := []string{start}
		seen := map[string]bool{start: true}
		cur := mv
		for cur != nil {
			to := cur.To.String()
			path = append(path, to)
			if to == start {
				for _, n := range path {
					reported[n] = true
				}
				out = append(out, movedCycle{Pos: mv.Pos, text: joinArrow(path)})
				break
			}
			if seen[to] {
				break
			}
			seen[to] = true
			cur = next[to]
		}
	}
	return out
}

func joinArrow(path []string) string { return strings.Join(path, " -> ") }

// checkMovedIntoModules checks the moved: entries whose to is a module
// call's resource (CALL.NAME), once the modules are instantiated.
func checkMovedIntoModules(s *Spec) Problems {
	var ps Problems
	for i, mv := range s.Moved {
		if !strings.Contains(mv.To.Name, ".") || pendingUnder(s, mv.To.Name) {
			continue
		}
		label := "moved entry #" + strconv.Itoa(i+1)
		add := func(format string, args ...any) {
			ps = append(ps, Problem{File: s.File, Pos: mv.FieldPos["to"], Msg: label + ": " + fmt.Sprintf(format, args...)})
		}
		switch r, _ := s.Resource(mv.To.Name); {
		case r == nil:
			add("%s is not a resource of a module call; a move keeps an object for a resource the spec declares", quote(mv.To.Name))
		case mv.To.Keyed && r.ForEach == nil:
			add("%s has no for_each, so it has no instance %s", quote(mv.To.Name), quote(mv.To.String()))
		case !mv.To.Keyed && r.ForEach != nil && mv.From.Keyed:
			add("%s has for_each: name the instance to move %s into (%s[KEY])", quote(mv.To.Name), quote(mv.From.String()), mv.To.Name)
		}
	}
	return ps
}
