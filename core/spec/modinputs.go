package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A module call's input may use what is known only once something is
// applied: a resource of the caller (${logs.name}), another call's output
// (${module.net.vpc_id}), a data entry or another stack's output. Such an
// input is not a local (locals are evaluated before any provider starts):
// it is inlined, as Terraform's module variables are evaluated lazily,
// into exactly the module's resources and outputs that use it, so that
// each of them, and nothing else of the call, depends on what the input
// names. A module local that uses such an input is inlined the same way.

// checkCallRefs checks the references of every call's inputs that name
// something of the calling file: the resource, the data entry, the call.
func (p *parser) checkCallRefs(s *Spec, first map[string]*Resource, firstData map[string]*Data) {
	for _, cn := range p.calls {
		c := cn.c
		prefix := fmt.Sprintf("module call %s: ", quote(c.Name))
		for _, ref := range cn.refs.refs {
			switch ref.Kind {
			case RefResource:
				t := first[ref.Name]
				switch {
				case t == nil && s.call(ref.Name) != nil:
					p.add(ref.Pos, "%sunknown resource %s in %s: a module's resources are read through its outputs (${module.%s.OUTPUT})", prefix, quote(ref.Name), ref, ref.Name)
				case t == nil:
					p.add(ref.Pos, "%sunknown resource %s in %s", prefix, quote(ref.Name), ref)
				case ref.Key == EachKey || ref.Key == CountIndex:
					p.add(ref.Pos, "%s%s: an input names the instance of a resource by its key (NAME[KEY].ATTR), not by [%s]", prefix, ref, ref.Key)
				case t.ForEach == nil && ref.Keyed:
					p.add(ref.Pos, "%sresource %s has no for_each, so it has no instance [%s]: write ${%s.%s}", prefix, quote(ref.Name), ref.Key, ref.Name, ref.Attr)
				case t.ForEach != nil && !ref.Keyed:
					p.add(ref.Pos, "%sresource %s has for_each: name one instance, as ${%s[KEY].%s}", prefix, quote(ref.Name), ref.Name, ref.Attr)
				}
			case RefData:
				if firstData[ref.Name] == nil {
					names := make([]string, 0, len(firstData))
					for n := range firstData {
						names = append(names, n)
					}
					slices.Sort(names)
					p.add(ref.Pos, "%sunknown data entry %s in %s (declared under data: %s)", prefix, quote(ref.Name), ref, nameList(names))
				}
			case RefModule:
				switch {
				case s.call(ref.Name) == nil:
					names := make([]string, 0, len(s.Modules))
					for _, m := range s.Modules {
						names = append(names, m.Name)
					}
					p.add(ref.Pos, "unknown module call %s in %s (called under modules: %s)", quote(ref.Name), ref, nameList(names))
				case ref.Name == c.Name:
					p.add(ref.Pos, "%sinput uses the call's own output %s: a call cannot take its own outputs (a cycle)", prefix, ref)
				}
			}
		}
	}
}

// inputOrigin is the call input a value known only after apply comes
// from, for messages.
type inputOrigin struct {
	call  *ModuleCall
	input string
}

func (o inputOrigin) pos() Pos { return o.call.FieldPos["inputs."+o.input] }

// inliner inlines the locals known only after apply (late) into the
// templates that use them.
type inliner struct {
	file    string
	byName  map[string]*Local
	origin  map[string]inputOrigin // late local -> the input it comes from
	late    map[string]bool        // the locals known only after apply
	inlined map[string]any         // late local -> its value, inlined
	probs   Problems
}

// inlineInputs finds the inputs of s's calls that are known only after
// apply, and the module locals using them, and inlines them into the
// resources and outputs of s that use them; it removes them from
// s.Locals, refuses them where a value must be known before any provider
// starts (a for_each, a data entry), and refuses a dependency cycle they
// make between resources. It runs once every call is instantiated and
// module outputs are substituted.
func inlineInputs(s *Spec, calls []*callNodes) Problems {
	in := &inliner{file: s.File, byName: map[string]*Local{}, origin: map[string]inputOrigin{}, late: map[string]bool{}, inlined: map[string]any{}}
	inputs := map[string]inputOrigin{}
	for _, cn := range calls {
		c := cn.c
		names := []string{c.Name}
		if c.Repeated {
			names = names[:0]
			for _, inst := range c.Instances {
				names = append(names, c.instanceName(inst))
			}
		}
		for _, n := range names {
			for k := range c.Inputs {
				inputs[renamer{call: n}.varName(k)] = inputOrigin{call: c, input: k}
			}
		}
	}
	for _, l := range s.Locals {
		in.byName[l.Name] = l
	}
	// Which locals are late: those using a resource, a data entry or
	// another stack's output, or a late local. Only an input can start
	// such a chain, and only inputs can make a cycle of locals (a file's
	// own locals are checked when it is parsed).
	state := map[string]int{} // 1 visiting, 2 done
	var path []string
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case 1:
			i := slices.Index(path, name)
			chain := append(slices.Clone(path[i:]), name)
			o, ok := inputs[chain[0]]
			for _, n := range chain {
				if oo, isIn := inputs[n]; isIn && !ok {
					o, ok = oo, true
				}
			}
			msg := fmt.Sprintf("a cycle of module inputs and outputs: %s (a call's input cannot come, through other calls, from its own outputs)", strings.Join(chain, " -> "))
			if ok {
				msg = fmt.Sprintf("module call %s: input %s makes %s", quote(o.call.Name), quote(o.input), msg)
				in.probs = append(in.probs, Problem{File: s.File, Pos: o.pos(), Msg: msg})
			} else {
				in.probs = append(in.probs, Problem{File: s.File, Pos: in.byName[name].Pos, Msg: msg})
			}
			return false
		case 2:
			return in.late[name]
		}
		state[name] = 1
		path = append(path, name)
		late := false
		var from inputOrigin
		walkTemplates(in.byName[name].Value, func(t *Template) {
			for _, ref := range t.Refs() {
				switch ref.Kind {
				case RefResource, RefData, RefStack:
					late = true
				case RefLocal:
					if in.byName[ref.Name] != nil && visit(ref.Name) && !late {
						late, from = true, in.origin[ref.Name]
					}
				}
			}
		})
		path = path[:len(path)-1]
		state[name] = 2
		if late {
			in.late[name] = true
			if o, ok := inputs[name]; ok {
				from = o
			}
			in.origin[name] = from
		}
		return late
	}
	for _, l := range s.Locals {
		visit(l.Name)
	}
	if len(in.probs) > 0 {
		return in.probs
	}
	if len(in.late) == 0 {
		return nil
	}
	// Inline them, recording the resources each inlined value brings into
	// a resource's config: an edge of a dependency cycle, if any, is named
	// by the input it came through.
	edges := map[[2]string]inputOrigin{}
	for _, r := range s.Resources {
		file, via := s.File, ""
		if r.File != "" {
			file, via = r.File, r.Via
		}
		before := len(in.probs)
		r.Config = in.value(file, r.Config, func(local string, v any) {
			walkTemplates(v, func(t *Template) {
				for _, ref := range t.Refs() {
					if ref.Kind == RefResource {
						edges[[2]string{r.Name, ref.Name}] = in.origin[local]
					}
				}
			})
		}).(map[string]any)
		if r.ForEach != nil {
			refs := []*Ref{}
			if r.ForEach.Ref != nil {
				refs = append(refs, r.ForEach.Ref)
			}
			walkTemplates(r.ForEach.Value, func(t *Template) { refs = append(refs, t.Refs()...) })
			for _, ref := range refs {
				if ref.Kind == RefLocal && in.late[ref.Name] {
					in.lateProblem(file, "", ref, fmt.Sprintf("resource %s: %s cannot use it: its keys are part of every instance's address, known before any provider starts", quote(r.Name), forEachField(r.ForEach)))
				}
			}
		}
		for i := before; i < len(in.probs); i++ {
			in.probs[i].Msg += via
		}
	}
	for _, o := range s.Outputs {
		o.Value = in.value(s.File, o.Value, nil)
	}
	for _, d := range s.Data {
		file, via := s.File, ""
		if d.File != "" {
			file, via = d.File, d.Via
		}
		walkTemplates(d.Config, func(t *Template) {
			for _, ref := range t.Refs() {
				if ref.Kind == RefLocal && in.late[ref.Name] {
					in.lateProblem(file, via, ref, fmt.Sprintf("data %s cannot use it: data is read at plan time, before anything is applied", quote(d.Name)))
				}
			}
		})
	}
	s.Locals = slices.DeleteFunc(s.Locals, func(l *Local) bool { return in.late[l.Name] })
	in.probs = append(in.probs, lateCycles(s, edges)...)
	return in.probs
}

func forEachField(fe *ForEach) string {
	if fe.Count {
		return "count"
	}
	return "for_each"
}

// lateProblem refuses a late local where a value must be known early.
func (in *inliner) lateProblem(file, via string, ref *Ref, what string) {
	o := in.origin[ref.Name]
	if o.call == nil {
		in.probs = append(in.probs, Problem{File: file, Pos: ref.Pos, Msg: fmt.Sprintf("%s is known only after apply; %s%s", in.display(ref), what, via)})
		return
	}
	in.probs = append(in.probs, Problem{File: file, Pos: ref.Pos, Msg: fmt.Sprintf(
		"%s is known only after apply (module call %s's input %s uses a resource, a data entry or another stack's output, at %s); %s%s",
		in.display(ref), quote(o.call.Name), quote(o.input), Problem{File: in.file, Pos: o.pos()}.where(), what, via)})
}

// display names a late local as the module's text writes it.
func (in *inliner) display(ref *Ref) string {
	if i := strings.LastIndex(ref.Name, ".var."); i >= 0 {
		return "${var." + ref.Name[i+len(".var."):] + "}"
	}
	if i := strings.LastIndex(ref.Name, ".local."); i >= 0 {
		return "${local." + ref.Name[i+len(".local."):] + "}"
	}
	return ref.String()
}

// get returns the late local name's value, itself inlined.
func (in *inliner) get(name string) any {
	if v, ok := in.inlined[name]; ok {
		return v
	}
	l := in.byName[name]
	v := in.value(in.file, l.Value, nil)
	in.inlined[name] = v
	return v
}

// value returns a copy of v with every late local inlined; seen (if not
// nil) is told of each inlined local and its value.
func (in *inliner) value(file string, v any, seen func(local string, v any)) any {
	return mapTemplates(v, func(t *Template) any { return in.template(file, t, seen) })
}

func (in *inliner) template(file string, t *Template, seen func(string, any)) any {
	has := false
	for _, ref := range t.Refs() {
		has = has || ref.Kind == RefLocal && in.late[ref.Name]
	}
	if !has {
		return t
	}
	use := func(ref *Ref) any {
		v := in.get(ref.Name)
		if seen != nil {
			seen(ref.Name, v)
		}
		return v
	}
	if ref := t.Single(); ref != nil {
		return mapTemplates(use(ref), func(t *Template) any { return t })
	}
	var parts []Part
	for _, p := range t.Parts {
		switch {
		case p.Ref != nil && p.Ref.Kind == RefLocal && in.late[p.Ref.Name]:
			switch v := use(p.Ref).(type) {
			case *Template:
				for _, vp := range v.Parts {
					if vp.Ref != nil {
						c := *vp.Ref
						c.Pos = p.Ref.Pos
						vp = Part{Ref: &c}
					}
					parts = append(parts, vp)
				}
			default:
				in.probs = append(in.probs, Problem{File: file, Pos: p.Ref.Pos, Msg: fmt.Sprintf("%s is %s and cannot be part of a string (use it alone, as the whole value)", in.display(p.Ref), describeValue(v))})
			}
		case p.Expr != nil:
			parts = append(parts, Part{Expr: in.expr(file, p.Expr, use)})
		default:
			parts = append(parts, p)
		}
	}
	return NewTemplate(t.File, t.Pos, parts)
}

// describeValue names a value's kind for messages, never quoting it.
func describeValue(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	return "not a string"
}

// expr inlines the late locals an expression uses; each must be one
// reference (a resource's attribute, a data entry's, another stack's
// output), which takes the local's place in the expression.
func (in *inliner) expr(file string, x *Expr, use func(*Ref) any) *Expr {
	subst := map[string]*Ref{}
	whole := map[string]any{} // values of more than one reference
	for _, ref := range x.Refs {
		if ref.Kind != RefLocal || !in.late[ref.Name] {
			continue
		}
		v := use(ref)
		t, _ := v.(*Template)
		var one *Ref
		if t != nil {
			one = t.Single()
		}
		if one == nil || one.Kind == RefStack && one.Name == "" {
			if _, _, bad := valueLeaves(v); bad != nil {
				in.probs = append(in.probs, Problem{File: file, Pos: ref.Pos, Msg: fmt.Sprintf("%s cannot be used inside an expression: its value holds %s, which an expression cannot name (use it alone, as the whole value)", in.display(ref), bad)})
				continue
			}
			whole[ref.Name] = v
			continue
		}
		subst[ref.Name] = one
	}
	if len(whole) > 0 {
		x = substLocalValues(x, whole)
	}
	if len(subst) == 0 {
		return x
	}
	nx := reparse(x, func(tr hcl.Traversal) hcl.Traversal {
		if tr.RootName() != "local" || len(tr) < 2 {
			return tr
		}
		a, ok := tr[1].(hcl.TraverseAttr)
		if !ok || subst[a.Name] == nil {
			return tr
		}
		head, ok := refTraversal(subst[a.Name], tr[0].SourceRange())
		if !ok {
			return tr
		}
		return append(head, tr[2:]...)
	})
	for i, ref := range nx.Refs {
		if ref.Kind != RefLocal {
			continue
		}
		if s := subst[ref.Name]; s != nil {
			c := *s
			c.Pos = ref.Pos
			nx.Refs[i] = &c
			nx.Keys[i] = c.Key
		}
	}
	return nx
}

// refTraversal returns the traversal that reads what ref names, for an
// expression: NAME.ATTR, NAME["KEY"].ATTR, data.NAME.ATTR, local.NAME or
// stack["NAME"].outputs.X.
func refTraversal(ref *Ref, rng hcl.Range) (hcl.Traversal, bool) {
	switch ref.Kind {
	case RefResource:
		head := hcl.Traversal{hcl.TraverseRoot{Name: ref.Name, SrcRange: rng}}
		if ref.Keyed {
			head = append(head, hcl.TraverseIndex{Key: cty.StringVal(ref.Key), SrcRange: rng})
		}
		return append(head, hcl.TraverseAttr{Name: ref.Attr, SrcRange: rng}), true
	case RefData:
		return hcl.Traversal{hcl.TraverseRoot{Name: "data", SrcRange: rng}, hcl.TraverseAttr{Name: ref.Name, SrcRange: rng}, hcl.TraverseAttr{Name: ref.Attr, SrcRange: rng}}, true
	case RefLocal:
		return hcl.Traversal{hcl.TraverseRoot{Name: "local", SrcRange: rng}, hcl.TraverseAttr{Name: ref.Name, SrcRange: rng}}, true
	case RefStack:
		if ref.Name == "" {
			return nil, false
		}
		return hcl.Traversal{hcl.TraverseRoot{Name: "stack", SrcRange: rng}, hcl.TraverseIndex{Key: cty.StringVal(ref.Name), SrcRange: rng},
			hcl.TraverseAttr{Name: "outputs", SrcRange: rng}, hcl.TraverseAttr{Name: ref.Attr, SrcRange: rng}}, true
	}
	return nil, false
}

// walkTemplates calls fn for every template in v.
func walkTemplates(v any, fn func(*Template)) {
	switch v := v.(type) {
	case *Template:
		fn(v)
	case map[string]any:
		for _, e := range v {
			walkTemplates(e, fn)
		}
	case []any:
		for _, e := range v {
			walkTemplates(e, fn)
		}
	}
}

// lateCycles refuses a dependency cycle between resources that an input
// known only after apply makes (net's subnet uses app's output, app's
// instance net's): the cycle is reported at the first input on it.
func lateCycles(s *Spec, edges map[[2]string]inputOrigin) Problems {
	if len(edges) == 0 {
		return nil
	}
	byName := make(map[string]*Resource, len(s.Resources))
	nodes := make([]string, 0, len(s.Resources))
	for _, r := range s.Resources {
		byName[r.Name] = r
		nodes = append(nodes, r.Name)
	}
	deps := map[string][]string{}
	add := func(from, to string) {
		if from != to && byName[to] != nil && !slices.Contains(deps[from], to) {
			deps[from] = append(deps[from], to)
		}
	}
	for _, r := range s.Resources {
		for _, d := range r.DependsOn {
			add(r.Name, d)
		}
		walkTemplates(r.Config, func(t *Template) {
			for _, ref := range t.Refs() {
				if ref.Kind == RefResource {
					add(r.Name, ref.Name)
				}
			}
		})
	}
	var probs Problems
	for _, c := range findCycles(nodes, deps) {
		var o *inputOrigin
		for i := 0; i+1 < len(c) && o == nil; i++ {
			if e, ok := edges[[2]string{c[i], c[i+1]}]; ok && e.call != nil {
				o = &e
			}
		}
		if o == nil {
			r := byName[c[0]]
			file := s.File
			if r.File != "" {
				file = r.File
			}
			probs = append(probs, Problem{File: file, Pos: r.Pos, Msg: fmt.Sprintf("dependency cycle: %s%s", c, r.Via)})
			continue
		}
		probs = append(probs, Problem{File: s.File, Pos: o.pos(), Msg: fmt.Sprintf("module call %s: input %s makes a dependency cycle: %s (a resource of a call cannot depend, through inputs and outputs, on itself)", quote(o.call.Name), quote(o.input), c)})
	}
	return probs
}
