package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// errBackendLost stands for a backend's typed error (storage.ErrLost,
// a *LockedError) that callers branch on.
var errBackendLost = errors.New("backend: lock lost")

// typedFailingJournal fails every append after the first n with an error
// wrapping errBackendLost.
type typedFailingJournal struct {
	mu sync.Mutex
	n  int
}

func (j *typedFailingJournal) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.n <= 0 {
		return r, fmt.Errorf("commit: %w", errBackendLost)
	}
	j.n--
	r.ID = journal.NewOpID()
	return r, nil
}

// A journal's error reaches the run's error whole: both ErrJournal and the
// backend's own typed error are found by errors.Is, wherever the journal
// fails (its first record, a step's, the rollback's).
func TestJournalErrorKeepsItsCause(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int
		fail string
	}{
		{"the operation's first record", 0, ""},
		{"a step's record", 2, ""},
		{"the rollback's records", 1 + 9 + 2, "lb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			if tt.fail != "" {
				w.failExec[tt.fail] = true
			}
			e := &Engine{Journal: &typedFailingJournal{n: tt.n}}
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: chain(w, Compensate), Parallelism: 1})
			if res.Err == nil {
				t.Fatalf("outcome %v: no error", res.Outcome)
			}
			if !errors.Is(res.Err, ErrJournal) {
				t.Errorf("err %v: not ErrJournal", res.Err)
			}
			if !errors.Is(res.Err, errBackendLost) {
				t.Errorf("err %v: the journal's own error is cut from the chain", res.Err)
			}
		})
	}
}
