package stack_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// verifyHold is a fake world's hooks for the tests of an early start: it
// knows which Creates have been called, and holds the first Read of dep
// made after dep's Create (its Verify's) until every name in waitFor has
// had its Create called (or a deadline passes, which fails the test);
// that Read then finds dep drifted when drift is set.
type verifyHold struct {
	t       *testing.T
	e       *env
	dep     string
	waitFor []string
	drift   bool

	mu       sync.Mutex
	created  map[string]bool
	verified bool // dep's Verify read returned
	// createdBeforeVerify are the Creates called before dep's Verify
	// read returned.
	createdBeforeVerify []string
	arrived             chan struct{} // closed when every waitFor Create was called
}

func holdVerify(t *testing.T, e *env, dep string, drift bool, waitFor ...string) *verifyHold {
	h := &verifyHold{t: t, e: e, dep: dep, waitFor: waitFor, drift: drift, created: map[string]bool{}, arrived: make(chan struct{})}
	if len(waitFor) == 0 {
		close(h.arrived)
	}
	e.w.OnCreate(func(name string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.created[name] = true
		if !h.verified {
			h.createdBeforeVerify = append(h.createdBeforeVerify, name)
		}
		if len(h.waitFor) > 0 && !slices.ContainsFunc(h.waitFor, func(n string) bool { return !h.created[n] }) {
			h.waitFor = nil
			close(h.arrived)
		}
	})
	e.w.OnRead(func(name string) {
		h.mu.Lock()
		verify := name == h.dep && h.created[h.dep] && !h.verified
		h.mu.Unlock()
		if !verify {
			return
		}
		select {
		case <-h.arrived:
		case <-time.After(10 * time.Second):
			t.Errorf("%s's Verify read waited 10s for the Creates of %v: they wait for it", h.dep, waitFor)
		}
		if h.drift {
			e.w.SetAttr(h.dep, "size", 99) // Verify finds it differs from the spec
		}
		h.mu.Lock()
		h.verified = true
		h.mu.Unlock()
	})
	return h
}

// An ephemeral resource created on a dependency starts its Create while
// the dependency's Verify still reads: that read is held until the
// dependent's Create has been called.
func TestEphemeralDependentStartsBeforeItsDependencyIsVerified(t *testing.T) {
	e := newEnv(t)
	holdVerify(t, e, "net", false, "app")
	sp := mkSpec(t, res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", deps: []string{"net"}})
	e.mustApply(t, sp)
	if got := e.w.Names(); !slices.Equal(got, []string{"app", "net"}) {
		t.Errorf("world %v, want app and net", got)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
}

// A durable or protected resource is never created on a dependency that is
// not verified yet (a rollback would keep it), nor is one whose own policy
// is not compensate (its failure would not undo it), nor one depending on a
// resource whose failure rolls nothing back.
func TestOnlyAnEphemeralCompensatedDependentStartsEarly(t *testing.T) {
	for _, tc := range []struct {
		name string
		dep  res
		app  res
		// hold: eph, an ephemeral sibling, starts early, so net's Verify
		// read is held until eph's Create is called: app has then been
		// past its Check as long. Where net's failure rolls nothing back,
		// eph waits too, and nothing is held (the engine's tests hold that
		// case exactly).
		hold bool
	}{
		{"durable", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", prot: "durable"}, true},
		{"protected", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", prot: "protected"}, true},
		{"on_failure continue", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", onFailure: "continue"}, true},
		{"on_failure abort", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", onFailure: "abort"}, true},
		{"intervention", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", intervention: true}, true},
		{"dependency continues", res{name: "net", typ: "network", size: 2, onFailure: "continue"}, res{name: "app", typ: "generic"}, false},
		{"dependency aborts", res{name: "net", typ: "network", size: 2, onFailure: "abort"}, res{name: "app", typ: "generic"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var h *verifyHold
			if tc.hold {
				h = holdVerify(t, e, "net", false, "eph")
			} else {
				h = holdVerify(t, e, "net", false)
			}
			app := tc.app
			app.deps = []string{"net"}
			e.mustApply(t, mkSpec(t, tc.dep, app, res{name: "eph", typ: "generic", deps: []string{"net"}}))
			h.mu.Lock()
			defer h.mu.Unlock()
			if slices.Contains(h.createdBeforeVerify, "app") || (!tc.hold && slices.Contains(h.createdBeforeVerify, "eph")) {
				t.Errorf("created before net was verified: %v", h.createdBeforeVerify)
			}
			if !h.created["app"] {
				t.Error("app was never created")
			}
		})
	}
}

// A dependency whose Verify fails rolls the run back: the ephemeral
// dependent that started early is deleted with it, and the durable and
// protected dependents, which waited for the Verify, were never created.
// Nothing is left in the world or the state.
func TestFailedVerifyLeavesNothingOfAnEarlyDependent(t *testing.T) {
	e := newEnv(t)
	h := holdVerify(t, e, "net", true, "eph")
	sp := mkSpec(t, res{name: "net", typ: "network", size: 2},
		res{name: "eph", typ: "generic", deps: []string{"net"}},
		res{name: "dur", typ: "generic", prot: "durable", deps: []string{"net"}},
		res{name: "prot", typ: "generic", prot: "protected", deps: []string{"net"}})
	r, err := e.apply(sp)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != engine.Compensated || stack.ExitCode(r, nil) != stack.ExitCompensated {
		t.Fatalf("outcome %v, exit %d (%v): want the apply rolled back", r.Outcome, stack.ExitCode(r, nil), r.Err)
	}
	if r.Err == nil || !strings.Contains(r.Err.Error(), "differ from the spec after create") {
		t.Errorf("error %v, want net's failed Verify", r.Err)
	}
	for _, c := range e.w.Creates() {
		if c.Name == "dur" || c.Name == "prot" {
			t.Errorf("%s (%s) was created on an unverified dependency", c.Name, c.Protection)
		}
	}
	h.mu.Lock()
	if !h.created["eph"] {
		t.Error("eph was never created: the test shows nothing")
	}
	h.mu.Unlock()
	if got := e.w.Names(); len(got) != 0 {
		t.Errorf("left in the world: %v", got)
	}
	if st := e.state(t, "s"); len(st.Resources) != 0 {
		t.Errorf("left in the state: %v", st.Names())
	}
	// eph is deleted before net, what it depends on.
	var deleted []string
	for _, d := range e.w.Deletes() {
		deleted = append(deleted, d.Name)
	}
	if ie, in := slices.Index(deleted, "eph"), slices.Index(deleted, "net"); ie < 0 || in < 0 || ie > in {
		t.Errorf("deletes %v: want eph, then net", deleted)
	}
}
