package engine

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// ctxJournal hands each Append's context to hang (when set) and records,
// per record, whether that context had ended when the record came.
type ctxJournal struct {
	mu    sync.Mutex
	hang  func(ctx context.Context, r journal.Record) error
	ended map[string]bool // "step phase status" -> ctx had ended
}

func (j *ctxJournal) Append(ctx context.Context, r journal.Record) (journal.Record, error) {
	if j.hang != nil {
		if err := j.hang(ctx, r); err != nil {
			return r, err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ended[r.Step+" "+r.Phase+" "+r.Status] = ctx.Err() != nil
	r.ID = journal.NewOpID()
	return r, nil
}

// The journal is written under the context Run is given: a journal that
// hangs (a backend that never answers) is let go of when it ends, and the
// run stops on the journal's error. Losing the journal (Engine.Lost)
// cancels the work in flight but not the journal's write of its end: that
// write ends as the journal says.
func TestJournalRunsUnderRunsContext(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a hanging journal is let go of when the context ends", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			entered := make(chan struct{})
			j := &ctxJournal{ended: map[string]bool{}, hang: func(ctx context.Context, _ journal.Record) error {
				close(entered)
				<-ctx.Done()
				return ctx.Err()
			}}
			e := &Engine{Journal: j}
			w := newWorld()
			done := make(chan Result, 1)
			go func() {
				done <- e.Run(ctx, &Operation{ID: journal.NewOpID(), Type: "apply", Steps: chain(w, Compensate), Parallelism: 1})
			}()
			<-entered
			cancel()
			res := <-done
			if res.Outcome != Failed || !errors.Is(res.Err, ErrJournal) || !errors.Is(res.Err, context.Canceled) {
				t.Fatalf("outcome %v, err %v; want failed, the journal's cancelled write", res.Outcome, res.Err)
			}
			if len(w.calls) > 0 {
				t.Fatalf("calls %v: a step ran without its operation's record", w.calls)
			}
		}},
		{"losing the journal does not cancel the journal's own write", func(t *testing.T) {
			lost := make(chan struct{})
			j := &ctxJournal{ended: map[string]bool{}}
			e := &Engine{Journal: j, Lost: lost}
			w := newWorld()
			steps := chain(w, Compensate)
			steps[0].Execute = func(ctx context.Context, _ string) error {
				close(lost)
				<-ctx.Done() // the work in flight is cancelled by the loss
				return ctx.Err()
			}
			res := e.Run(context.Background(), &Operation{ID: journal.NewOpID(), Type: "apply", Steps: steps, Parallelism: 1})
			if res.Outcome != Unfinished || !res.Lost {
				t.Fatalf("outcome %v, lost %v: %v", res.Outcome, res.Lost, res.Err)
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			ended, ok := j.ended["network execute "+journal.StepFailed]
			if !ok {
				t.Fatalf("the cancelled step's failure was not appended: %v", j.ended)
			}
			if ended {
				t.Fatal("the step's failure was appended under a context the loss cancelled")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}
