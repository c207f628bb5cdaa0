package spec

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

const (
	// varNamePattern is what a variable's name must match: no dash, so
	// that BULWARK_VAR_<NAME> is an environment variable a shell can set.
	varNamePattern = `[A-Za-z][A-Za-z0-9_]{0,62}`
	// outputNamePattern is what an output's name must match.
	outputNamePattern = `[A-Za-z][A-Za-z0-9_-]{0,62}`
)

var (
	varNameRE    = lazy(`^` + varNamePattern + `$`)
	outputNameRE = lazy(`^` + outputNamePattern + `$`)

	variableFields = []string{"type", "default", "description", "sensitive"}
	outputFields   = []string{"value", "description", "sensitive"}
)

// tmplCtx collects the references of the strings read while it is the
// parser's tc.
type tmplCtx struct {
	where string // what the strings are, for messages: "config", "for_each"
	// noRefs makes a reference an error (a variable's default).
	noRefs bool
	refs   []*Ref
	out    *Output // the output whose value this is, if any
	local  *Local  // the local whose value this is, if any
}

// template reads the string scalar n, which holds "${", as a *Template, or
// as a plain string when it holds only $${ escapes.
func (p *parser) template(n *yaml.Node) (any, bool) {
	parts, items := splitTemplate(n.Value)
	loc := p.locator(n)
	ok := true
	for _, it := range items {
		pos := loc.at(n.Value[it.off:it.end])
		switch {
		case it.msg != "":
			if it.inExpr && it.msgOff > 0 {
				body := n.Value[it.off+2 : it.end-1]
				pos = exprPos(pos, body, it.msgOff)
			}
			p.add(pos, "%s", it.msg)
			ok = false
		case it.expr != nil:
			placeExpr(it.expr, pos)
			if p.tc.noRefs {
				p.add(pos, "%s cannot hold expressions (%s); write $${ for a literal ${", p.tc.where, it.expr)
				ok = false
				continue
			}
			p.tc.refs = append(p.tc.refs, it.expr.Refs...)
		default:
			it.ref.Pos = pos
			if p.tc.noRefs {
				p.add(pos, "%s cannot hold references (%s); write $${ for a literal ${", p.tc.where, it.ref)
				ok = false
				continue
			}
			p.tc.refs = append(p.tc.refs, it.ref)
		}
	}
	if !ok {
		return nil, false
	}
	return NewTemplate(p.file, posOf(n), parts), true
}

// locator finds the successive ${...} of one scalar in the spec's source,
// to position each reference at its own "${" rather than at the scalar.
type locator struct {
	p           *parser
	from, limit int // the byte window still to search
	node        Pos
	lost        bool // a search failed: the rest are at the node
}

func (p *parser) locator(n *yaml.Node) *locator {
	l := &locator{p: p, node: posOf(n)}
	off, ok := p.offsetOf(n.Line, n.Column)
	if !ok {
		l.lost = true
		return l
	}
	// The source of a scalar is longer than its value by its quotes,
	// escapes and, in a block scalar, indentation; past a few times its
	// length the search gives up, so that it stays linear.
	l.from, l.limit = off, min(len(p.src), off+4*len(n.Value)+256)
	return l
}

// at returns the position of needle, the next ${...} of the scalar.
func (l *locator) at(needle string) Pos {
	if len(needle) > maxQuoted {
		needle = needle[:maxQuoted]
	}
	for !l.lost {
		i := bytes.Index(l.p.src[l.from:l.limit], []byte(needle))
		if i < 0 {
			l.lost = true
			break
		}
		at := l.from + i
		l.from = at + 1
		if at > 0 && l.p.src[at-1] == '$' {
			continue // the ${ of a $${ escape, not a reference
		}
		l.from = at + len(needle)
		return l.p.posOfOffset(at)
	}
	return l.node
}

// lineIndex builds p.lines once.
func (p *parser) lineIndex() {
	if p.lines != nil {
		return
	}
	p.lines = []int{0}
	for i, b := range p.src {
		if b == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
}

// lineHas reports whether line (1-based) of the source holds sub.
func (p *parser) lineHas(line int, sub string) bool {
	p.lineIndex()
	if line < 1 || line > len(p.lines) {
		return false
	}
	end := len(p.src)
	if line < len(p.lines) {
		end = p.lines[line]
	}
	return bytes.Contains(p.src[p.lines[line-1]:end], []byte(sub))
}

// offsetOf returns the byte offset of line:col (1-based, col counted in
// characters, as yaml.v3 counts).
func (p *parser) offsetOf(line, col int) (int, bool) {
	p.lineIndex()
	if line < 1 || line > len(p.lines) || col < 1 {
		return 0, false
	}
	off, c := p.lines[line-1], 1
	if pc := p.cache; pc.line == line && pc.col <= col {
		off, c = pc.off, pc.col
	}
	for c < col && off < len(p.src) && p.src[off] != '\n' {
		_, size := utf8.DecodeRune(p.src[off:])
		off += size
		c++
	}
	if c != col {
		return 0, false
	}
	p.cache = posCache{off: off, line: line, col: col}
	return off, true
}

// posOfOffset returns the line:col of byte offset off.
func (p *parser) posOfOffset(off int) Pos {
	p.lineIndex()
	line := sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off })
	start, col := p.lines[line-1], 1
	if pc := p.cache; pc.line == line && pc.off <= off {
		start, col = pc.off, pc.col
	}
	col += utf8.RuneCount(p.src[start:off])
	p.cache = posCache{off: off, line: line, col: col}
	return Pos{Line: line, Col: col}
}

// posCache is the last position converted, so that converting the
// positions of one long line in order costs the line's length once, not
// once per position.
type posCache struct{ off, line, col int }

// forEach reads a resource's for_each (or its count, when count): one
// reference to a variable or a local, an expression over them, or a
// literal list or mapping (a whole number for count).
func (p *parser) forEach(rn *resourceNodes, v *yaml.Node, count bool) {
	if isNull(v) {
		return
	}
	field := "for_each"
	if count {
		field = "count"
	}
	if rn.r.ForEach != nil {
		p.addf(v, "%scount and for_each cannot both be set: count makes NAME[0], NAME[1], ...; for_each one instance per key", rn.prefix)
		return
	}
	fe := &ForEach{Pos: posOf(v), Count: count}
	rn.each = &tmplCtx{where: field}
	p.tc = rn.each
	val, ok := p.value(v)
	p.tc = nil
	if !ok {
		return
	}
	switch val := val.(type) {
	case float64:
		if !count {
			p.addf(v, "%sfor_each must be a list or a mapping (or ${var.NAME} holding one), not %s", rn.prefix, describe(v))
			return
		}
		fe.Value = val
	case []any, map[string]any:
		if count {
			p.addf(v, "%scount must be a whole number (or an expression giving one), not %s", rn.prefix, describe(v))
			return
		}
		fe.Value = val
	case *Template:
		if val.Whole() != nil {
			fe.Value = val // an expression, evaluated with the variables
			break
		}
		fe.Ref = val.Single()
		if fe.Ref == nil {
			p.addf(v, "%s%s must be one reference to a variable (%s: ${var.NAME}) or a list or mapping, not a string", rn.prefix, field, field)
			return
		}
	default:
		if count {
			p.addf(v, "%scount must be a whole number (or an expression giving one), not %s", rn.prefix, describe(v))
			return
		}
		p.addf(v, "%sfor_each must be a list or a mapping (or ${var.NAME} holding one), not %s", rn.prefix, describe(v))
		return
	}
	rn.r.ForEach = fe
}

// variables walks the variables: mapping.
func (p *parser) variables(s *Spec, m *yaml.Node) {
	if isNull(m) {
		return
	}
	if m.Kind != yaml.MappingNode {
		p.addf(m, "variables must be a mapping of names to declarations ({type: string, default: ...}), not %s", describe(m))
		return
	}
	p.names(m, "variable", varNameRE, varNamePattern, func(name string, k, v *yaml.Node) {
		vr := &Variable{Name: name, Pos: posOf(k), FieldPos: map[string]Pos{}}
		s.Variables = append(s.Variables, vr)
		if isNull(v) {
			vr.Type = VarString
			return
		}
		if v.Kind != yaml.MappingNode {
			p.addf(v, "variable %s must be a mapping (with %s) or empty, not %s", quote(name), strings.Join(variableFields, ", "), describe(v))
			return
		}
		prefix := fmt.Sprintf("variable %s: ", quote(name))
		var typeNode, defNode *yaml.Node
		p.fields(v, "in variable "+quote(name), variableFields, func(key string, k, v *yaml.Node) {
			vr.FieldPos[key] = posOf(v)
			switch key {
			case "type":
				if t, ok := p.str(v, prefix, "type"); ok {
					switch vt := VarType(t); vt {
					case VarString, VarNumber, VarBool, VarList, VarMap:
						vr.Type, typeNode = vt, v
					default:
						p.addf(v, "%sunknown type %s (want string, number, bool, list or map)", prefix, quote(t))
					}
				}
			case "default":
				p.tc = &tmplCtx{where: prefix + "a default", noRefs: true}
				val, ok := p.value(v)
				p.tc = nil
				if ok {
					vr.Default, vr.HasDefault, defNode = val, true, v
				}
			case "description":
				if d, ok := p.str(v, prefix, "description"); ok {
					vr.Description = d
				}
			case "sensitive":
				vr.Sensitive = p.boolean(v, prefix, "sensitive")
			}
		})
		switch {
		case vr.Type != "" && defNode != nil:
			if msg := TypeMismatch(vr.Type, vr.Default); msg != "" {
				p.addf(defNode, "%sthe default %s", prefix, msg)
			}
		case vr.Type == "" && defNode != nil:
			vr.Type = typeOf(vr.Default)
		case vr.Type == "" && typeNode == nil:
			vr.Type = VarString
		}
	})
}

// typeOf returns the variable type of a JSON-like value (string for null).
func typeOf(v any) VarType {
	switch v.(type) {
	case float64:
		return VarNumber
	case bool:
		return VarBool
	case []any:
		return VarList
	case map[string]any:
		return VarMap
	}
	return VarString
}

// TypeMismatch returns "" when v is a value of type t (null is a value of
// every type), else a message part: "must be a number, not a string".
func TypeMismatch(t VarType, v any) string {
	if v == nil {
		return ""
	}
	if got := typeOf(v); got != t {
		return fmt.Sprintf("must be a %s, not a %s", t, got)
	}
	return ""
}

// outputs walks the outputs: mapping; it returns the references of each
// output's value.
func (p *parser) outputs(s *Spec, m *yaml.Node) []*tmplCtx {
	if isNull(m) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.addf(m, "outputs must be a mapping of names to outputs ({value: ...}), not %s", describe(m))
		return nil
	}
	var out []*tmplCtx
	p.names(m, "output", outputNameRE, outputNamePattern, func(name string, k, v *yaml.Node) {
		o := &Output{Name: name, Pos: posOf(k), FieldPos: map[string]Pos{}}
		s.Outputs = append(s.Outputs, o)
		if v.Kind != yaml.MappingNode {
			p.addf(v, "output %s must be a mapping with a value (%s), not %s", quote(name), strings.Join(outputFields, ", "), describe(v))
			return
		}
		prefix := fmt.Sprintf("output %s: ", quote(name))
		tc := &tmplCtx{where: "an output's value", out: o}
		out = append(out, tc)
		hasValue := false
		p.fields(v, "in output "+quote(name), outputFields, func(key string, k, v *yaml.Node) {
			o.FieldPos[key] = posOf(v)
			switch key {
			case "value":
				hasValue = true
				p.tc = tc
				o.Value, _ = p.value(v)
				p.tc = nil
			case "description":
				if d, ok := p.str(v, prefix, "description"); ok {
					o.Description = d
				}
			case "sensitive":
				o.Sensitive = p.boolean(v, prefix, "sensitive")
			}
		})
		if !hasValue {
			p.addf(v, "%smissing required field \"value\"", prefix)
		}
	})
	return out
}

// locals walks the locals: mapping; it returns the references of each
// local's value.
func (p *parser) locals(s *Spec, m *yaml.Node) []*tmplCtx {
	if isNull(m) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.addf(m, "locals must be a mapping of names to values, not %s", describe(m))
		return nil
	}
	var out []*tmplCtx
	p.names(m, "local", varNameRE, varNamePattern, func(name string, k, v *yaml.Node) {
		l := &Local{Name: name, Pos: posOf(k)}
		s.Locals = append(s.Locals, l)
		tc := &tmplCtx{where: "a local's value", local: l}
		out = append(out, tc)
		p.tc = tc
		l.Value, _ = p.value(v)
		p.tc = nil
	})
	return out
}

// checkLocals checks the references locals make (variables and other
// locals only: they are evaluated before any provider starts) and reports
// a cycle among them.
func (p *parser) checkLocals(s *Spec, locals []*tmplCtx) {
	var nodes []string
	deps := map[string][]string{}
	pos := map[string]Pos{}
	vars := map[string]bool{}
	var varNames, localNames []string
	for _, v := range s.Variables {
		vars[v.Name] = true
		varNames = append(varNames, v.Name)
	}
	for _, l := range s.Locals {
		pos[l.Name] = l.Pos
		localNames = append(localNames, l.Name)
	}
	slices.Sort(varNames)
	slices.Sort(localNames)
	for _, tc := range locals {
		l := tc.local
		nodes = append(nodes, l.Name)
		for _, ref := range tc.refs {
			switch ref.Kind {
			case RefVar:
				if !vars[ref.Name] {
					p.add(ref.Pos, "unknown variable %s in %s (declared under variables: %s)", quote(ref.Name), ref, nameList(varNames))
				}
			case RefLocal:
				if _, ok := pos[ref.Name]; !ok {
					p.add(ref.Pos, "unknown local %s in %s (declared under locals: %s)", quote(ref.Name), ref, nameList(localNames))
					continue
				}
				if ref.Name == l.Name {
					p.add(ref.Pos, "local %s references itself in %s", quote(l.Name), ref)
					continue
				}
				if !slices.Contains(deps[l.Name], ref.Name) {
					deps[l.Name] = append(deps[l.Name], ref.Name)
				}
			default:
				p.add(ref.Pos, "local %s: a local can use only variables and other locals, not %s (locals are evaluated before any provider starts)", quote(l.Name), ref)
			}
		}
	}
	for _, c := range findCycles(nodes, deps) {
		p.add(pos[c[0]], "local cycle: %s", c)
	}
}

// names walks a mapping of names (variables:, outputs:), reporting keys
// that are not strings, repeated or malformed, and calls fn for the others.
func (p *parser) names(m *yaml.Node, what string, re lazyRE, pattern string, fn func(name string, k, v *yaml.Node)) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if p.skip[k] {
			continue
		}
		if !isString(k) {
			p.addf(k, "%s names must be strings, not %s", what, describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.addf(k, "duplicate %s %s (first at line %d)", what, quote(k.Value), first.Line)
			continue
		}
		seen[k.Value] = k
		if !re.MatchString(k.Value) {
			p.addf(k, "invalid %s name %s: must match %s", what, quote(k.Value), pattern)
			continue
		}
		if p.skip[v] {
			continue
		}
		fn(k.Value, k, v)
	}
}

// boolean reads a bool field; a null is false.
func (p *parser) boolean(v *yaml.Node, prefix, what string) bool {
	if isNull(v) {
		return false
	}
	var b bool
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
		p.addf(v, "%s%s must be a bool (true or false), not %s", prefix, what, describe(v))
		return false
	}
	return b
}

// checkRefs checks every reference against the spec: the variable is
// declared, the resource exists and is not the referring one, an instance
// key is written exactly when the resource has for_each, each is used only
// in a for_each resource's config, for_each and provider configs use only
// variables. It adds to deps the dependency each resource reference makes.
func (p *parser) checkRefs(s *Spec, first map[string]*Resource, resources []*resourceNodes, data []*dataNodes, outputs []*tmplCtx, providers *tmplCtx, deps map[string][]string) {
	vars := make(map[string]bool, len(s.Variables))
	for _, v := range s.Variables {
		vars[v.Name] = true
	}
	locals := make(map[string]bool, len(s.Locals))
	for _, l := range s.Locals {
		locals[l.Name] = true
	}
	checkLocal := func(ref *Ref) {
		if !locals[ref.Name] {
			names := s.localNames()
			p.add(ref.Pos, "unknown local %s in %s (declared under locals: %s)", quote(ref.Name), ref, nameList(names))
		}
	}
	var varNames []string // built when a message needs it
	checkVar := func(ref *Ref) {
		if vars[ref.Name] {
			return
		}
		if varNames == nil {
			varNames = make([]string, 0, len(s.Variables))
			for _, v := range s.Variables {
				varNames = append(varNames, v.Name)
			}
			slices.Sort(varNames)
		}
		p.add(ref.Pos, "unknown variable %s in %s (declared under variables: %s)", quote(ref.Name), ref, nameList(varNames))
	}
	checkMod := func(ref *Ref) {
		for _, c := range s.Modules {
			if c.Name == ref.Name {
				return // its output is checked once the module is read
			}
		}
		names := make([]string, 0, len(s.Modules))
		for _, c := range s.Modules {
			names = append(names, c.Name)
		}
		p.add(ref.Pos, "unknown module call %s in %s (called under modules: %s)", quote(ref.Name), ref, nameList(names))
	}
	// checkRes checks a resource reference from self (nil in an output)
	// and reports whether it makes a dependency.
	checkRes := func(ref *Ref, self *Resource) bool {
		t := first[ref.Name]
		switch {
		case t == nil:
			p.add(ref.Pos, "unknown resource %s in %s", quote(ref.Name), ref)
			return false
		case self != nil && t == self:
			p.add(ref.Pos, "resource %s references itself in %s (a resource cannot use its own attributes)", quote(ref.Name), ref)
			return false
		case t.ForEach == nil && ref.Keyed:
			p.add(ref.Pos, "resource %s has no for_each, so it has no instance [%s]: write ${%s.%s}", quote(ref.Name), ref.Key, ref.Name, ref.Attr)
			return false
		case t.ForEach != nil && !ref.Keyed:
			p.add(ref.Pos, "resource %s has for_each: name one instance, as ${%s[KEY].%s}", quote(ref.Name), ref.Name, ref.Attr)
			return false
		case ref.Key == EachKey && (self == nil || self.ForEach == nil || self.ForEach.Count):
			p.add(ref.Pos, "%s uses [each.key] outside a resource with for_each", ref)
			return false
		case ref.Key == CountIndex && (self == nil || self.ForEach == nil || !self.ForEach.Count):
			p.add(ref.Pos, "%s uses [count.index] outside a resource with count", ref)
			return false
		}
		return true
	}
	for _, rn := range resources {
		r := rn.r
		isFirst := rn.named && first[r.Name] == r
		have := map[string]bool{}
		for _, d := range r.DependsOn {
			have[d] = true
		}
		for _, ref := range rn.refs.refs {
			switch ref.Kind {
			case RefVar:
				checkVar(ref)
			case RefLocal:
				checkLocal(ref)
			case RefModule:
				checkMod(ref)
			case RefResource:
				if checkRes(ref, r) && isFirst && !have[ref.Name] {
					have[ref.Name] = true
					deps[r.Name] = append(deps[r.Name], ref.Name)
				}
			case RefEachKey, RefEachValue:
				if r.ForEach == nil || r.ForEach.Count {
					p.add(ref.Pos, "%s is only allowed in the config of a resource with for_each", ref)
				}
			case RefCountIndex:
				if r.ForEach == nil || !r.ForEach.Count {
					p.add(ref.Pos, "%s is only allowed in the config of a resource with count", ref)
				}
			}
		}
		if rn.each != nil {
			for _, ref := range rn.each.refs {
				if ref.Kind == RefVar {
					checkVar(ref)
					continue
				}
				if ref.Kind == RefLocal {
					checkLocal(ref)
					continue
				}
				why := "its keys must be known before any provider starts"
				if ref.Kind == RefData {
					why += " (and so before any data is read)"
				}
				p.add(ref.Pos, "%sfor_each can use only variables and literal lists or mappings, not %s: %s", rn.prefix, ref, why)
			}
		}
	}
	for _, tc := range outputs {
		for _, ref := range tc.refs {
			switch ref.Kind {
			case RefVar:
				checkVar(ref)
			case RefLocal:
				checkLocal(ref)
			case RefResource:
				checkRes(ref, nil)
			case RefModule:
				checkMod(ref)
			case RefData, RefStack:
				// checkDataRefs; another stack's outputs are read at plan time
			default:
				p.add(ref.Pos, "output %s: %s is only allowed in the config of a resource with for_each", quote(tc.out.Name), ref)
			}
		}
	}
	if providers != nil {
		for _, ref := range providers.refs {
			if ref.Kind == RefVar {
				checkVar(ref)
				continue
			}
			if ref.Kind == RefLocal {
				checkLocal(ref)
				continue
			}
			if ref.Kind == RefData {
				p.add(ref.Pos, "a provider's config can use only variables, not %s (providers start before any data is read: the data is read through them)", ref)
				continue
			}
			if ref.Kind == RefStack {
				p.add(ref.Pos, "a provider's config can use only variables, not %s (providers start before another stack's outputs are read)", ref)
				continue
			}
			p.add(ref.Pos, "a provider's config can use only variables, not %s (providers start before any resource exists)", ref)
		}
	}
	for _, dn := range data {
		for _, ref := range dn.refs.refs {
			switch ref.Kind {
			case RefVar:
				checkVar(ref)
			case RefLocal:
				checkLocal(ref)
			case RefModule:
				p.add(ref.Pos, "%s: a data entry cannot use a module's output (it is read before anything is applied)", ref)
			}
		}
	}
}
