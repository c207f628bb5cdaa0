package stack_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A provider that reads back what its Create made (in the Create's own
// call) has Verify compare that read instead of reading again: a read-back
// that says the resource is gone, or differs from the spec, fails the step
// as Verify's own read would (and the apply rolls back); one that agrees
// needs no more calls; a Create answered without one is verified by a Read.
func TestVerifyComparesTheCreatesReadBack(t *testing.T) {
	tests := []struct {
		name    string
		back    func(made *fakeResource) *providers.ReadResponse
		wantErr string // "": the apply succeeds
		reads   int    // the Reads by id Verify made
	}{
		{name: "agrees", back: func(made *fakeResource) *providers.ReadResponse {
			return &providers.ReadResponse{Exists: true, ID: made.ID, Attributes: maps.Clone(made.Attrs)}
		}},
		{name: "gone", back: func(made *fakeResource) *providers.ReadResponse {
			return &providers.ReadResponse{}
		}, wantErr: "does not exist after create"},
		{name: "drifted", back: func(made *fakeResource) *providers.ReadResponse {
			return &providers.ReadResponse{Exists: true, ID: made.ID, Attributes: map[string]any{"size": 99.0}}
		}, wantErr: "attributes size differ from the spec after create"},
		{name: "an error diagnostic", back: func(made *fakeResource) *providers.ReadResponse {
			return &providers.ReadResponse{Diagnostics: providers.Diagnostics{providers.Errorf("the read failed")}}
		}, reads: 1},
		{name: "none", back: func(*fakeResource) *providers.ReadResponse { return nil }, reads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.w.readBack = tt.back
			r, err := e.apply(mkSpec(t, res{name: "net", typ: "network", size: 2}))
			if err != nil {
				t.Fatal(err)
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
				if names := e.w.Names(); len(names) != 0 {
					t.Errorf("left in the world: %v", names)
				}
			}
			if e.w.readsByID != tt.reads {
				t.Errorf("Reads by id %d, want %d", e.w.readsByID, tt.reads)
			}
		})
	}
}

// A provider that reads back what its Delete removed has the teardown's
// Verify check that read: one that still finds the resource fails the step,
// saying so; one that finds nothing needs no more calls; none makes Verify
// read.
func TestTeardownVerifyChecksTheDeletesReadBack(t *testing.T) {
	tests := []struct {
		name    string
		back    func(name string) *providers.ReadResponse
		wantErr string
		reads   int // the Reads by id the teardown made
	}{
		{name: "gone", back: func(string) *providers.ReadResponse { return &providers.ReadResponse{} }, reads: 2},
		{name: "still there", back: func(name string) *providers.ReadResponse {
			return &providers.ReadResponse{Exists: true, ID: "x"}
		}, wantErr: "still exists after delete", reads: 2},
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
			// Two before the delete: the pre-flight ownership read and the
			// Check's fresh one.
			if e.w.readsByID != tt.reads {
				t.Errorf("Reads by id %d, want %d", e.w.readsByID, tt.reads)
			}
			if len(e.w.Deletes()) != 1 {
				t.Errorf("deletes %v, want one", e.w.Deletes())
			}
		})
	}
}
