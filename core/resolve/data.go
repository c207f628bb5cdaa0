package resolve

import (
	"slices"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// DataValues are what the data entries read: entry name -> attribute ->
// value.
type DataValues map[string]map[string]any

// SubstituteData returns a copy of the concrete spec s in which every
// ${data.NAME.ATTR} of resource configs and outputs is replaced by what
// NAME read (an attribute it did not return is null), as a variable is by
// Expand: the planner then sees only resource references. A data
// reference inside a longer string is interpolated as Config does. s is
// not changed; every problem (a value that cannot be interpolated, an entry
// that was not read) is reported, positioned at the reference.
func SubstituteData(s *spec.Spec, values DataValues) (*spec.Spec, error) {
	return SubstituteDataSensitive(s, values, nil)
}

// SubstituteDataSensitive is SubstituteData where sensitive lists, by
// entry, the attributes that are secrets: a value an expression computes
// from one (${upper(data.creds.token)}) is added to the result's Secrets.
func SubstituteDataSensitive(s *spec.Spec, values DataValues, sensitive map[string][]string) (*spec.Spec, error) {
	if len(s.Data) == 0 {
		return s, nil
	}
	d := &dataSubst{values: values, sensitive: sensitive}
	c := *s
	c.Resources = make([]*spec.Resource, len(s.Resources))
	for i, r := range s.Resources {
		cr := *r
		cr.Config = d.value(r.Config).(map[string]any)
		c.Resources[i] = &cr
	}
	c.Outputs = make([]*spec.Output, len(s.Outputs))
	for i, o := range s.Outputs {
		co := *o
		co.Value = d.value(o.Value)
		c.Outputs[i] = &co
	}
	if len(d.probs) > 0 {
		return nil, d.probs
	}
	c.Secrets = append(slices.Clone(s.Secrets), d.secrets...)
	return &c, nil
}

// DataConfig returns the config of data entry d with the references to the
// entries it depends on replaced by what they read: the config its
// provider is asked to read with.
func DataConfig(d *spec.Data, values DataValues) (map[string]any, error) {
	ds := &dataSubst{values: values}
	out := ds.value(d.Config).(map[string]any)
	if len(ds.probs) > 0 {
		return nil, ds.probs
	}
	return out, nil
}

// DataRefs returns the names of the data entries v references, each once,
// in the order they first appear (map keys in sorted order).
func DataRefs(v any) []string {
	var out []string
	seen := map[string]bool{}
	walkRefs(v, func(ref *spec.Ref) {
		if ref.Kind == spec.RefData && !seen[ref.Name] {
			seen[ref.Name] = true
			out = append(out, ref.Name)
		}
	})
	return out
}

type dataSubst struct {
	values    DataValues
	sensitive map[string][]string
	probs     spec.Problems
	secrets   []any
}

func (d *dataSubst) value(v any) any {
	switch v := v.(type) {
	case *spec.Template:
		return d.template(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range sortedKeys(v) {
			out[k] = d.value(v[k])
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = d.value(e)
		}
		return out
	}
	return v
}

// refValue returns the value of a data reference (a copy), or false for
// any other reference.
func (d *dataSubst) refValue(t *spec.Template, refp **spec.Ref) (any, bool) {
	ref := *refp
	if ref.Kind != spec.RefData {
		return nil, false
	}
	attrs, ok := d.values[ref.Name]
	if !ok {
		d.probs = append(d.probs, *problem(t, ref, "%s: data %q was not read", ref, ref.Name))
		return nil, true
	}
	return clone(attrs[ref.Attr]), true
}

func (d *dataSubst) bindRef(t *spec.Template, b *binding, ref *spec.Ref, _ string) (*spec.Ref, bool) {
	if ref.Kind != spec.RefData {
		return nil, false
	}
	attrs, ok := d.values[ref.Name]
	if !ok {
		d.probs = append(d.probs, *problem(t, ref, "%s: data %q was not read", ref, ref.Name))
		return nil, true
	}
	v := toCty(attrs[ref.Attr])
	if slices.Contains(d.sensitive[ref.Name], ref.Attr) {
		v = v.Mark(sensitive)
	}
	b.setData(ref.Name, ref.Attr, v)
	return nil, true
}

func (d *dataSubst) problem(p *spec.Problem) { d.probs = append(d.probs, *p) }

func (d *dataSubst) derived(v any) { d.secrets = append(d.secrets, v) }

func (d *dataSubst) template(t *spec.Template) any { return substTemplate(d, t) }
