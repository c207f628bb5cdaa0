package inspect

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// ErrNoOutput is returned (wrapped) for an output the state does not hold.
var ErrNoOutput = errors.New("no such output")

// Outputs returns the outputs the stack's state holds (those of the last
// successful apply), sorted by name, from the state alone: no provider is
// started and no lock is taken. A sensitive output's value is
// secrets.Mask, except when name asks for it alone: then it is opened with
// the stack's key (as Terraform prints a sensitive output asked for by
// name), and the caller prints it where the person asked for it.
func Outputs(sp *spec.Spec, opts stack.Options, name string) ([]stack.OutputValue, error) {
	st, err := stack.LoadState(sp, opts)
	if err != nil {
		return nil, err
	}
	if name == "" {
		out := stack.ShownOutputs(st)
		if out == nil {
			out = []stack.OutputValue{}
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
		if st, err = stack.LoadOpened(sp, opts); err != nil {
			return nil, err
		}
		o = st.Outputs[name]
	}
	return []stack.OutputValue{stack.ShowOutput(name, o, true)}, nil
}

// noOutput says why the state holds no output name: none applied yet, or
// not one the state knows (naming those it does).
func noOutput(sp *spec.Spec, st *state.State, name string) error {
	if len(st.Outputs) == 0 {
		return fmt.Errorf("output %q: %w: stack %s has no outputs recorded (they are recorded by a successful `bulwark apply`)", name, ErrNoOutput, sp.Stack)
	}
	return fmt.Errorf("output %q: %w in stack %s (it has %s)", name, ErrNoOutput, sp.Stack, strings.Join(slices.Sorted(maps.Keys(st.Outputs)), ", "))
}
