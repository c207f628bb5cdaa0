package opstore

import (
	"context"
	"github.com/bulwark-iac/bulwark/core/protection"
	"os"
	"sync"
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

// heldWriter holds its first Commit that carries records until told to go
// on.
type heldWriter struct {
	storage.Writer
	once    *sync.Once
	entered chan struct{}
	release chan struct{}
}

func (w heldWriter) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	if len(c.Records) > 0 && !c.Deferred {
		w.once.Do(func() {
			close(w.entered)
			<-w.release
		})
	}
	return w.Writer.Commit(ctx, c)
}

// What a stage parks while its record is being committed is not lost: it
// waits for the stage's next record, and meanwhile the stage shows both
// (the newer first). A change merged into what the first record took
// would have been dropped with it, never written.
func TestStageParkedDuringItsRecordsCommitRidesOnTheNext(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := heldWriter{Writer: s.w, once: &sync.Once{}, entered: make(chan struct{}), release: make(chan struct{})}
	s.w = w
	staged := s.ForStep("a")
	x := &state.Resource{Name: "x", Type: "network", ID: "n-1", Protection: protection.Ephemeral}
	y := &state.Resource{Name: "y", Type: "network", ID: "n-2", Protection: protection.Ephemeral}
	staged.Put(x)
	rec := func(phase string) journal.Record {
		return journal.Record{Op: "op_1", Kind: journal.KindStep, Step: "a", Phase: phase, Status: journal.StepOK}
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, rec("execute"))
		done <- err
	}()
	<-w.entered // the execute record's commit has taken x and waits
	staged.Put(y)
	if staged.Resource("x") == nil || staged.Resource("y") == nil {
		t.Fatal("while the record commits, the stage does not show both what it took and what was parked since")
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.Resource("x") == nil {
		t.Fatal("x, parked before the record, is not in the view after it")
	}
	if s.Resource("y") != nil {
		t.Fatal("y, parked while the record committed, rode on it")
	}
	if staged.Resource("y") == nil {
		t.Fatal("y, parked while the record committed, was lost")
	}
	if _, err := s.Append(ctx, rec("verify")); err != nil {
		t.Fatal(err)
	}
	loaded, err := s.be.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Resources["x"] == nil || loaded.Resources["y"] == nil {
		t.Fatalf("durable after both records: x %v, y %v; want both", loaded.Resources["x"] != nil, loaded.Resources["y"] != nil)
	}
}
