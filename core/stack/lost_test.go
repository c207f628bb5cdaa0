package stack_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// losingBackend is the file backend whose Writer's lock can be lost on
// demand (lose), as a pg connection cut or an s3 lease taken over would:
// Lost closes, and every later write fails with storage.ErrLost, as the
// real backends' do. It counts the writes attempted after the loss.
type losingBackend struct {
	storage.Backend
	taker *storage.Holder // who holds the lock once it is lost (nil: nobody)

	mu        sync.Mutex
	lost      chan struct{}
	isLost    bool
	afterLost []string // the writes attempted after the loss
}

func (b *losingBackend) Location() string { return "fake://losing" }

func (b *losingBackend) lose() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.isLost {
		b.isLost = true
		close(b.lost)
	}
}

func (b *losingBackend) attempted(what string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.isLost {
		return nil
	}
	b.afterLost = append(b.afterLost, what)
	return fmt.Errorf("fake backend: %w: the test took it", storage.ErrLost)
}

func (b *losingBackend) writesAfterLost() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.afterLost...)
}

func (b *losingBackend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	w, err := b.Backend.Lock(ctx, h)
	if err != nil {
		return nil, err
	}
	return &losingWriter{Writer: w, b: b}, nil
}

func (b *losingBackend) Holder(ctx context.Context) (*storage.Holder, error) {
	b.mu.Lock()
	lost := b.isLost
	b.mu.Unlock()
	if lost {
		return b.taker, nil
	}
	return b.Backend.Holder(ctx)
}

type losingWriter struct {
	storage.Writer
	b *losingBackend
}

func (w *losingWriter) Lost() <-chan struct{} { return w.b.lost }

func (w *losingWriter) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	if err := w.b.attempted(fmt.Sprintf("commit of %d record(s)", len(c.Records))); err != nil {
		return 0, err
	}
	return w.Writer.Commit(ctx, c)
}

func (w *losingWriter) PutRevision(ctx context.Context, n int, body storage.RevisionBody) error {
	if err := w.b.attempted("put revision"); err != nil {
		return err
	}
	return w.Writer.PutRevision(ctx, n, body)
}

func (w *losingWriter) PutBackup(ctx context.Context, name string, keep int) (bool, error) {
	if err := w.b.attempted("put backup"); err != nil {
		return false, err
	}
	return w.Writer.PutBackup(ctx, name, keep)
}

func (w *losingWriter) Checkpoint(ctx context.Context, keep int) error {
	if err := w.b.attempted("checkpoint"); err != nil {
		return err
	}
	return w.Writer.Checkpoint(ctx, keep)
}

// losing makes the operations of e open stack s on b, the file backend
// wrapped to lose its lock on demand.
func (e *env) losing(b *losingBackend) opt {
	return func(o *stack.Options) {
		o.StateURL = "fake://losing"
		o.Open = func(_ context.Context, _ string, so storage.Options) (storage.Backend, error) {
			b.Backend = filestore.New(stack.StackDir(e.stateDir, so.Stack), so)
			return b, nil
		}
	}
}

// A lock lost in the middle of an operation stops it before its next
// write: no step starts, nothing is compensated, nothing more is written
// (not even attempted), the error says so (typed, exit 4) naming the new
// holder when there is one, and a resume under a lock of its own converges
// with nothing made twice.
func TestLostLockStopsTheOperation(t *testing.T) {
	taker := &storage.Holder{Op: "op_01TAKERTAKERTAKERTAKERTAKE", PID: 4242, Host: "machine-b", Since: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)}
	chain := []res{{name: "a", typ: "network"}, {name: "b", typ: "compute", deps: []string{"a"}}, {name: "c", typ: "compute", deps: []string{"b"}}}
	failingB := []res{{name: "a", typ: "network"}, {name: "b", typ: "compute", deps: []string{"a"}, onFailure: "compensate"}, {name: "c", typ: "compute", deps: []string{"b"}}}
	// b starts once a has executed, while a's Verify still reads (the
	// early start; in the teardown, c and the early delete): the lock is
	// lost once that Verify is recorded, so that b alone is in flight. A
	// Verify cut short by the loss leaves its step in flight too, which is
	// right, but not what these cases are about.
	tests := []struct {
		name     string
		rs       []res
		arm      func(t *testing.T, e *env, lose func())
		teardown bool
		taker    *storage.Holder
		inFlight string // the step the message names as in flight
		want     []string
	}{
		{name: "lost while b is created", rs: chain, inFlight: "b", taker: taker,
			arm: func(t *testing.T, e *env, lose func()) {
				verified := e.verifiedSignal(t, "a")
				e.w.OnCreate(func(n string) {
					if n == "b" {
						verified()
						lose()
					}
				})
			},
			want: []string{"a", "b", "c"}},
		{name: "lost while b fails: no rollback", rs: failingB, inFlight: "b",
			arm: func(t *testing.T, e *env, lose func()) {
				verified := e.verifiedSignal(t, "a")
				e.w.FailCreate("b")
				e.w.OnCreate(func(n string) {
					if n == "b" {
						verified()
						lose()
					}
				})
			},
			want: []string{"a", "b", "c"}},
		{name: "lost during a teardown", rs: chain, teardown: true, taker: taker, inFlight: "b",
			arm: func(t *testing.T, e *env, lose func()) {
				verified := e.verifiedSignal(t, "c")
				e.w.OnDelete(func(n string) {
					if n == "b" {
						verified()
						lose()
					}
				})
			},
			want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			sp := mkSpec(t, tt.rs...)
			if tt.teardown {
				e.mustApply(t, sp)
			}
			b := &losingBackend{lost: make(chan struct{}), taker: tt.taker}
			tt.arm(t, e, b.lose)
			d0 := len(e.w.Deletes())
			var r *stack.Result
			var err error
			if tt.teardown {
				r, err = stack.Teardown(e.ctx, sp, e.opts(parallelism(1), e.losing(b), func(o *stack.Options) { o.Confirm = func([]string) bool { return true } }))
			} else {
				r, err = e.apply(sp, parallelism(1), e.losing(b))
			}
			e.w.OnCreate(nil)
			e.w.OnDelete(nil)
			e.w.ClearFaults()

			if code := stack.ExitCode(r, err); code != stack.ExitLocked {
				t.Fatalf("exit %d, want %d (err %v, result %v)", code, stack.ExitLocked, err, resErr(r))
			}
			if !errors.Is(err, storage.ErrLost) {
				t.Fatalf("err %v: not storage.ErrLost", err)
			}
			var le *stack.LostError
			if !errors.As(err, &le) {
				t.Fatalf("err %T %v: not a *stack.LostError", err, err)
			}
			msg := err.Error()
			for _, want := range []string{"the lock on stack s (fake://losing) was lost", "stopped before its next write", "in flight, its end unrecorded: " + tt.inFlight + " (resume resolves it", "bulwark resume stack.yaml"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the message does not say %q:\n%s", want, msg)
				}
			}
			if tt.taker != nil && !strings.Contains(msg, "the lock is now held by operation "+tt.taker.Op+" (pid 4242 on machine-b") {
				t.Errorf("the message does not name the new holder:\n%s", msg)
			}
			if w := b.writesAfterLost(); len(w) > 0 {
				t.Errorf("writes attempted after the lock was lost: %v", w)
			}
			if !tt.teardown {
				if n := len(e.w.Deletes()) - d0; n != 0 {
					t.Errorf("%d delete(s) after the lock was lost: a compensation ran", n)
				}
			}

			// The journal leaves the operation running, the step in flight
			// started and never ended: what a crash would have left.
			recs, _, jerr := filestore.New(stack.StackDir(e.stateDir, "s"), storage.Options{Stack: "s"}).Journal(e.ctx)
			if jerr != nil {
				t.Fatal(jerr)
			}
			if u := stack.Unfinished(recs); len(u) != 1 {
				t.Fatalf("unfinished operations %v, want the lost one", u)
			}
			var started, ended bool
			for _, rec := range recs {
				if rec.Op != le.Op || rec.Step != tt.inFlight {
					continue
				}
				if rec.Phase == "execute" && rec.Status == journal.StepStarted {
					started = true
				} else if rec.Phase != "check" {
					ended = true
				}
				if rec.Kind == journal.KindRollback || rec.Phase == "compensate" {
					t.Errorf("a rollback was journaled: %+v", rec)
				}
			}
			if !started || ended {
				t.Errorf("step %s: started %v, ended %v; want started and never ended", tt.inFlight, started, ended)
			}

			// Resume, the lock free again, converges: nothing made twice.
			rr, err := e.resume(sp)
			if code := stack.ExitCode(rr, err); code != stack.ExitOK {
				t.Fatalf("resume: exit %d, err %v, result %v", code, err, resErr(rr))
			}
			if got := e.w.Names(); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("the world holds %v, want %v", got, tt.want)
			}
			if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
				t.Error(err)
			}
		})
	}
}

// verifiedSignal returns a function that waits (up to a deadline) until
// the operations' output says name's step was verified once more than it
// says now.
func (e *env) verifiedSignal(t *testing.T, name string) func() {
	line := "step " + name + " verify ok"
	before := strings.Count(e.out.String(), line)
	return func() {
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(e.out.String(), line) <= before {
			if time.Now().After(deadline) {
				t.Errorf("%q never came", line)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}
