package stack_test

import (
	"os"
	"testing"

	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
	"github.com/bulwark-iac/bulwark/core/storage/storagetest"
)

// countedOpens is the option that opens e's stacks' file backends through
// a counter.
func countedOpens(e *env) (*storagetest.OpenCounter, opt) {
	counter := storagetest.NewOpenCounter(func(so storage.Options) storage.Backend {
		return filestore.New(stack.StackDir(e.stateDir, so.Stack), so)
	})
	return counter, func(o *stack.Options) {
		o.StateURL = "fake://counting"
		o.Open = counter.Open
	}
}

// A plan opens the stack's backend once and closes it once, whatever it
// reads through it (the state, the state again when a first apply raced
// it, who holds the lock): on PostgreSQL every open is a server session,
// on S3 a client with its credential chain.
func TestPlanOpensTheBackendOnce(t *testing.T) {
	e := newEnv(t)
	counter, counting := countedOpens(e)
	e.mustApply(t, mkSpec(t, res{name: "vm", typ: "compute", size: 1}), counting)
	for _, tt := range []struct {
		name string
		size float64
	}{{"no change", 1}, {"a change", 2}} {
		t.Run(tt.name, func(t *testing.T) {
			counter.Reset()
			pv, err := stack.Plan(e.ctx, mkSpec(t, res{name: "vm", typ: "compute", size: tt.size}), e.opts(counting))
			if err != nil {
				t.Fatal(err)
			}
			if pv.Running != nil {
				t.Errorf("plan found the lock held by %v: want nil", pv.Running)
			}
			if opens, closes := counter.Counts(); opens != 1 || closes != 1 {
				t.Errorf("the plan opened the backend %d times and closed it %d: want once each", opens, closes)
			}
		})
	}
}

// While another operation holds the lock, the plan's one open also tells
// who: the holder it reads through the same backend.
func TestPlanSeesTheHolderThroughItsOneOpen(t *testing.T) {
	e := newEnv(t)
	counter, counting := countedOpens(e)
	sp := mkSpec(t, res{name: "vm", typ: "compute", size: 1})
	e.mustApply(t, sp, counting)
	host, _ := os.Hostname()
	held := filestore.New(stack.StackDir(e.stateDir, sp.Stack), storage.Options{Stack: sp.Stack})
	w, err := held.Lock(e.ctx, storage.Holder{Op: "op_01HOLDERHOLDERHOLDERHOLDER", PID: os.Getpid(), Host: host, User: "someone"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Release(e.ctx); held.Close() })
	counter.Reset()
	pv, err := stack.Plan(e.ctx, sp, e.opts(counting))
	if err != nil {
		t.Fatal(err)
	}
	if pv.Running == nil || pv.Running.Op != "op_01HOLDERHOLDERHOLDERHOLDER" {
		t.Errorf("plan while the lock is held: Running %+v, want the holder", pv.Running)
	}
	if opens, closes := counter.Counts(); opens != 1 || closes != 1 {
		t.Errorf("the plan opened the backend %d times and closed it %d: want once each", opens, closes)
	}
}
