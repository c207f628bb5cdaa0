package stack

import (
	"maps"
	"slices"

	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
)

// OutputValue is one output as `bulwark output` shows it.
type OutputValue struct {
	Name        string `json:"name"`
	Value       any    `json:"value"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive"`
}

// ShowOutput is o as shown: masked when sensitive, unless reveal.
func ShowOutput(name string, o state.Output, reveal bool) OutputValue {
	v := OutputValue{Name: name, Value: o.Value, Description: o.Description, Sensitive: o.Sensitive}
	if o.Sensitive && !reveal {
		v.Value = secrets.Mask
	}
	return v
}

// evalOutputs evaluates the spec's outputs from what st records, after a
// successful run. An output derived from a secret is sensitive whether or
// not the spec says so (Terraform refuses such an output unless it is
// marked; bulwark marks it, so nothing is shown in clear). An output whose
// value cannot be known (a resource it names is not recorded) or cannot be
// formed is left out, and said so: the run has succeeded, and an output
// never undoes it.
func (s *session) evalOutputs(st *state.State) map[string]state.Output {
	if len(s.sp.Outputs) == 0 {
		return nil
	}
	out := map[string]state.Output{}
	for _, o := range s.sp.Outputs {
		v, known, err := resolve.Value(o.Value, stateLookup(st))
		switch {
		case err != nil:
			s.prog.printf("warning: output %s: %v\n", o.Name, s.opts.Redactor.Error(err))
			continue
		case !known:
			s.prog.printf("warning: output %s: a resource it references is not recorded; it is left out\n", o.Name)
			continue
		}
		out[o.Name] = state.Output{Value: v, Description: o.Description, Sensitive: o.Sensitive || s.holdsSecret(v)}
	}
	return out
}

// ShownOutputs are st's outputs as printed after an apply, sorted by name,
// sensitive ones masked.
func ShownOutputs(st *state.State) []OutputValue {
	var out []OutputValue
	for _, n := range slices.Sorted(maps.Keys(st.Outputs)) {
		out = append(out, ShowOutput(n, st.Outputs[n], false))
	}
	return out
}

// variableValues are the values of the run's variables, as its revision
// records them (nil when the spec declares none).
func (s *session) variableValues() map[string]any {
	if len(s.sp.Values) == 0 {
		return nil
	}
	return maps.Clone(s.sp.Values)
}

// sensitiveVariableNames names the spec's sensitive variables, sorted.
func (s *session) sensitiveVariableNames() []string {
	var out []string
	for _, v := range s.sp.Variables {
		if v.Sensitive {
			out = append(out, v.Name)
		}
	}
	slices.Sort(out)
	return out
}
