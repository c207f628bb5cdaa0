package stack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
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

// A resource whose recorded private data is not what bulwark wrote (not
// base64: a damaged or hand-edited state) is an error every command sees
// before it calls the provider, naming the resource: never a provider
// silently handed no private data (its Update or Delete would act on a
// guess).
func TestUnreadablePrivateDataIsAnError(t *testing.T) {
	e := newEnv(t)
	e.mustApply(t, mkSpec(t, res{name: "net", typ: "network", size: 1.0}))
	e.mutateState(t, "s", func(st *state.State) {
		// As a hand edit leaves it: the stored text is not base64.
		if err := json.Unmarshal([]byte(`"%%% not base64 %%%"`), &st.Resources["net"].Private); err != nil {
			t.Fatal(err)
		}
	})
	c0, u0, d0 := e.w.Calls()
	next := mkSpec(t, res{name: "net", typ: "network", size: 2.0})
	for _, tt := range []struct {
		name string
		run  func() error
	}{
		{"plan", func() error { _, err := stack.Plan(e.ctx, next, e.opts()); return err }},
		{"apply", func() error { r, err := e.apply(next); return errors.Join(err, resErr(r)) }},
		{"teardown", func() error {
			r, err := e.teardown(next, func(o *stack.Options) { o.Confirm = func([]string) bool { return true } })
			return errors.Join(err, resErr(r))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), `"net"`) || !strings.Contains(err.Error(), "private data") {
				t.Fatalf("err %v: want an error naming net's private data", err)
			}
			if !errors.Is(err, state.ErrCorrupt) {
				t.Errorf("err %v: not state.ErrCorrupt", err)
			}
		})
	}
	if c, u, d := e.w.Calls(); c != c0 || u != u0 || d != d0 {
		t.Errorf("the provider was called to change something: creates %d->%d updates %d->%d deletes %d->%d", c0, c, u0, u, d0, d)
	}
	// The way out the error names: state forget drops the damaged record
	// (nothing reads it), and the plan then runs.
	if _, err := stack.StateForget(e.ctx, next, e.opts(), "net"); err != nil {
		t.Fatalf("state forget of the damaged resource: %v", err)
	}
	if _, err := stack.Plan(e.ctx, next, e.opts()); err != nil {
		t.Errorf("plan after the forget: %v", err)
	}
}

// releaseFailingBackend is the file backend whose lock release and close
// fail (a connection cut as the command ends, an S3 DELETE refused).
type releaseFailingBackend struct{ storage.Backend }

func (b releaseFailingBackend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	w, err := b.Backend.Lock(ctx, h)
	if err != nil {
		return nil, err
	}
	return releaseFailingWriter{w}, nil
}

func (b releaseFailingBackend) Close() error {
	b.Backend.Close()
	return errors.New("fake backend: close: connection reset by peer")
}

type releaseFailingWriter struct{ storage.Writer }

func (w releaseFailingWriter) Release(ctx context.Context) error {
	w.Writer.Release(ctx)
	return errors.New("fake backend: release: connection reset by peer")
}

// A lock that cannot be released, or a backend that cannot be closed, as a
// command ends is said (a warning: the operation's outcome stands), so the
// person knows why the next command may find the stack locked.
func TestReleaseAndCloseFailuresAreReported(t *testing.T) {
	e := newEnv(t)
	failing := func(o *stack.Options) {
		o.StateURL = "fake://release-failing"
		o.Open = func(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
			return releaseFailingBackend{filestore.New(stack.StackDir(e.stateDir, so.Stack), so)}, nil
		}
	}
	e.mustApply(t, mkSpec(t, res{name: "vm", typ: "compute"}), failing)
	out := e.out.String()
	for _, want := range []string{"could not release the lock", "release: connection reset by peer", "could not close", "close: connection reset by peer"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
}

// hangingBackend is the file backend behind a server that stops answering
// (a PostgreSQL or S3 call that hangs): its Lock or its Nth Commit blocks
// until the context it was given ends. entered is told when one hangs.
type hangingBackend struct {
	storage.Backend
	hangLock   bool
	hangCommit int // hang the Nth Commit (0: none)
	entered    chan string

	mu      sync.Mutex
	commits int
}

func (b *hangingBackend) hang(ctx context.Context, what string) error {
	b.entered <- what
	<-ctx.Done()
	return fmt.Errorf("fake backend: %s: %w", what, ctx.Err())
}

func (b *hangingBackend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	if b.hangLock {
		return nil, b.hang(ctx, "lock")
	}
	w, err := b.Backend.Lock(ctx, h)
	if err != nil {
		return nil, err
	}
	return &hangingWriter{Writer: w, b: b}, nil
}

type hangingWriter struct {
	storage.Writer
	b *hangingBackend
}

func (w *hangingWriter) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	w.b.mu.Lock()
	w.b.commits++
	n := w.b.commits
	w.b.mu.Unlock()
	if n == w.b.hangCommit {
		return 0, w.b.hang(ctx, "commit")
	}
	return w.Writer.Commit(ctx, c)
}

// The command's context reaches storage: a backend that hangs taking the
// lock or writing a journal record is let go of when the context ends (a
// second interrupt), and the command returns at once, instead of only by
// the CLI's exit after its grace period.
func TestCommandContextReachesStorage(t *testing.T) {
	for _, tt := range []struct {
		name string
		b    *hangingBackend
	}{
		{"lock", &hangingBackend{hangLock: true}},
		{"journal append", &hangingBackend{hangCommit: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			b := tt.b
			b.entered = make(chan string, 1)
			hanging := func(o *stack.Options) {
				o.StateURL = "fake://hanging"
				o.Open = func(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
					b.Backend = filestore.New(stack.StackDir(e.stateDir, so.Stack), so)
					return b, nil
				}
			}
			ctx, cancel := context.WithCancel(e.ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				r, err := stack.Apply(ctx, mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "network", deps: []string{"a"}}), e.opts(hanging))
				done <- errors.Join(err, resErr(r))
			}()
			select {
			case <-b.entered:
			case err := <-done:
				t.Fatalf("the apply ended before the backend hung: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("the backend was never called")
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err %v: want context.Canceled in it", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the apply still waits on the hung backend 20 s after its context ended")
			}
		})
	}
}
