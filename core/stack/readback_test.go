package stack_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A step's Create asks for no read-back in its own call, even of a
// provider that offers one: the read would hold the write slot a second
// round trip. Its Verify reads by id, on a read slot, and fails the step
// (the apply rolls back) when what it reads is gone or differs from the
// spec, whatever a read-back would have said.
func TestVerifyReadsWhatTheCreateMade(t *testing.T) {
	tests := []struct {
		name    string
		gone    bool   // removed behind bulwark's back before Verify reads
		wantErr string // "": the apply succeeds
	}{
		{name: "agrees"},
		{name: "gone before Verify reads", gone: true, wantErr: "does not exist after create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			asked := false
			e.w.readBack = func(made *fakeResource) *providers.ReadResponse {
				asked = true
				return &providers.ReadResponse{Exists: true, ID: made.ID, Attributes: maps.Clone(made.Attrs)}
			}
			if tt.gone {
				e.w.OnCreate(func(name string) {
					// After the Create: at the first Read (Verify's).
					e.w.OnRead(func(name string) { e.w.Remove(name) })
				})
			}
			r, err := e.apply(mkSpec(t, res{name: "net", typ: "network", size: 2}))
			if err != nil {
				t.Fatal(err)
			}
			if asked {
				t.Error("a step's Create asked for a read-back")
			}
			if tt.wantErr == "" {
				if r.Outcome != engine.Succeeded {
					t.Fatalf("outcome %v: %v", r.Outcome, r.Err)
				}
			} else {
				if r.Outcome != engine.Compensated || stack.ExitCode(r, nil) != stack.ExitCompensated {
					t.Fatalf("outcome %v, exit %d: want the create rolled back", r.Outcome, stack.ExitCode(r, nil))
				}
				if r.Err == nil || !strings.Contains(r.Err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", r.Err, tt.wantErr)
				}
			}
			if e.w.readsByID != 1 {
				t.Errorf("Reads by id %d, want 1 (Verify's)", e.w.readsByID)
			}
		})
	}
}

// A teardown's Delete asks for no read-back in its own call: its Verify
// reads, while the deletes it unblocks read their ownership. Whatever a
// read-back would say, Verify's own read decides.
func TestTeardownVerifyChecksTheDeletesReadBack(t *testing.T) {
	tests := []struct {
		name    string
		back    func(name string) *providers.ReadResponse
		wantErr string
	}{
		{name: "a read-back would say gone", back: func(string) *providers.ReadResponse { return &providers.ReadResponse{} }},
		{name: "a read-back would say still there", back: func(name string) *providers.ReadResponse {
			return &providers.ReadResponse{Exists: true, ID: "x"}
		}},
		{name: "none", back: func(string) *providers.ReadResponse { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			sp := mkSpec(t, res{name: "net", typ: "network"})
			e.mustApply(t, sp)
			e.w.mu.Lock()
			e.w.deleteBack, e.w.readsByID = tt.back, 0
			e.w.mu.Unlock()
			before := -1 // the Reads by id made before the Delete
			e.w.OnDelete(func(string) {
				e.w.mu.Lock()
				defer e.w.mu.Unlock()
				before = e.w.readsByID
			})
			r, err := e.teardown(sp)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantErr == "" && r.Outcome != engine.Succeeded:
				t.Fatalf("outcome %v: %v", r.Outcome, r.Err)
			case tt.wantErr != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tt.wantErr)):
				t.Fatalf("outcome %v, error %v, want %q", r.Outcome, r.Err, tt.wantErr)
			}
			// Before the Delete: the ownership check's read, and the
			// Check's own unless that one ended so recently that it
			// stands in for it (observe.Reader.CheckRecorded: on a loaded
			// machine a slow read is often fresh enough). After the
			// Delete: Verify's, whatever a read-back would have said.
			e.w.mu.Lock()
			after := e.w.readsByID - before
			e.w.mu.Unlock()
			if before < 1 || before > 2 {
				t.Errorf("Reads by id before the Delete %d, want 1 or 2", before)
			}
			if after != 1 {
				t.Errorf("Reads by id after the Delete %d, want 1 (Verify's)", after)
			}
			if len(e.w.Deletes()) != 1 {
				t.Errorf("deletes %v, want one", e.w.Deletes())
			}
		})
	}
}

// A provider that answers its read-backs unasked (as a Terraform-protocol
// adapter does: the state its ApplyResourceChange returned, planned toward
// the config, costs it no call) has its Create's, Update's and Delete's
// read-back taken by the step's Verify instead of a Read by id: the apply,
// the update and the teardown each read nothing after their Execute. What
// the read-back says still decides: one whose plan changes something, or
// that finds the deleted resource still there, fails the Verify.
func TestVerifyTakesAReadBackGivenUnasked(t *testing.T) {
	planned := func(changes ...string) *providers.Planned {
		return &providers.Planned{Changes: append([]string{}, changes...), RequiresReplace: []string{}}
	}
	back := func(r *fakeResource, p *providers.Planned) *providers.ReadResponse {
		return &providers.ReadResponse{Exists: true, ID: r.ID, Attributes: maps.Clone(r.Attrs), Planned: p}
	}
	tests := []struct {
		name                  string
		createBack, upBack    *providers.Planned
		deleteBack            *providers.ReadResponse
		wantApply, wantUpdate string // "": succeeds
		wantTeardown          string
	}{
		{name: "agrees", createBack: planned(), upBack: planned(), deleteBack: &providers.ReadResponse{}},
		{name: "create's plan changes size", createBack: planned("size"), wantApply: "attributes size differ from the spec after create"},
		{name: "update's plan changes size", createBack: planned(), upBack: planned("size"), wantUpdate: "attributes size differ from the spec after update"},
		{name: "delete's read-back finds it", createBack: planned(), upBack: planned(), deleteBack: &providers.ReadResponse{Exists: true, ID: "x"}, wantTeardown: "still exists after delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.w.mu.Lock()
			e.w.unasked = true
			e.w.readBack = func(made *fakeResource) *providers.ReadResponse { return back(made, tt.createBack) }
			e.w.updateBack = func(r *fakeResource) *providers.ReadResponse { return back(r, tt.upBack) }
			e.w.deleteBack = func(string) *providers.ReadResponse { return tt.deleteBack }
			e.w.mu.Unlock()
			reads := func() int {
				e.w.mu.Lock()
				defer e.w.mu.Unlock()
				n := e.w.readsByID
				e.w.readsByID = 0
				return n
			}
			check := func(what string, r *stack.Result, err error, want string) bool {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				if want == "" {
					if r.Outcome != engine.Succeeded {
						t.Fatalf("%s: outcome %v: %v", what, r.Outcome, r.Err)
					}
					return true
				}
				if r.Outcome == engine.Succeeded || r.Err == nil || !strings.Contains(r.Err.Error(), want) {
					t.Fatalf("%s: outcome %v, error %v, want %q", what, r.Outcome, r.Err, want)
				}
				return false
			}
			r, err := e.apply(mkSpec(t, res{name: "net", typ: "network", size: 2}))
			if !check("apply", r, err, tt.wantApply) {
				return
			}
			if n := reads(); n != 0 {
				t.Errorf("the apply made %d Reads by id, want none (Verify took the read-back)", n)
			}
			sp := mkSpec(t, res{name: "net", typ: "network", size: 3})
			r, err = e.apply(sp)
			if !check("update", r, err, tt.wantUpdate) {
				return
			}
			// The plan's read, which the step's Check takes again; none
			// after the Update.
			if n := reads(); n != 1 {
				t.Errorf("the update made %d Reads by id, want 1 (the plan's)", n)
			}
			before := -1 // the teardown's Reads by id before its Delete
			e.w.OnDelete(func(string) {
				e.w.mu.Lock()
				defer e.w.mu.Unlock()
				before = e.w.readsByID
			})
			r, err = e.teardown(sp)
			check("teardown", r, err, tt.wantTeardown)
			// The pre-flight ownership read and the Check's own, unless
			// the first ended so recently that it stands in for it (see
			// TestTeardownVerifyChecksTheDeletesReadBack); none after the
			// Delete.
			if n := reads(); before < 1 || before > 2 || n != before {
				t.Errorf("the teardown made %d Reads by id, %d of them before the Delete: want 1 or 2, all before", n, before)
			}
		})
	}
}

// A teardown's Delete of a keyless provider (built for Terraform, whose
// destroy reads the resource first) is given what the step's Check read of
// it just before (DeleteRequest.Observed, with that read's private data),
// so that it need not read a second time; one of bulwark's own providers
// gets the recorded private data, as before.
func TestTeardownGivesAKeylessDeleteTheChecksRead(t *testing.T) {
	for _, keyless := range []bool{true, false} {
		t.Run(fmt.Sprintf("keyless=%v", keyless), func(t *testing.T) {
			e := newEnv(t)
			e.w.mu.Lock()
			e.w.keyless, e.w.readsAnswerPrivate = keyless, true
			e.w.mu.Unlock()
			sp := mkSpec(t, res{name: "net", typ: "network"})
			e.mustApply(t, sp)
			r, err := e.teardown(sp)
			if err != nil || r.Outcome != engine.Succeeded {
				t.Fatalf("teardown: %v, %v", r, err)
			}
			dels := e.w.Deletes()
			if len(dels) != 1 {
				t.Fatalf("deletes %v, want one", dels)
			}
			d := dels[0]
			read := "read " + d.ID
			if keyless && (!d.Observed || d.Private != read) {
				t.Errorf("keyless delete: observed %v, private %q: want the Check's read (%q)", d.Observed, d.Private, read)
			}
			if !keyless && (d.Observed || d.Private == read) {
				t.Errorf("delete of an own-protocol provider: observed %v, private %q: want the recorded private data", d.Observed, d.Private)
			}
		})
	}
}
