package stack

import (
	"sync"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// specIndex finds a spec's resources by name at O(1) (spec.Spec.Resource
// walks the list: called once per resource, that is O(N^2) per operation).
// A spec is not changed once parsed or expanded; the index is rebuilt when
// the session's spec is another one (a rollback swaps it) or its list was
// replaced.
type specIndex struct {
	mu     sync.Mutex
	sp     *spec.Spec
	first  *spec.Resource
	n      int
	byName map[string]*spec.Resource
}

// specResource is s.sp.Resource(name), indexed.
func (s *session) specResource(name string) (*spec.Resource, bool) {
	x := &s.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	var first *spec.Resource
	if len(s.sp.Resources) > 0 {
		first = s.sp.Resources[0]
	}
	if x.byName == nil || x.sp != s.sp || x.n != len(s.sp.Resources) || x.first != first {
		x.sp, x.n, x.first = s.sp, len(s.sp.Resources), first
		x.byName = make(map[string]*spec.Resource, len(s.sp.Resources))
		for _, r := range s.sp.Resources {
			if _, dup := x.byName[r.Name]; !dup { // the first, as Spec.Resource
				x.byName[r.Name] = r
			}
		}
	}
	r, ok := x.byName[name]
	return r, ok
}

// dependents maps each recorded resource to the recorded resources that
// depend on it, in name order: built once per operation, where a walk of
// the whole state per step would be O(N^2).
func dependents(st *state.State) map[string][]string {
	out := map[string][]string{}
	for _, name := range st.Names() {
		for _, d := range st.Resources[name].DependsOn {
			out[d] = append(out[d], name)
		}
	}
	return out
}
