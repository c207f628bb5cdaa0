package spec

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// StackNamePattern is what a stack's name must match, once resolved.
const StackNamePattern = stackNamePattern

// ValidStackName reports whether name matches StackNamePattern.
func ValidStackName(name string) bool { return stackNameRE.MatchString(name) }

// stack reads the stack: field: a plain name, checked here, or a string
// that uses variables or locals ("app-${var.env}"), kept in StackExpr
// (Stack stays empty until package resolve gives the name). It returns the
// references of such a string, checked by checkStack once the variables
// and locals are known.
func (p *parser) stack(s *Spec, v *yaml.Node) *tmplCtx {
	name, ok := p.str(v, "", "stack")
	if !ok {
		return nil
	}
	s.StackPos = posOf(v)
	if strings.Contains(name, "${") {
		tc := &tmplCtx{where: "the stack name"}
		p.tc = tc
		val, ok := p.template(v)
		p.tc = nil
		if !ok {
			return nil
		}
		t, isTmpl := val.(*Template)
		if isTmpl {
			s.StackExpr = t
			return tc
		}
		name, _ = val.(string) // only $${ escapes
	}
	s.Stack = name
	if !stackNameRE.MatchString(name) {
		p.addf(v, "invalid stack name %s: must match %s", quote(name), stackNamePattern)
	}
	return nil
}

// checkStack checks what the stack name uses: declared variables and
// locals only (it is resolved before anything else, from the variables'
// values), and nothing sensitive (the name is written in clear in folder
// names, the state and every output).
func (p *parser) checkStack(s *Spec, tc *tmplCtx) {
	if tc == nil {
		return
	}
	why := "the stack name is resolved before anything else: before the state is opened and any provider starts"
	for _, ref := range tc.refs {
		switch ref.Kind {
		case RefVar:
			v, ok := s.Variable(ref.Name)
			if !ok {
				names := s.variableNames()
				p.add(ref.Pos, "unknown variable %s in %s (declared under variables: %s)", quote(ref.Name), ref, nameList(names))
				continue
			}
			if v.Sensitive {
				p.add(ref.Pos, "the stack name cannot use the sensitive variable %s (%s): a stack's name is written in clear in folder names, the state and every output", quote(ref.Name), ref)
			}
		case RefLocal:
			if _, ok := s.local(ref.Name); !ok {
				names := s.localNames()
				p.add(ref.Pos, "unknown local %s in %s (declared under locals: %s)", quote(ref.Name), ref, nameList(names))
				continue
			}
			if sv := s.localVars(ref.Name, true); len(sv) > 0 {
				p.add(ref.Pos, "the stack name cannot use local %s: it uses the sensitive variable %s, and a stack's name is written in clear in folder names, the state and every output", quote(ref.Name), quote(sv[0]))
			}
		default:
			p.add(ref.Pos, "the stack name can use only variables and locals, not %s: %s", ref, why)
		}
	}
}

// StackVars returns the names of the variables the stack name uses,
// directly or through locals, sorted: the values needed to know which
// stack a command is about. It is nil when the name is plain.
func (s *Spec) StackVars() []string {
	if s.StackExpr == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, ref := range s.StackExpr.Refs() {
		var names []string
		switch ref.Kind {
		case RefVar:
			names = []string{ref.Name}
		case RefLocal:
			names = s.localVars(ref.Name, false)
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// StackLocals returns the locals the stack name uses, directly or through
// other locals, in the order they are declared.
func (s *Spec) StackLocals() []*Local {
	if s.StackExpr == nil {
		return nil
	}
	return s.LocalsFor(s.StackExpr.Refs())
}

// variableNames are the declared variables' names, sorted, for a message
// that lists them.
func (s *Spec) variableNames() []string {
	names := make([]string, 0, len(s.Variables))
	for _, v := range s.Variables {
		names = append(names, v.Name)
	}
	slices.Sort(names)
	return names
}

// localNames are the declared locals' names, sorted, for a message that
// lists them.
func (s *Spec) localNames() []string {
	names := make([]string, 0, len(s.Locals))
	for _, l := range s.Locals {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	return names
}

func (s *Spec) local(name string) (*Local, bool) {
	for _, l := range s.Locals {
		if l.Name == name {
			return l, true
		}
	}
	return nil, false
}

// localVars returns the variables local name uses, directly or through
// other locals (only the sensitive ones when sensitiveOnly), in the order
// met. A cycle (reported by checkLocals) is walked once.
func (s *Spec) localVars(name string, sensitiveOnly bool) []string {
	seen := map[string]bool{}
	var out []string
	var visit func(name string)
	visit = func(name string) {
		l, ok := s.local(name)
		if !ok || seen["local."+name] {
			return
		}
		seen["local."+name] = true
		walkValueRefs(l.Value, func(r *Ref) {
			switch r.Kind {
			case RefLocal:
				visit(r.Name)
			case RefVar:
				v, ok := s.Variable(r.Name)
				if !ok || seen[r.Name] || (sensitiveOnly && !v.Sensitive) {
					return
				}
				seen[r.Name] = true
				out = append(out, r.Name)
			}
		})
	}
	visit(name)
	return out
}

// walkValueRefs calls fn for every reference in a parsed value.
func walkValueRefs(v any, fn func(*Ref)) {
	switch v := v.(type) {
	case *Template:
		for _, r := range v.Refs() {
			fn(r)
		}
	case map[string]any:
		for _, el := range v {
			walkValueRefs(el, fn)
		}
	case []any:
		for _, el := range v {
			walkValueRefs(el, fn)
		}
	}
}
