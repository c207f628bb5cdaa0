package spec

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxCallInstances is how many instances one module call may have, its
// for_each or count written in the spec or computed from variables.
const MaxCallInstances = maxCallInstances

// callRepeatExpr reads a call's for_each or count written as an
// expression over variables and locals (for_each: ${var.regions}, count:
// ${var.env == "prod" ? 3 : 1}). Its instances are decided once the
// variables have values, before anything is planned: until then the call
// is Pending (instantiated once, under its name, to be checked), and
// WithCallInstances parses the spec again with them. Its references are
// checked by checkCallRepeat once every variable and local is declared.
func (p *parser) callRepeatExpr(cn *callNodes, prefix, field string, v *yaml.Node) {
	c := cn.c
	tc := &tmplCtx{where: "a module call's " + field}
	p.tc = tc
	val, ok := p.template(v)
	p.tc = nil
	if !ok {
		return
	}
	t, isTmpl := val.(*Template)
	if !isTmpl || (t.Single() == nil && t.Whole() == nil) {
		p.addf(v, "%s%s must be one expression over variables and locals (%s: ${var.NAME}), not a string", prefix, field, field)
		return
	}
	c.RepeatExpr, c.Repeated = t, true
	cn.repeat = tc
}

// bindCallKeys gives a call whose for_each or count is an expression the
// instances decided for it (WithCallInstances), or marks it Pending.
func (p *parser) bindCallKeys(c *ModuleCall) {
	if c.RepeatExpr == nil {
		return
	}
	if p.ld == nil {
		c.Pending = true
		return
	}
	if in, ok := p.ld.callKeys[p.path+c.Name]; ok {
		c.Instances = slices.Clone(in)
		return
	}
	c.Pending = true
}

// checkCallRepeat checks what the stack's calls' for_each and count
// expressions use: declared variables and locals only, nothing sensitive.
// Their value must be known before plan (Terraform's "Invalid for_each
// argument"): the instances are addresses, decided before any provider
// starts, any data is read or any other stack's outputs are.
func (p *parser) checkCallRepeat(s *Spec) {
	for _, cn := range p.calls {
		if cn.repeat == nil {
			continue
		}
		c := cn.c
		field := repeatField(c)
		prefix := "module call " + quote(c.Name) + ": "
		for _, ref := range cn.repeat.refs {
			switch ref.Kind {
			case RefVar:
				v, ok := s.Variable(ref.Name)
				if !ok {
					names := s.variableNames()
					p.add(ref.Pos, "%sunknown variable %s in %s (declared under variables: %s)", prefix, quote(ref.Name), ref, nameList(names))
					continue
				}
				if v.Sensitive {
					p.add(ref.Pos, "%s%s cannot use the sensitive variable %s (%s): its keys are part of every instance's address, printed in plan, state and every output", prefix, field, quote(ref.Name), ref)
				}
			case RefLocal:
				if _, ok := s.local(ref.Name); !ok {
					names := s.localNames()
					p.add(ref.Pos, "%sunknown local %s in %s (declared under locals: %s)", prefix, quote(ref.Name), ref, nameList(names))
					continue
				}
				if sv := s.localVars(ref.Name, true); len(sv) > 0 {
					p.add(ref.Pos, "%s%s cannot use local %s: it uses the sensitive variable %s, and the keys are part of every instance's address, printed in plan, state and every output", prefix, field, quote(ref.Name), quote(sv[0]))
				}
			default:
				p.add(ref.Pos, "%sinvalid %s: it must be known before plan, and %s is not; it can use only variables and locals (a call's instances are its addresses, decided before any provider starts, any data is read or another stack's outputs are)", prefix, field, ref)
			}
		}
	}
}

// PendingCalls returns the calls whose for_each or count is an expression
// whose instances are not decided yet (ModuleCall.Pending), in order.
func (s *Spec) PendingCalls() []*ModuleCall {
	var out []*ModuleCall
	for _, c := range s.Modules {
		if c.Pending {
			out = append(out, c)
		}
	}
	return append(out, s.NestedCalls...)
}

// WithCallInstances returns the spec s was parsed from (its text and the
// module files it read: Recorded), parsed again with the instances of its
// pending calls decided: instances maps a call's name to them, in order
// (CALL["KEY"] with Key and Value, or CALL[N] with Count and Index). A
// pending call instances lacks stays pending. The --provider s was given
// (Override) is kept. s is not changed.
func (s *Spec) WithCallInstances(instances map[string][]CallInstance) (*Spec, error) {
	ns, err := parseWith(s.File, s.Recorded(), instances)
	if err != nil {
		return nil, err
	}
	if s.Override != "" {
		ns = ns.WithDefaultProvider(s.Override)
	}
	return ns, nil
}

// pendingUnder reports that name is an address under a pending call
// (CALL["KEY"].NAME): its instances are not decided yet, so nothing can
// tell whether it exists.
func pendingUnder(s *Spec, name string) bool {
	for _, c := range s.PendingCalls() {
		if c.Pending && strings.HasPrefix(name, c.Name+"[") {
			return true
		}
	}
	return false
}

// markUnbound marks the locals a pending call's instance added (its
// inputs among them): each.key, each.value and count.index in them are
// not known until its instances are decided.
func markUnbound(c *ModuleCall, added []*Local) {
	if !c.Pending {
		return
	}
	for _, l := range added {
		l.Unbound = true
	}
}

// pendingWhole is ${module.CALL} or ${module.CALL["KEY"]} for a pending
// call (validate without values): one instance's object stands for any
// key, and the whole call is an empty map (a list for count), its keys
// not known.
func (mr *moduleRefs) pendingWhole(c *ModuleCall, ref *Ref, object func(string) map[string]any) (any, bool) {
	switch {
	case ref.Keyed:
		return object(c.Name), true
	case repeatField(c) == "count":
		return []any{}, true
	}
	return map[string]any{}, true
}

// LocalsFor returns the locals refs use, directly or through other
// locals, in the order they are declared: what evaluating them needs.
func (s *Spec) LocalsFor(refs []*Ref) []*Local {
	need := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		l, ok := s.local(name)
		if !ok || need[name] {
			return
		}
		need[name] = true
		walkValueRefs(l.Value, func(r *Ref) {
			if r.Kind == RefLocal {
				visit(r.Name)
			}
		})
	}
	for _, ref := range refs {
		if ref.Kind == RefLocal {
			visit(ref.Name)
		}
	}
	var out []*Local
	for _, l := range s.Locals {
		if need[l.Name] {
			out = append(out, l)
		}
	}
	return out
}

// checkNestedRepeat checks that the for_each or count of each pending call
// made inside a module (for_each: ${var.zones} over the module's own
// variable) is known before plan through the whole chain of calls: the
// inputs that feed it, and the locals behind them, use only the stack's
// variables and locals, literals, and the each.key, each.value and
// count.index of the calls around it. Anything known only after apply (a
// resource's attribute, a data source, another stack's output, a module's
// output) is refused at the module file's field, naming the chain.
func checkNestedRepeat(s *Spec) Problems {
	var probs Problems
	for _, c := range s.NestedCalls {
		field := repeatField(c)
		seen := map[string]bool{}
		var bad []*Ref
		var sensitive []string
		var walk func(refs []*Ref)
		walk = func(refs []*Ref) {
			for _, ref := range refs {
				switch ref.Kind {
				case RefVar:
					if v, ok := s.Variable(ref.Name); ok && v.Sensitive && !slices.Contains(sensitive, ref.Name) {
						sensitive = append(sensitive, ref.Name)
					}
				case RefLocal:
					if seen[ref.Name] {
						continue
					}
					seen[ref.Name] = true
					if l, ok := s.local(ref.Name); ok {
						var inner []*Ref
						walkValueRefs(l.Value, func(r *Ref) { inner = append(inner, r) })
						walk(inner)
					}
				case RefEachKey, RefEachValue, RefCountIndex:
				default:
					bad = append(bad, ref)
				}
			}
		}
		walk(c.RepeatExpr.Refs())
		add := func(format string, args ...any) {
			probs = append(probs, Problem{File: c.File, Pos: c.FieldPos[field], Msg: fmt.Sprintf(format, args...) + c.Via})
		}
		switch {
		case len(bad) > 0:
			add("module call %s: invalid %s: it must be known before plan, and the input it uses comes from %s, which is not; a module's call can take its instances only from inputs made of the stack's variables and locals, literals and the each and count of the calls around it", quote(c.Name), field, bad[0])
		case len(sensitive) > 0:
			add("module call %s: %s cannot use the sensitive variable %s, through its module's inputs: its keys are part of every instance's address, printed in plan, state and every output", quote(c.Name), field, quote(sensitive[0]))
		}
	}
	return probs
}
