package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/stack"
)

// TestValidationRememberedAcrossOperations: a config the provider
// validated with nothing to say when its resource was created or changed
// is not validated again by a later operation while the provider's
// version, the type and the config are the same; any of them changing, or
// the provider having had something to say, asks again.
func TestValidationRememberedAcrossOperations(t *testing.T) {
	e := newEnv(t)
	v1 := []res{{name: "a", typ: "generic", size: 1}, {name: "b", typ: "generic", size: 2}}
	e.mustApply(t, mkSpec(t, v1...))
	if st := e.state(t, "s"); st.Resources["a"].Validated == "" || !strings.HasPrefix(st.Resources["a"].Validated, "v1:") {
		t.Fatalf("a's record remembers no validation: %+v", st.Resources["a"])
	}
	asked := func(do func()) []string {
		t.Helper()
		e.w.mu.Lock()
		e.w.validations = nil
		e.w.mu.Unlock()
		do()
		e.w.mu.Lock()
		defer e.w.mu.Unlock()
		out := slices.Clone(e.w.validations)
		slices.Sort(out)
		return out
	}
	plan := func(rs []res) func() {
		return func() {
			if _, err := stack.Plan(e.ctx, mkSpec(t, rs...), e.opts()); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply := func(rs []res) func() { return func() { e.mustApply(t, mkSpec(t, rs...)) } }

	if got := asked(apply(v1)); len(got) != 0 {
		t.Errorf("a no-op apply validated %v again, want none", got)
	}
	if got := asked(plan(v1)); len(got) != 0 {
		t.Errorf("a plan validated %v again, want none", got)
	}
	// b's config changes: b alone is asked, and its update remembers the
	// new config.
	v2 := []res{{name: "a", typ: "generic", size: 1}, {name: "b", typ: "generic", size: 3}}
	// (The update's verify step asks each provider about its first
	// resource again, that it answers now: a, once.)
	if got := asked(apply(v2)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("an update of b validated %v, want [a b]: b, and a once by the verify step", got)
	}
	if got := asked(plan(v2)); len(got) != 0 {
		t.Errorf("after b's update a plan validated %v, want none", got)
	}
	// A new version of the provider: everything is asked again.
	e.w.mu.Lock()
	e.w.version = "0.0.2"
	e.w.mu.Unlock()
	if got := asked(plan(v2)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("with a new provider version a plan validated %v, want [a b]", got)
	}
	// A config the provider warns about is asked about every time (its
	// warning is said every time).
	e.w.mu.Lock()
	e.w.version, e.w.warnOn = "", 7
	e.w.mu.Unlock()
	v3 := []res{{name: "a", typ: "generic", size: 7}, {name: "b", typ: "generic", size: 3}}
	if got := asked(apply(v3)); !slices.Equal(got, []string{"a", "a"}) {
		t.Errorf("an update of a to a config with a warning validated %v, want [a a]: a, and a again by the verify step", got)
	}
	if st := e.state(t, "s"); st.Resources["a"].Validated != "" {
		t.Errorf("a's config drew a warning, yet its record remembers it: %q", st.Resources["a"].Validated)
	}
	if got := asked(plan(v3)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("a plan validated %v, want [a] (its warning said again)", got)
	}
	if !strings.Contains(e.out.String(), "size is unusual") {
		t.Errorf("the warning was not said:\n%s", e.out)
	}
	// `validate` always asks.
	if got := asked(func() {
		if err := stack.Validate(e.ctx, mkSpec(t, v3...), e.opts()); err != nil {
			t.Fatal(err)
		}
	}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("validate asked about %v, want [a b]", got)
	}
}
