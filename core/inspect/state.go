package inspect

import (
	"fmt"
	"slices"

	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// StateList returns what the stack's state records, sorted by name. It
// takes no lock and starts no provider.
func StateList(sp *spec.Spec, opts stack.Options) ([]*state.Resource, error) {
	st, err := stack.LoadState(sp, opts)
	if err != nil {
		return nil, err
	}
	out := make([]*state.Resource, 0, len(st.Resources))
	for _, n := range st.Names() {
		out = append(out, masked(st.Resources[n]))
	}
	return out, nil
}

// masked is a record with its sensitive values (sealed in the state)
// shown as secrets.Mask, for printing.
func masked(r *state.Resource) *state.Resource {
	c := *r
	mask := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			if slices.Contains(r.Sensitive, k) {
				v = secrets.Mask
			}
			out[k] = v
		}
		return out
	}
	c.Config, c.Attributes, c.Prior = mask(r.Config), mask(r.Attributes), nil
	c.ID = stack.ShownID(r)
	return &c
}

// StateShow returns the record of one resource.
func StateShow(sp *spec.Spec, opts stack.Options, address string) (*state.Resource, error) {
	st, err := stack.LoadState(sp, opts)
	if err != nil {
		return nil, err
	}
	r := st.Resources[address]
	if r == nil {
		return nil, fmt.Errorf("%s: %w of stack %s%s", address, stack.ErrNotRecorded, sp.Stack, stack.InstancesHint(st, address))
	}
	return masked(r), nil
}
