package stack

import (
	"reflect"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// teardownDependents bridges a dependency the state no longer records
// through the spec, and falls back to the records alone where a bridge
// would close a cycle (a spec edited since), never handing the engine one.
func TestTeardownDependents(t *testing.T) {
	rec := func(deps ...string) *state.Resource { return &state.Resource{DependsOn: deps} }
	sr := func(name string, deps ...string) *spec.Resource { return &spec.Resource{Name: name, DependsOn: deps} }
	tests := []struct {
		name string
		st   map[string]*state.Resource
		sp   []*spec.Resource
		want map[string][]string
	}{
		{
			name: "all recorded",
			st:   map[string]*state.Resource{"db": rec(), "mid": rec("db"), "top": rec("mid")},
			sp:   []*spec.Resource{sr("db"), sr("mid", "db"), sr("top", "mid")},
			want: map[string][]string{"db": {"mid"}, "mid": {"top"}},
		},
		{
			name: "a gap bridged through the spec",
			st:   map[string]*state.Resource{"db": rec(), "net": rec(), "top": rec("mid")},
			sp:   []*spec.Resource{sr("db"), sr("net"), sr("mid", "db", "gone"), sr("gone", "net"), sr("top", "mid")},
			want: map[string][]string{"db": {"top"}, "net": {"top"}},
		},
		{
			name: "a gap the spec no longer has",
			st:   map[string]*state.Resource{"db": rec(), "top": rec("mid")},
			sp:   []*spec.Resource{sr("db")},
			want: map[string][]string{},
		},
		{
			name: "a bridge that would close a cycle",
			st:   map[string]*state.Resource{"a": rec("x"), "b": rec("a")},
			sp:   []*spec.Resource{sr("x", "b")},
			want: map[string][]string{"a": {"b"}, "x": {"a"}}, // the records alone, as dependents(st)
		},
		{
			name: "a bridge back to itself",
			st:   map[string]*state.Resource{"a": rec("x")},
			sp:   []*spec.Resource{sr("x", "a")},
			want: map[string][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := teardownDependents(&state.State{Resources: tt.st}, &spec.Spec{Resources: tt.sp})
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
