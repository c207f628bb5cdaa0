package stack

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

func TestMatchesTarget(t *testing.T) {
	for _, c := range []struct {
		target, name string
		want         bool
	}{
		{"web", "web", true},
		{"web", "web[a]", true},
		{"web[a]", "web[a]", true},
		{"web[a]", "web[b]", false},
		{"web[a]", "web", false},
		{"we", "web", false},
		{"web", "webby[a]", false},
		{"net", "net.subnet", true},
		{"net", "net.subnet[a]", true},
		{"net.subnet", "net.subnet[a]", true},
		{"net.subnet[a]", "net.subnet[a]", true},
		{"net.subnet[a]", "net.subnet[b]", false},
		{"net.subnet", "net.router", false},
		{"ne", "net.subnet", false},
	} {
		if got := matchesTarget(c.target, c.name); got != c.want {
			t.Errorf("matchesTarget(%q, %q) = %v, want %v", c.target, c.name, got, c.want)
		}
	}
}

func scopeSpec(t *testing.T) *spec.Spec {
	t.Helper()
	sp := &spec.Spec{File: "stack.yaml", Stack: "s"}
	add := func(name string, deps ...string) {
		sp.Resources = append(sp.Resources, &spec.Resource{Name: name, Type: "generic", DependsOn: deps})
	}
	add("vpc")
	add("net.subnet[a]", "vpc")
	add("net.subnet[b]", "vpc")
	add("web[a]", "net.subnet[a]")
	add("web[b]", "net.subnet[b]")
	add("lb", "web") // a template's name stands for every instance
	add("dns", "lb")
	add("other")
	return sp
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// The scope of an apply is what the targets name plus, transitively, what
// they depend on; of a teardown, what they name in the state plus what
// depends on them.
func TestTargetScope(t *testing.T) {
	sp := scopeSpec(t)
	empty := &state.State{Resources: map[string]*state.Resource{}}
	for _, c := range []struct {
		targets []string
		want    []string
	}{
		{[]string{"vpc"}, []string{"vpc"}},
		{[]string{"web[a]"}, []string{"net.subnet[a]", "vpc", "web[a]"}},
		{[]string{"web"}, []string{"net.subnet[a]", "net.subnet[b]", "vpc", "web[a]", "web[b]"}},
		{[]string{"net"}, []string{"net.subnet[a]", "net.subnet[b]", "vpc"}},
		{[]string{"net.subnet[b]"}, []string{"net.subnet[b]", "vpc"}},
		{[]string{"dns"}, []string{"dns", "lb", "net.subnet[a]", "net.subnet[b]", "vpc", "web[a]", "web[b]"}},
		{[]string{"other", "vpc"}, []string{"other", "vpc"}},
	} {
		got, err := targetScope(sp, empty, c.targets, false, false)
		if err != nil {
			t.Fatalf("%v: %v", c.targets, err)
		}
		if !slices.Equal(keys(got), c.want) {
			t.Errorf("apply scope of %v = %v, want %v", c.targets, keys(got), c.want)
		}
	}

	// A record the spec no longer has is covered only when targeted.
	st := &state.State{Resources: map[string]*state.Resource{}}
	for _, r := range sp.Resources {
		st.Resources[r.Name] = &state.Resource{Name: r.Name, Type: r.Type, DependsOn: r.DependsOn}
	}
	st.Resources["old"] = &state.Resource{Name: "old", Type: "generic"}
	if got, err := targetScope(sp, st, []string{"web[a]"}, false, false); err != nil || slices.Contains(keys(got), "old") {
		t.Errorf("apply scope of web[a] over a state with old: %v %v", keys(got), err)
	}
	if got, err := targetScope(sp, st, []string{"old"}, false, false); err != nil || !slices.Equal(keys(got), []string{"old"}) {
		t.Errorf("apply scope of old (gone from the spec): %v %v", keys(got), err)
	}
	// A removed target takes what the state records as depending on it and
	// is removed too (deleted first); a dependent the spec still has is not.
	st.Resources["older"] = &state.Resource{Name: "older", Type: "generic", DependsOn: []string{"old"}}
	st.Resources["other"].DependsOn = []string{"old"}
	if got, err := targetScope(sp, st, []string{"old"}, false, false); err != nil || !slices.Equal(keys(got), []string{"old", "older"}) {
		t.Errorf("apply scope of old with a removed dependent: %v %v, want [old older]", keys(got), err)
	}
	st.Resources["other"].DependsOn = nil

	// A teardown's: the target and what the state records as depending on
	// it (a template dependency "web" recorded by its instances' names).
	st.Resources["lb"].DependsOn = []string{"web[a]", "web[b]"}
	got, err := targetScope(sp, st, []string{"net.subnet[a]"}, true, false)
	if want := []string{"dns", "lb", "net.subnet[a]", "web[a]"}; err != nil || !slices.Equal(keys(got), want) {
		t.Errorf("teardown scope of net.subnet[a] = %v %v, want %v", keys(got), err, want)
	}

	var ue *UnknownTargetError
	if _, err := targetScope(sp, empty, []string{"nosuch"}, false, false); !errors.As(err, &ue) || ue.Address != "nosuch" {
		t.Errorf("unknown target: %v", err)
	}
	// A teardown's target must be recorded: the spec alone names nothing
	// there is to delete.
	if _, err := targetScope(sp, empty, []string{"vpc"}, true, false); !errors.As(err, &ue) {
		t.Errorf("teardown target not in the state: %v", err)
	}
	// A resumed run's target that its first part deleted matches nothing
	// now: not an error, and nothing else is covered.
	if got, err := targetScope(sp, empty, []string{"vpc"}, true, true); err != nil || len(got) != 0 {
		t.Errorf("lenient teardown scope of a deleted target: %v %v, want empty", keys(got), err)
	}
}
