package stack_test

import (
	"testing"
)

// TestReplaceCleanupAndSoftOrderMakeNoCycle: a replace prefers to wait for
// the removal of what the state records as depending on it (x waits for
// r), while the cleanup phase moves a removal that a set-aside object
// depended on after every main step (r waits for y's old object, and so
// for x). Together they would make a cycle; the preferred order gives way
// and the run succeeds, with state and world agreeing.
func TestReplaceCleanupAndSoftOrderMakeNoCycle(t *testing.T) {
	e := newEnv(t)
	e.w.Coexist()
	e.mustApply(t, mkSpec(t,
		res{name: "x", typ: "network", zone: "a"},
		res{name: "r", typ: "generic", deps: []string{"x"}},
		res{name: "y", typ: "generic", zone: "a", deps: []string{"r"}}))
	e.mustApply(t, mkSpec(t,
		res{name: "x", typ: "network", zone: "b"},
		res{name: "y", typ: "generic", zone: "b"}))
	st := e.state(t, "s")
	if st.Resources["r"] != nil {
		t.Errorf("r is still recorded after it left the spec")
	}
	if err := agree(st, e.w.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if d := deposedNames(e, t); len(d) != 0 {
		t.Errorf("deposed records left after a successful run: %v", d)
	}
}
