package stack

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
