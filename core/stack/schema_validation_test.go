package stack_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A provider whose validation is its schema (Capabilities.SchemaValidation)
// is never asked to validate: not by the plan, not by an apply's Checks of
// resolved references, not by an update. One with a validation of its own
// is asked once per distinct config. Either way the host's schema check
// still refuses a bad config, at its line, before anything is made.
func TestSchemaValidatedProvidersAreNotAskedToValidate(t *testing.T) {
	// Six resources, three distinct configs (a, b and c share one; d and
	// e another), and one whose zone is another's id, known only at apply.
	rs := []res{
		{name: "a", typ: "generic", size: 1}, {name: "b", typ: "generic", size: 1}, {name: "c", typ: "generic", size: 1},
		{name: "d", typ: "generic", size: 2}, {name: "e", typ: "generic", size: 2},
		{name: "net", typ: "network"},
		{name: "vm", typ: "compute", zone: `"${net.id}"`, deps: []string{"net"}},
	}
	for _, tc := range []struct {
		name       string
		schemaOnly bool
		want       int // validations by the first apply
	}{
		// a, d, net, vm as planned (its zone left out) and vm resolved.
		{"own validation", false, 5},
		{"schema only", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.schemaOnly {
				e.w.SchemaValidated()
			}
			if _, err := stack.Plan(e.ctx, mkSpec(t, rs...), e.opts()); err != nil {
				t.Fatal(err)
			}
			if got := len(e.w.Validations()); tc.schemaOnly && got != 0 || !tc.schemaOnly && got != 4 {
				t.Errorf("a plan made %d validations %v (want %d)", got, e.w.Validations(), map[bool]int{true: 0, false: 4}[tc.schemaOnly])
			}
			e.w.mu.Lock()
			e.w.validations = nil
			e.w.mu.Unlock()
			e.mustApply(t, mkSpec(t, rs...))
			if got := e.w.Validations(); len(got) != tc.want {
				t.Errorf("the apply made %d validations %v, want %d", len(got), got, tc.want)
			}
			if got := sorted(e.w.Validations()); !tc.schemaOnly && !slices.Equal(got, []string{"a", "d", "net", "vm", "vm"}) {
				t.Errorf("the apply validated %v, want a, d, net and vm twice (planned, then resolved): one call per distinct config", got)
			}
			// A config the schema refuses is refused by the host, at
			// its line, with no call either way.
			e.w.mu.Lock()
			e.w.validations = nil
			e.w.mu.Unlock()
			bad := append(slices.Clone(rs), res{name: "f", typ: "generic", size: "big"})
			_, err := stack.Plan(e.ctx, mkSpec(t, bad...), e.opts())
			var ps spec.Problems
			if !errors.As(err, &ps) || !strings.Contains(err.Error(), "stack.yaml:") || !strings.Contains(err.Error(), `"size"`) {
				t.Fatalf("plan of a string size: %v, want a problem at the size's line", err)
			}
			if got := e.w.Validations(); len(got) != 0 {
				t.Errorf("a spec the schema refuses was validated by the provider: %v", got)
			}
		})
	}
}
