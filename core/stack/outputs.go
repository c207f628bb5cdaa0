package stack

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// OutputValue is one output as `bulwark output` shows it.
type OutputValue struct {
	Name        string `json:"name"`
	Value       any    `json:"value"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive"`
}

// ErrNoOutput is returned (wrapped) for an output the state does not hold.
var ErrNoOutput = errors.New("no such output")

// Outputs returns the outputs the stack's state holds (those of the last
// successful apply), sorted by name, from the state alone: no provider is
// started and no lock is taken. A sensitive output's value is
// secrets.Mask, except when name asks for it alone: then it is opened with
// the stack's key (as Terraform prints a sensitive output asked for by
// name), and the caller prints it where the person asked for it.
func Outputs(sp *spec.Spec, opts Options, name string) ([]OutputValue, error) {
	opts.defaults()
	s := &session{opts: opts, sp: sp, dir: StackDir(opts.StateDir, sp.Stack)}
	st, err := loadState(sp, opts)
	if err != nil {
		return nil, err
	}
	if name == "" {
		out := []OutputValue{}
		for _, n := range slices.Sorted(maps.Keys(st.Outputs)) {
			out = append(out, outputValue(n, st.Outputs[n], false))
		}
		return out, nil
	}
	o, ok := st.Outputs[name]
	if !ok {
		return nil, noOutput(sp, st, name)
	}
	if o.Sensitive {
		// Only this one needs its key: opened alone, so a listing works
		// without one.
		if st, err = s.loadOpened(); err != nil {
			return nil, err
		}
		o = st.Outputs[name]
	}
	return []OutputValue{outputValue(name, o, true)}, nil
}

// outputValue is o as shown: masked when sensitive, unless reveal.
func outputValue(name string, o state.Output, reveal bool) OutputValue {
	v := OutputValue{Name: name, Value: o.Value, Description: o.Description, Sensitive: o.Sensitive}
	if o.Sensitive && !reveal {
		v.Value = secrets.Mask
	}
	return v
}

// noOutput says why the state holds no output name: none applied yet, or
// not one the state knows (naming those it does).
func noOutput(sp *spec.Spec, st *state.State, name string) error {
	if len(st.Outputs) == 0 {
		return fmt.Errorf("output %q: %w: stack %s has no outputs recorded (they are recorded by a successful `bulwark apply`)", name, ErrNoOutput, sp.Stack)
	}
	return fmt.Errorf("output %q: %w in stack %s (it has %s)", name, ErrNoOutput, sp.Stack, strings.Join(slices.Sorted(maps.Keys(st.Outputs)), ", "))
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

// shownOutputs are st's outputs as printed after an apply, sorted by name,
// sensitive ones masked.
func shownOutputs(st *state.State) []OutputValue {
	var out []OutputValue
	for _, n := range slices.Sorted(maps.Keys(st.Outputs)) {
		out = append(out, outputValue(n, st.Outputs[n], false))
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
