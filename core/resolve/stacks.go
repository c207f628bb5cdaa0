package resolve

import (
	"slices"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// StackOutputs are the outputs read from other stacks on the same backend:
// stack name -> output name -> value.
type StackOutputs map[string]map[string]any

// StackRefs returns the ${stack.NAME.outputs.X} references of the resource
// configs and outputs of s, each stack and output once, in the order they
// are first met (each at its first place): what a plan reads from the
// other stacks.
func StackRefs(s *spec.Spec) []*spec.Ref {
	var out []*spec.Ref
	seen := map[[2]string]bool{}
	fn := func(ref *spec.Ref) {
		k := [2]string{ref.Name, ref.Attr}
		if ref.Kind == spec.RefStack && !seen[k] {
			seen[k] = true
			out = append(out, ref)
		}
	}
	for _, r := range s.Resources {
		walkRefs(r.Config, fn)
	}
	for _, o := range s.Outputs {
		walkRefs(o.Value, fn)
	}
	return out
}

// SubstituteStacks returns a copy of the concrete spec s in which every
// ${stack.NAME.outputs.X} of resource configs and outputs is replaced by
// the value read, as SubstituteData does for data. sensitive lists, by
// stack, the outputs that are secrets: a value an expression computes
// from one is added to the result's Secrets. s is not changed; a stack or
// output not in values is a problem positioned at the reference.
func SubstituteStacks(s *spec.Spec, values StackOutputs, sensitive map[string][]string) (*spec.Spec, error) {
	if len(StackRefs(s)) == 0 {
		return s, nil
	}
	d := &stackSubst{values: values, sensitive: sensitive}
	c := *s
	c.Resources = make([]*spec.Resource, len(s.Resources))
	for i, r := range s.Resources {
		cr := *r
		cr.Config = substValue(d, r.Config).(map[string]any)
		c.Resources[i] = &cr
	}
	c.Outputs = make([]*spec.Output, len(s.Outputs))
	for i, o := range s.Outputs {
		co := *o
		co.Value = substValue(d, o.Value)
		c.Outputs[i] = &co
	}
	if len(d.probs) > 0 {
		return nil, d.probs
	}
	c.Secrets = append(slices.Clone(s.Secrets), d.secrets...)
	return &c, nil
}

type stackSubst struct {
	values    StackOutputs
	sensitive map[string][]string
	probs     spec.Problems
	secrets   []any
}

// substValue substitutes st's references in v (templates anywhere in maps
// and lists).
func substValue(st stage, v any) any {
	switch v := v.(type) {
	case *spec.Template:
		return substTemplate(st, v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range sortedKeys(v) {
			out[k] = substValue(st, v[k])
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = substValue(st, e)
		}
		return out
	}
	return v
}

// lookup returns output ref.Attr of stack ref.Name, recording a problem
// when it was not read.
func (d *stackSubst) lookup(t *spec.Template, ref *spec.Ref) (any, bool) {
	outs, ok := d.values[ref.Name]
	if !ok {
		d.probs = append(d.probs, *problem(t, ref, "%s: stack %q was not read", ref, ref.Name))
		return nil, false
	}
	v, ok := outs[ref.Attr]
	if !ok {
		d.probs = append(d.probs, *problem(t, ref, "%s: stack %q has no output %q", ref, ref.Name, ref.Attr))
		return nil, false
	}
	return v, true
}

func (d *stackSubst) refValue(t *spec.Template, refp **spec.Ref) (any, bool) {
	ref := *refp
	if ref.Kind != spec.RefStack {
		return nil, false
	}
	v, _ := d.lookup(t, ref)
	return clone(v), true
}

func (d *stackSubst) bindRef(t *spec.Template, b *binding, ref *spec.Ref, _ string) (*spec.Ref, bool) {
	if ref.Kind != spec.RefStack {
		return nil, false
	}
	raw, _ := d.lookup(t, ref)
	v := toCty(raw)
	if slices.Contains(d.sensitive[ref.Name], ref.Attr) {
		v = v.Mark(sensitive)
	}
	b.setStack(ref.Name, ref.Attr, v)
	return nil, true
}

func (d *stackSubst) problem(p *spec.Problem) { d.probs = append(d.probs, *p) }

func (d *stackSubst) derived(v any) { d.secrets = append(d.secrets, v) }
