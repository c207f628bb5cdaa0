package resolve

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Expand returns the concrete spec for s with the variable values vars
// (from Values): s is not changed.
//
//   - Every ${var.NAME} in resource configs, provider configs, for_each
//     and outputs is replaced by its value.
//   - A resource with for_each becomes one resource per key, in key order,
//     named NAME[KEY] (Addr {NAME, KEY, true}), with ${each.key} and
//     ${each.value} replaced and ${OTHER[each.key].ATTR} naming OTHER's
//     instance of the same key. for_each over a mapping uses its keys, and
//     each.value is the key's value; over a list (Terraform's set of
//     strings) each element is its own key and value, so the elements must
//     be distinct strings. Keys must match spec.KeyPattern. An empty
//     collection makes no instance.
//   - Each resource's DependsOn is its depends_on (a for_each resource
//     named there stands for all of its instances), then every resource its
//     config references, each once: a reference is a dependency.
//   - Every data entry's config has its variables substituted; its
//     ${data.NAME.ATTR} references, and those of resource configs and
//     outputs, stay: they are read at plan time (SubstituteData).
//   - Values is set to vars (every declared variable has a value there).
//   - Stack is the name a stack: field that uses variables resolves to
//     (StackName), checked against spec.StackNamePattern.
//
// Every problem (a missing variable, a for_each that is not a list or
// mapping, a bad or repeated key, a reference to an instance key that does
// not exist, a value that cannot be interpolated) is reported at once, as
// spec.Problems positioned at the reference or the field.
func Expand(s *spec.Spec, vars map[string]any) (*spec.Spec, error) {
	c, _, err := expandSpec(s, vars, false)
	return c, err
}

// ExpandUnknown is Expand for validate and graph, which need no value: a
// declared variable that vars lacks (Values with Inputs.Unknown) is a value
// not known yet, of its declared type, as in terraform validate. Everything
// else is checked as Expand checks it, and an expression over an unknown
// value is still evaluated (its functions' arity and argument types where
// they can be told, a list interpolated in a string) though its value stays
// unknown: such a value stays a *spec.Template, as a resource reference
// does, so it is left out of the provider's validation and shows as
// KnownAfterApply. A for_each whose collection is not known makes one
// resource named as the for_each resource (no key), its config checked once
// as the template of every instance, with ${each.key} and ${each.value}
// unknown; a note (the second result) says so, positioned at the for_each.
func ExpandUnknown(s *spec.Spec, vars map[string]any) (*spec.Spec, spec.Problems, error) {
	return expandSpec(s, vars, true)
}

func expandSpec(s *spec.Spec, vars map[string]any, allowUnknown bool) (*spec.Spec, spec.Problems, error) {
	e := &expander{s: s, vars: vars, keys: map[string][]string{}, keySet: map[string]map[string]bool{}, sensitive: map[string]bool{}, unknown: map[string]bool{}, templated: map[string]bool{}}
	for _, v := range s.Variables {
		if v.Sensitive {
			e.sensitive[v.Name] = true
		}
	}
	for _, v := range s.Variables {
		if _, ok := vars[v.Name]; !ok {
			if allowUnknown {
				e.unknown[v.Name] = true
				continue
			}
			e.add(v.Pos, "variable %s has no value (resolve.Values gives every variable one)", v.Name)
		}
	}
	if len(e.probs) > 0 {
		return nil, nil, e.sorted()
	}
	if len(s.PendingCalls()) > 0 {
		// A module call's for_each or count from variables: its
		// instances first, as the stack's name is.
		ns, err := e.decideCalls()
		switch {
		case err != nil:
			return nil, nil, err
		case ns == nil:
			return nil, nil, e.sorted()
		}
		s, e.s = ns, ns
	}

	e.evalLocals()
	stack := e.stackName()

	// The instance keys of every for_each resource, first: a reference to
	// an instance may come before the resource in the file.
	values := map[string]map[string]any{}
	for _, r := range s.Resources {
		if r.ForEach != nil {
			keys, vals, known := e.forEach(r)
			if !known {
				e.templated[r.Name] = true
				continue
			}
			e.keys[r.Name] = keys
			set := make(map[string]bool, len(keys))
			for _, k := range keys {
				set[k] = true
			}
			e.keySet[r.Name], values[r.Name] = set, vals
		}
	}

	total := 0
	for _, r := range s.Resources {
		if r.ForEach == nil || e.templated[r.Name] {
			total++
		} else {
			total += len(e.keys[r.Name])
		}
	}
	if total > MaxInstances {
		return nil, nil, spec.Problems{{File: s.File, Msg: fmt.Sprintf("the spec expands to %d resources (for_each instances included); at most %d are allowed", total, MaxInstances)}}
	}
	if len(e.probs) > 0 {
		return nil, nil, e.sorted()
	}

	c := *s
	c.Stack = stack
	c.Values = maps.Clone(vars)
	if c.Values == nil {
		c.Values = map[string]any{}
	}
	c.Providers = make(map[string]*spec.Provider, len(s.Providers))
	for n, p := range s.Providers {
		cp := *p
		if p.Config != nil {
			cp.Config = e.subst(p.Config, nil).(map[string]any)
		}
		c.Providers[n] = &cp
	}
	c.Resources = make([]*spec.Resource, 0, len(s.Resources))
	for _, r := range s.Resources {
		if r.ForEach == nil {
			c.Resources = append(c.Resources, e.instance(r, nil))
			continue
		}
		if e.templated[r.Name] {
			c.Resources = append(c.Resources, e.instance(r, &each{unknown: true}))
			continue
		}
		for i, k := range e.keys[r.Name] {
			c.Resources = append(c.Resources, e.instance(r, &each{key: k, value: values[r.Name][k], count: r.ForEach.Count, index: float64(i)}))
		}
	}
	c.Data = make([]*spec.Data, len(s.Data))
	for i, d := range s.Data {
		cd := *d
		cd.FieldPos = maps.Clone(d.FieldPos)
		cd.Config = e.subst(d.Config, nil).(map[string]any)
		c.Data[i] = &cd
	}
	c.Outputs = make([]*spec.Output, len(s.Outputs))
	for i, o := range s.Outputs {
		co := *o
		co.Value = e.subst(o.Value, nil)
		c.Outputs[i] = &co
	}
	if len(e.probs) > 0 {
		return nil, nil, e.sorted()
	}
	c.Secrets = append(slices.Clone(s.Secrets), e.secrets...)
	return &c, e.notes, nil
}

// MaxInstances bounds the resources a spec expands to: a for_each over a
// variable multiplies what a 1 MiB spec can ask for, and a hostile or
// mistaken one must not exhaust memory before anything is checked.
const MaxInstances = 100_000

// each is the instance being expanded; unknown for the one template of a
// for_each resource whose collection is not known (ExpandUnknown).
type each struct {
	key     string
	value   any
	count   bool    // an instance of a count, not a for_each
	index   float64 // its index, when count
	unknown bool
}

type expander struct {
	s         *spec.Spec
	vars      map[string]any
	sensitive map[string]bool            // the sensitive variables
	ea        *each                      // the instance being expanded, if any
	secrets   []any                      // values expressions computed from secrets
	locals    map[string]any             // the locals' values
	secretLoc map[string]bool            // the locals that use a sensitive value
	keys      map[string][]string        // for_each resource -> its keys, sorted
	keySet    map[string]map[string]bool // the same, as sets
	unknown   map[string]bool            // the variables with no value (ExpandUnknown)
	templated map[string]bool            // for_each resources whose keys are not known
	probs     spec.Problems
	notes     spec.Problems // what validation could not see (ExpandUnknown)
}

func (e *expander) add(pos spec.Pos, format string, args ...any) {
	e.probs = append(e.probs, spec.Problem{File: e.s.File, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (e *expander) sorted() spec.Problems {
	sort.SliceStable(e.probs, func(i, j int) bool {
		a, b := e.probs[i].Pos, e.probs[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return e.probs
}

// forEach returns a for_each resource's keys, sorted, and each key's
// value; false (after a note) when the keys are not known (ExpandUnknown).
func (e *expander) forEach(r *spec.Resource) ([]string, map[string]any, bool) {
	fe := r.ForEach
	var coll any
	from := "for_each"
	if fe.Count {
		from = "count"
	}
	if fe.Ref != nil && fe.Ref.Kind == spec.RefLocal {
		if e.secretLoc[fe.Ref.Name] {
			e.add(fe.Ref.Pos, "resource %q: for_each cannot use the local %q: it uses a sensitive value, and its keys are part of every instance's address, printed everywhere", r.Name, fe.Ref.Name)
			return nil, nil, true
		}
		coll = e.locals[fe.Ref.Name]
		if !Known(coll) {
			return e.unknownKeys(r)
		}
		from = fmt.Sprintf("%s (%s)", from, fe.Ref)
	} else if fe.Ref != nil {
		if v, ok := e.s.Variable(fe.Ref.Name); ok && v.Sensitive {
			e.add(fe.Ref.Pos, "resource %q: for_each cannot use the sensitive variable %q: its keys are part of every instance's address, printed everywhere", r.Name, fe.Ref.Name)
			return nil, nil, true
		}
		if e.unknown[fe.Ref.Name] {
			return e.unknownKeys(r)
		}
		coll = e.vars[fe.Ref.Name]
		from = fmt.Sprintf("%s (%s)", from, fe.Ref)
	} else {
		sensitive := ""
		walkRefs(fe.Value, func(ref *spec.Ref) {
			if ref.Kind == spec.RefLocal && e.secretLoc[ref.Name] && sensitive == "" {
				sensitive = ref.Name
				e.add(ref.Pos, "resource %q: for_each cannot use the local %q: it uses a sensitive value, and its keys are part of every instance's address, printed everywhere", r.Name, ref.Name)
			}
			if v, ok := e.s.Variable(ref.Name); ok && v.Sensitive && ref.Kind == spec.RefVar && sensitive == "" {
				sensitive = ref.Name
				e.add(ref.Pos, "resource %q: for_each cannot use the sensitive variable %q: its keys are part of every instance's address, printed everywhere", r.Name, ref.Name)
			}
		})
		if sensitive != "" {
			return nil, nil, true
		}
		coll = e.subst(fe.Value, nil)
		if l, isList := coll.([]any); (isList && !Known(l)) || isTemplate(coll) {
			// A map's keys are known though its values may not be; a
			// list's elements are its keys.
			return e.unknownKeys(r)
		}
	}
	if fe.Count {
		if isTemplate(coll) || !Known(coll) {
			// A count that is not known yet (validate without values)
			// is checked as one template, as an unknown for_each.
			return e.unknownKeys(r)
		}
		keys, vals := e.count(r, from, coll)
		return keys, vals, true
	}
	vals := map[string]any{}
	var keys []string
	badKey := func(k string) bool {
		if spec.ValidKey(k) {
			return false
		}
		// A key comes from a variable or the spec, never a secret one
		// (a sensitive for_each would print its keys in every address),
		// but it is still clipped.
		e.add(fe.Pos, "resource %q: %s key %q is not a valid instance key: a key must match %s (and cannot be each.key)", r.Name, from, clip(k), spec.KeyPattern)
		return true
	}
	switch coll := coll.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(coll)) {
			if badKey(k) {
				continue
			}
			keys = append(keys, k)
			vals[k] = coll[k]
		}
	case []any:
		seen := map[string]bool{}
		for i, el := range coll {
			k, ok := el.(string)
			if !ok {
				e.add(fe.Pos, "resource %q: %s element #%d is %s: a for_each list must hold strings (its elements are the keys); use a mapping for other values", r.Name, from, i+1, describe(el))
				continue
			}
			if badKey(k) {
				continue
			}
			if seen[k] {
				e.add(fe.Pos, "resource %q: %s lists %q twice: each element is an instance key, so they must be distinct", r.Name, from, clip(k))
				continue
			}
			seen[k] = true
			keys = append(keys, k)
			vals[k] = k
		}
		slices.Sort(keys)
	default:
		e.add(fe.Pos, "resource %q: %s must be a list or a map, not %s", r.Name, from, describe(coll))
	}
	return keys, vals, true
}

// unknownKeys notes that r's for_each is not known without values, so
// that it is validated once, as the template of every instance.
func (e *expander) unknownKeys(r *spec.Resource) ([]string, map[string]any, bool) {
	var names []string
	note := func(ref *spec.Ref) {
		if ref.Kind == spec.RefVar && e.unknown[ref.Name] && !slices.Contains(names, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	if r.ForEach.Ref != nil {
		note(r.ForEach.Ref)
	}
	walkRefs(r.ForEach.Value, note)
	why := "it uses a variable with no value"
	if len(names) == 1 {
		why = fmt.Sprintf("variable %q has no value", names[0])
	} else if len(names) > 1 {
		why = "variables " + quoteList(names) + " have no value"
	}
	e.notes = append(e.notes, spec.Problem{File: e.s.File, Pos: r.ForEach.Pos, Msg: fmt.Sprintf("resource %q: for_each is not known (%s): its config is checked once, as the template of every instance", r.Name, why)})
	return nil, nil, false
}

func isTemplate(v any) bool {
	_, ok := v.(*spec.Template)
	return ok
}

// count returns the keys of a resource with count n ("0" to "n-1", in
// that order) and their values (none: ${count.index} is the index).
func (e *expander) count(r *spec.Resource, from string, n any) ([]string, map[string]any) {
	f, ok := n.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > MaxInstances {
		e.add(r.ForEach.Pos, "resource %q: %s must be a whole number from 0 to %d, not %s", r.Name, from, MaxInstances, describeCount(n))
		return nil, nil
	}
	keys := make([]string, int(f))
	vals := make(map[string]any, len(keys))
	for i := range keys {
		keys[i] = strconv.Itoa(i)
		vals[keys[i]] = nil
	}
	return keys, vals
}

func describeCount(n any) string {
	if f, ok := n.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return describe(n)
}

// instance returns the resource r, or its instance ea, made concrete.
func (e *expander) instance(r *spec.Resource, ea *each) *spec.Resource {
	c := *r
	c.ForEach = nil
	c.Addr = spec.Address{Name: r.Name}
	if ea != nil && !ea.unknown {
		c.Addr = spec.Address{Name: r.Name, Key: ea.key, Keyed: true}
	}
	c.Name = c.Addr.String()
	c.FieldPos = maps.Clone(r.FieldPos)
	c.Config = e.subst(r.Config, ea).(map[string]any)
	deps := make([]string, 0, len(r.DependsOn))
	seen := map[string]bool{}
	addDep := func(a string) {
		if !seen[a] {
			seen[a] = true
			deps = append(deps, a)
		}
	}
	for _, d := range r.DependsOn {
		if ks, isForEach := e.keys[d]; isForEach {
			for _, k := range ks {
				addDep(spec.Address{Name: d, Key: k, Keyed: true}.String())
			}
			continue
		}
		addDep(d)
	}
	walkRefs(c.Config, func(ref *spec.Ref) {
		switch a := ref.Address(); {
		case a == "":
		case e.templated[ref.Name]:
			addDep(ref.Name) // its one template stands for every instance
		case ref.Key == spec.EachKey:
			// In a template instance: any instance of the same key.
			for _, k := range e.keys[ref.Name] {
				addDep(spec.Address{Name: ref.Name, Key: k, Keyed: true}.String())
			}
		default:
			addDep(a)
		}
	})
	c.DependsOn = deps
	return &c
}

// subst returns a copy of v with variables, each and [each.key]
// substituted (ea nil outside a for_each instance) and resource
// references checked against the instance keys.
func (e *expander) subst(v any, ea *each) any {
	switch v := v.(type) {
	case *spec.Template:
		return e.template(v, ea)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, el := range v {
			out[k] = e.subst(el, ea)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, el := range v {
			out[i] = e.subst(el, ea)
		}
		return out
	}
	return v
}

func (e *expander) template(t *spec.Template, ea *each) any {
	e.ea = ea
	return substTemplate(e, t)
}

// refValue returns a reference's value, or false for a resource or data
// reference (kept, with [each.key] replaced, in *ref).
func (e *expander) refValue(t *spec.Template, refp **spec.Ref) (any, bool) {
	r := *refp
	switch r.Kind {
	case spec.RefVar:
		if e.unknown[r.Name] {
			e.interpolable(t, r)
			return nil, false
		}
		return clone(e.vars[r.Name]), true
	case spec.RefEachKey, spec.RefEachValue:
		if e.ea == nil {
			e.add(r.Pos, "%s is only allowed in the config of a resource with for_each", r)
			return nil, true
		}
		if e.ea.unknown {
			return nil, false
		}
		if r.Kind == spec.RefEachKey {
			return e.ea.key, true
		}
		return clone(e.ea.value), true
	case spec.RefLocal:
		if v := e.locals[r.Name]; !Known(v) {
			return nil, false // it uses a variable with no value
		}
		return clone(e.locals[r.Name]), true
	case spec.RefCountIndex:
		if e.ea == nil || !e.ea.count {
			e.add(r.Pos, "%s is only allowed in the config of a resource with count", r)
			return nil, true
		}
		if e.ea.unknown {
			return nil, false
		}
		return e.ea.index, true
	case spec.RefData, spec.RefStack:
		return nil, false // read at plan time (SubstituteData, SubstituteStacks)
	}
	*refp = e.resourceRef(r)
	return nil, false
}

// evalLocals gives every local its value, each after the locals it uses
// (Parse has refused a cycle), and notes which use a sensitive value.
func (e *expander) evalLocals() {
	e.locals, e.secretLoc = make(map[string]any, len(e.s.Locals)), map[string]bool{}
	byName := make(map[string]*spec.Local, len(e.s.Locals))
	for _, l := range e.s.Locals {
		byName[l.Name] = l
	}
	done := map[string]bool{}
	var eval func(l *spec.Local)
	eval = func(l *spec.Local) {
		if done[l.Name] {
			return
		}
		done[l.Name] = true
		secret := false
		walkRefs(l.Value, func(ref *spec.Ref) {
			switch ref.Kind {
			case spec.RefLocal:
				if d := byName[ref.Name]; d != nil {
					eval(d)
				}
				secret = secret || e.secretLoc[ref.Name]
			case spec.RefVar:
				secret = secret || e.sensitive[ref.Name]
			}
		})
		e.ea = nil
		var ea *each
		if l.Unbound {
			// A pending module call's input: its each and count are
			// not known until its instances are decided.
			ea = &each{unknown: true, count: true}
		}
		e.locals[l.Name] = e.subst(l.Value, ea)
		e.secretLoc[l.Name] = secret
	}
	for _, l := range e.s.Locals {
		eval(l)
	}
}

// resourceRef returns r with [each.key] replaced by the instance's key,
// and checks that the instance it names exists.
func (e *expander) resourceRef(r *spec.Ref) *spec.Ref {
	if r.Key == spec.CountIndex {
		if e.ea == nil || !e.ea.count {
			e.add(r.Pos, "%s uses [count.index] outside a resource with count", r)
			return r
		}
		cr := *r
		cr.Key = e.ea.key
		return e.checkInstance(&cr)
	}
	if r.Key == spec.EachKey {
		if e.ea == nil {
			e.add(r.Pos, "%s uses [each.key] outside a resource with for_each", r)
			return r
		}
		if e.ea.unknown {
			return r // the key is not known
		}
		cr := *r
		cr.Key = e.ea.key
		r = &cr
	}
	return e.checkInstance(r)
}

// checkInstance checks that the instance r names exists.
func (e *expander) checkInstance(r *spec.Ref) *spec.Ref {
	if set, isForEach := e.keySet[r.Name]; isForEach && r.Keyed && !set[r.Key] {
		e.add(r.Pos, "resource %q has no instance %q in %s (its keys: %s)", r.Name, r.Key, r, quoteList(e.keys[r.Name]))
	}
	return r
}

func (e *expander) bindRef(t *spec.Template, b *binding, r *spec.Ref, _ string) (*spec.Ref, bool) {
	switch r.Kind {
	case spec.RefVar:
		v := toCty(e.vars[r.Name])
		if e.unknown[r.Name] {
			v = cty.DynamicVal
			if d, ok := e.s.Variable(r.Name); ok {
				v = cty.UnknownVal(ctyType(d.Type))
			}
		}
		if e.sensitive[r.Name] {
			v = v.Mark(sensitive)
		}
		b.setVar(r.Name, v)
		return nil, true
	case spec.RefEachKey, spec.RefEachValue:
		if e.ea == nil {
			e.add(r.Pos, "%s is only allowed in the config of a resource with for_each", r)
			b.setEach("key", cty.StringVal(""))
			b.setEach("value", cty.NullVal(cty.DynamicPseudoType))
			return nil, true
		}
		if e.ea.unknown {
			b.setEach("key", cty.UnknownVal(cty.String))
			b.setEach("value", cty.DynamicVal)
			return nil, true
		}
		if r.Kind == spec.RefEachKey {
			b.setEach("key", cty.StringVal(e.ea.key))
		} else {
			b.setEach("value", toCty(e.ea.value))
		}
		return nil, true
	case spec.RefCountIndex:
		if e.ea == nil || !e.ea.count {
			e.add(r.Pos, "%s is only allowed in the config of a resource with count", r)
			b.setCount(cty.NumberIntVal(0))
			return nil, true
		}
		if e.ea.unknown {
			b.setCount(cty.UnknownVal(cty.Number))
			return nil, true
		}
		b.setCount(cty.NumberFloatVal(e.ea.index))
		return nil, true
	case spec.RefLocal:
		v := toCty(e.locals[r.Name])
		if e.secretLoc[r.Name] {
			v = v.Mark(sensitive)
		}
		b.setLocal(r.Name, v)
		return nil, true
	case spec.RefStack:
		if r.Name == "" && r.NameExpr != nil {
			return e.computedStack(t, r), false
		}
		return nil, false
	case spec.RefData:
		return nil, false
	}
	return e.resourceRef(r), false
}

// computedStack returns r, a stack[EXPR].outputs.X, with its name: EXPR
// evaluated with the variables and locals (nil, keeping r, while one it
// uses has no value).
func (e *expander) computedStack(_ *spec.Template, r *spec.Ref) *spec.Ref {
	vars, locals := map[string]cty.Value{}, map[string]cty.Value{}
	for _, tr := range r.NameExpr.Variables() {
		name := ""
		if len(tr) > 1 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				name = a.Name
			}
		}
		switch tr.RootName() {
		case "var":
			if e.sensitive[name] {
				e.add(r.Pos, "%s: a stack's name cannot use the sensitive variable %q: it is shown in clear", r, name)
				return nil
			}
			if e.unknown[name] {
				return nil
			}
			vars[name] = toCty(e.vars[name])
		case "local":
			if e.secretLoc[name] {
				e.add(r.Pos, "%s: a stack's name cannot use local %q: it uses a sensitive value, and the name is shown in clear", r, name)
				return nil
			}
			if !Known(e.locals[name]) {
				return nil
			}
			locals[name] = toCty(e.locals[name])
		default:
			e.add(r.Pos, "%s: a stack's name can use only variables and locals, not %s", r, tr.RootName())
			return nil
		}
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars), "local": cty.ObjectVal(locals)}, Functions: spec.Functions()}
	v, diags := r.NameExpr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
		msg := "it is not a string"
		if diags.HasErrors() {
			msg = diags[0].Summary
		}
		e.add(r.Pos, "%s: the stack's name cannot be computed: %s", r, msg)
		return nil
	}
	name := v.AsString()
	if !spec.ValidStackName(name) {
		e.add(r.Pos, "%s: stack %q is not a valid stack name: must match %s", r, name, spec.StackNamePattern)
		return nil
	}
	c := *r
	c.Name = name
	return &c
}

func (e *expander) problem(p *spec.Problem) { e.probs = append(e.probs, *p) }

// keepsUnknown: an expression whose value is not known (it uses a variable
// with no value) stays one, as ExpandUnknown says.
func (e *expander) keepsUnknown() bool { return len(e.unknown) > 0 }

// interpolable reports a list or map variable with no value written inside
// a longer string, as interpolating its value would.
func (e *expander) interpolable(t *spec.Template, r *spec.Ref) {
	v, ok := e.s.Variable(r.Name)
	if !ok || t == nil || t.Single() != nil || (v.Type != spec.VarList && v.Type != spec.VarMap) {
		return
	}
	e.add(r.Pos, "%s is a %s and cannot be part of a string (use it alone, as the whole value, to pass the %s)", r, v.Type, v.Type)
}

// ctyType is the type of a value of a variable declared with type t.
func ctyType(t spec.VarType) cty.Type {
	switch t {
	case spec.VarNumber:
		return cty.Number
	case spec.VarBool:
		return cty.Bool
	case spec.VarList:
		return cty.List(cty.DynamicPseudoType)
	case spec.VarMap:
		return cty.Map(cty.DynamicPseudoType)
	}
	return cty.String
}

func (e *expander) derived(v any) { e.secrets = append(e.secrets, v) }

// describe names a value's kind for messages, never quoting it.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a bool"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("a %T", v)
}

// clip cuts s to 64 bytes for a message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	n := 64
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return strings.TrimSpace(s[:n]) + "..."
}
