package opstore

import (
	"context"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// newTestStore is a store on a file backend in a fresh folder, locked.
func newTestStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	be := filestore.New(t.TempDir(), storage.Options{Stack: "s"})
	t.Cleanup(func() { be.Close() })
	w, err := be.Lock(ctx, storage.Holder{Op: "op_test", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Release(ctx) })
	s := &Store{be: be, w: w}
	if s.st, err = be.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// What a stage parks rides on its own record only: a step's on that
// step's next record, an operation end's on that operation's end record
// (never on its start, nor on a step's record however the step is named);
// until then the view does not show it, and the stage does.
func TestStageRidesOnItsOwnRecord(t *testing.T) {
	const op = "op_1"
	tests := []struct {
		name    string
		stage   func(*Store) *Stage
		record  journal.Record
		carried bool
	}{
		{"a step's, on its record", func(s *Store) *Stage { return s.ForStep("a") },
			journal.Record{Op: op, Kind: journal.KindStep, Step: "a", Phase: "execute", Status: journal.StepOK}, true},
		{"a step's, not on another step's record", func(s *Store) *Stage { return s.ForStep("a") },
			journal.Record{Op: op, Kind: journal.KindStep, Step: "b", Phase: "execute", Status: journal.StepOK}, false},
		{"a step's, not on the operation's end", func(s *Store) *Stage { return s.ForStep("a") },
			journal.Record{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}, false},
		{"an end's, on the operation's end record", func(s *Store) *Stage { return s.AtEnd(op) },
			journal.Record{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}, true},
		{"an end's, not on the operation's start", func(s *Store) *Stage { return s.AtEnd(op) },
			journal.Record{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}, false},
		{"an end's, not on another operation's end", func(s *Store) *Stage { return s.AtEnd(op) },
			journal.Record{Op: "op_2", Kind: journal.KindOp, Type: "apply", Status: journal.OpFailed}, false},
		{"an end's, not on a step named as the operation", func(s *Store) *Stage { return s.AtEnd(op) },
			journal.Record{Op: op, Kind: journal.KindStep, Step: op, Phase: "execute", Status: journal.StepOK}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newTestStore(t)
			staged := tt.stage(s)
			staged.Put(&state.Resource{Name: "x", Type: "network", ID: "n-1", Protection: protection.Ephemeral})
			if s.Resource("x") != nil {
				t.Fatal("a parked put shows in the view before its record")
			}
			if staged.Resource("x") == nil {
				t.Fatal("the stage does not show what it parked")
			}
			if _, err := s.Append(ctx, tt.record); err != nil {
				t.Fatal(err)
			}
			if got := s.Resource("x") != nil; got != tt.carried {
				t.Fatalf("after the record, recorded = %v; want %v", got, tt.carried)
			}
			if got := staged.Resource("x") != nil; !got {
				t.Fatal("the stage lost what it parked (carried or not)")
			}
			loaded, err := s.be.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := loaded.Resources["x"] != nil; got != tt.carried {
				t.Fatalf("durable after the record = %v; want %v", got, tt.carried)
			}
		})
	}
}

// writeNow and mutateNow are durable when they return, on no record.
func TestWriteNowIsDurableAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		write func(context.Context, *Store) error
	}{
		{"writeNow", func(ctx context.Context, s *Store) error {
			return s.WriteNow(ctx, storage.Change{Put: []*state.Resource{{Name: "x", Type: "network", ID: "n-1", Protection: protection.Ephemeral}}})
		}},
		{"mutateNow", func(ctx context.Context, s *Store) error {
			return s.MutateNow(ctx, func(st *state.State) error {
				st.Resources["x"] = &state.Resource{Name: "x", Type: "network", ID: "n-1", Protection: protection.Ephemeral}
				return nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newTestStore(t)
			if err := tt.write(ctx, s); err != nil {
				t.Fatal(err)
			}
			loaded, err := s.be.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s.Resource("x") == nil || loaded.Resources["x"] == nil {
				t.Fatalf("view %v, durable %v: want both", s.Resource("x") != nil, loaded.Resources["x"] != nil)
			}
		})
	}
}
