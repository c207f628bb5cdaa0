package stack_test

import (
	"errors"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// keylessEnv is an env whose providers behave as Terraform-protocol
// adapters: no key at all, a Read by id answers private data of its own
// (the envelope), and a Delete answers, unasked, the read-back of a destroy
// that left nothing (Verify takes it: no Read after a Delete).
func keylessEnv(t *testing.T) *env {
	e := newEnv(t)
	asAdapter(e, true)
	return e
}

func asAdapter(e *env, keyless bool) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	e.w.keyless, e.w.readsAnswerPrivate, e.w.unasked = keyless, true, true
	e.w.deleteBack = func(string) *providers.ReadResponse { return &providers.ReadResponse{} }
}

func (e *env) readsByID() int {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	n := e.w.readsByID
	e.w.readsByID = 0
	return n
}

// A teardown of a keyless provider's resources reads each once: its delete
// step's Check, right before its Delete, which destroys from that read. The
// ownership check before the first delete reads none of them (it could
// refuse nothing: such a provider reports no key); one of bulwark's own
// providers is still read there too.
func TestKeylessTeardownReadsEachResourceOnce(t *testing.T) {
	for _, keyless := range []bool{true, false} {
		name := "own-protocol"
		if keyless {
			name = "keyless"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			asAdapter(e, keyless)
			sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "network"}, res{name: "c", typ: "compute", deps: []string{"a"}})
			e.mustApply(t, sp)
			e.readsByID()
			first := -1 // the Reads by id made before the first Delete
			e.w.OnDelete(func(string) {
				e.w.mu.Lock()
				defer e.w.mu.Unlock()
				if first < 0 {
					first = e.w.readsByID
				}
			})
			r, err := e.teardown(sp)
			if err != nil || r.Outcome != engine.Succeeded {
				t.Fatalf("teardown: %v, %v", resErr(r), err)
			}
			got := e.readsByID()
			if keyless && got != 3 {
				t.Errorf("keyless teardown made %d Reads by id, want 3 (one per resource)", got)
			}
			// The ownership check's 3, all before the first Delete; then
			// each Check's, unless the ownership check's read of it ended
			// so recently that it stands in (on a loaded machine, a slow
			// read often does: all three may).
			if !keyless && (first < 3 || got > 6) {
				t.Errorf("own-protocol teardown made %d Reads by id, %d before the first Delete: want the ownership check's 3 before it, and its Checks' (3 to 6 in all)", got, first)
			}
			if names := e.w.Names(); len(names) != 0 {
				t.Errorf("left in the world: %v", names)
			}
			for _, d := range e.w.Deletes() {
				if keyless && (!d.Observed || d.Private != "read "+d.ID) {
					t.Errorf("delete of %s: observed %v, private %q: want the Check's read", d.Name, d.Observed, d.Private)
				}
			}
		})
	}
}

// Without the ownership check's read, a keyless resource whose read fails
// is still never deleted: its step's Check fails before its Delete, and
// what depends on nothing else is torn down around it.
func TestKeylessTeardownDeletesNothingItCouldNotRead(t *testing.T) {
	e := keylessEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "network"})
	e.mustApply(t, sp)
	e.w.FailReadsByID("a")
	r, err := e.teardown(sp)
	if err == nil && r.Outcome == engine.Succeeded {
		t.Fatal("teardown succeeded though a could not be read")
	}
	for _, d := range e.w.Deletes() {
		if d.Name == "a" {
			t.Fatalf("a Delete of a, which could not be read, was sent: %+v", d)
		}
	}
	if e.w.ByName("a") == nil {
		t.Fatal("a was deleted")
	}
	if got := e.state(t, "s").Resources["a"]; got == nil {
		t.Fatal("a is no longer recorded: the state forgot what it could not delete")
	}
	if e.w.ByName("b") != nil {
		t.Error("b, readable, was not torn down")
	}
	// Once it reads again, the next teardown finishes the job.
	e.w.ClearFaults()
	if r, err := e.teardown(sp); err != nil || r.Outcome != engine.Succeeded {
		t.Fatalf("second teardown: %v, %v", resErr(r), err)
	}
	if names := e.w.Names(); len(names) != 0 {
		t.Errorf("left in the world: %v", names)
	}
}

// A keyless resource deleted out of band between the teardown's start and
// its step is found gone by its Check (which reads now, nothing earlier
// stands in for it) and no Delete is sent for it; a protected one is
// refused whole before any read or delete, with or without the ownership
// check's read.
func TestKeylessTeardownSkipsWhatIsGoneAndRefusesWhatIsProtected(t *testing.T) {
	t.Run("gone", func(t *testing.T) {
		e := keylessEnv(t)
		sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
		e.mustApply(t, sp)
		e.w.OnDelete(func(name string) {
			if name == "b" {
				e.w.Remove("a")
			}
		})
		r, err := e.teardown(sp)
		if err != nil || r.Outcome != engine.Succeeded {
			t.Fatalf("teardown: %v, %v", resErr(r), err)
		}
		for _, d := range e.w.Deletes() {
			if d.Name == "a" {
				t.Fatalf("a Delete of a, gone already, was sent: %+v", d)
			}
		}
		if got := e.state(t, "s").Resources["a"]; got != nil {
			t.Errorf("a, found gone, is still recorded: %+v", got)
		}
	})
	t.Run("protected", func(t *testing.T) {
		e := keylessEnv(t)
		sp := mkSpec(t, res{name: "vault", typ: "s3_bucket", prot: "protected"}, res{name: "b", typ: "network"})
		e.mustApply(t, sp)
		e.readsByID()
		r, err := e.teardown(sp)
		var refused *plan.RefusedError
		if !errors.As(err, &refused) || stack.ExitCode(r, err) != stack.ExitRefused {
			t.Fatalf("teardown of a protected keyless resource: exit %d, err %v", stack.ExitCode(r, err), err)
		}
		if d := e.w.Deletes(); len(d) != 0 {
			t.Fatalf("Deletes sent: %+v", d)
		}
		if e.w.ByName("vault") == nil || e.w.ByName("b") == nil {
			t.Fatal("something was deleted by a refused teardown")
		}
	})
}
