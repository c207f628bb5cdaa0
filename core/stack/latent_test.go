package stack_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// pruneFailingBackend is the file backend whose Writer cannot delete a
// pruned revision's body (a permission, a network blip, a full quota).
type pruneFailingBackend struct {
	storage.Backend
	mu     sync.Mutex
	failed []int
}

func (b *pruneFailingBackend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	w, err := b.Backend.Lock(ctx, h)
	if err != nil {
		return nil, err
	}
	return pruneFailingWriter{Writer: w, b: b}, nil
}

type pruneFailingWriter struct {
	storage.Writer
	b *pruneFailingBackend
}

func (w pruneFailingWriter) DeleteRevision(ctx context.Context, n int) error {
	w.b.mu.Lock()
	w.b.failed = append(w.b.failed, n)
	w.b.mu.Unlock()
	return errors.New("fake backend: delete revision body: permission denied")
}

// The bodies of pruned revisions are deleted after the operation's end
// record is durable: when that deletion fails, the operation still
// succeeded (exit 0, its result says so, the next apply is not refused as
// unfinished) and the failure is a warning, not the operation's error.
func TestFailedPruneAfterTheEndRecordKeepsTheApplySucceeded(t *testing.T) {
	e := newEnv(t)
	b := &pruneFailingBackend{}
	failing := func(o *stack.Options) {
		o.KeepRevisions = 1
		o.StateURL = "fake://prune-failing"
		o.Open = func(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
			b.Backend = filestore.New(stack.StackDir(e.stateDir, so.Stack), so)
			return b, nil
		}
	}
	e.mustApply(t, mkSpec(t, res{name: "vm", typ: "compute", size: 1}), failing)
	r, err := e.apply(mkSpec(t, res{name: "vm", typ: "compute", size: 2}), failing)
	if code := stack.ExitCode(r, err); err != nil || code != stack.ExitOK {
		t.Fatalf("apply that pruned revision 1: exit %d, err %v, result err %v", code, err, resErr(r))
	}
	b.mu.Lock()
	failed := b.failed
	b.mu.Unlock()
	if len(failed) == 0 {
		t.Fatalf("no revision body was pruned: the test proves nothing")
	}
	if !strings.Contains(e.out.String(), "could not delete") {
		t.Errorf("the failed prune is not reported as a warning:\n%s", e.out)
	}
	// The next apply is not refused: nothing is unfinished.
	e.mustApply(t, mkSpec(t, res{name: "vm", typ: "compute", size: 3}), failing)
	if st := e.state(t, "s"); st.Current != 3 || len(st.Revisions) != 1 {
		t.Errorf("current %d, %d revisions kept: want 3 and 1", st.Current, len(st.Revisions))
	}
}
