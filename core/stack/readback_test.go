package stack_test

import (
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
		reads   int // the Reads by id the teardown made
	}{
		{name: "a read-back would say gone", back: func(string) *providers.ReadResponse { return &providers.ReadResponse{} }, reads: 3},
		{name: "a read-back would say still there", back: func(name string) *providers.ReadResponse {
			return &providers.ReadResponse{Exists: true, ID: "x"}
		}, reads: 3},
		{name: "none", back: func(string) *providers.ReadResponse { return nil }, reads: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			sp := mkSpec(t, res{name: "net", typ: "network"})
			e.mustApply(t, sp)
			e.w.mu.Lock()
			e.w.deleteBack, e.w.readsByID = tt.back, 0
			e.w.mu.Unlock()
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
			// Two before the delete (the pre-flight ownership read and the
			// Check's fresh one), and Verify's.
			if e.w.readsByID != tt.reads {
				t.Errorf("Reads by id %d, want %d", e.w.readsByID, tt.reads)
			}
			if len(e.w.Deletes()) != 1 {
				t.Errorf("deletes %v, want one", e.w.Deletes())
			}
		})
	}
}
