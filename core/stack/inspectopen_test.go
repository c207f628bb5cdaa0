package stack_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// closeCountingBackend is the file backend counting its Closes.
type closeCountingBackend struct {
	storage.Backend
	closes *atomic.Int32
}

func (b closeCountingBackend) Close() error {
	b.closes.Add(1)
	return b.Backend.Close()
}

// A plan opens the stack's backend once and closes it once, whatever it
// reads through it (the state, the state again when a first apply raced
// it, who holds the lock): on PostgreSQL every open is a server session,
// on S3 a client with its credential chain.
func TestPlanOpensTheBackendOnce(t *testing.T) {
	e := newEnv(t)
	var opens, closes atomic.Int32
	counting := func(o *stack.Options) {
		o.StateURL = "fake://counting"
		o.Open = func(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
			opens.Add(1)
			return closeCountingBackend{filestore.New(stack.StackDir(e.stateDir, so.Stack), so), &closes}, nil
		}
	}
	e.mustApply(t, mkSpec(t, res{name: "vm", typ: "compute", size: 1}), counting)
	for _, tt := range []struct {
		name string
		size float64
	}{{"no change", 1}, {"a change", 2}} {
		t.Run(tt.name, func(t *testing.T) {
			opens.Store(0)
			closes.Store(0)
			pv, err := stack.Plan(e.ctx, mkSpec(t, res{name: "vm", typ: "compute", size: tt.size}), e.opts(counting))
			if err != nil {
				t.Fatal(err)
			}
			if pv.Running != nil {
				t.Errorf("plan found the lock held by %v: want nil", pv.Running)
			}
			if got := opens.Load(); got != 1 {
				t.Errorf("the plan opened the backend %d times: want 1", got)
			}
			if got := closes.Load(); got != opens.Load() {
				t.Errorf("the plan closed the backend %d times, opened it %d", got, opens.Load())
			}
		})
	}
}
