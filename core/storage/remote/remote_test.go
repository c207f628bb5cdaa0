package remote_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/remote"
)

// fake is a Client that records what it was asked to do.
type fake struct {
	mu        sync.Mutex
	calls     []string
	groups    []remote.Group
	appendErr error
}

func (f *fake) call(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fake) Where() string { return "fake" }
func (f *fake) Append(_ context.Context, g remote.Group) error {
	f.call("append")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.appendErr != nil {
		return f.appendErr
	}
	f.groups = append(f.groups, g)
	return nil
}
func (f *fake) Checkpoint(context.Context, int) error { f.call("checkpoint"); return nil }
func (f *fake) PutRevision(_ context.Context, _ int, b storage.RevisionBody) error {
	f.call("put-revision " + b.Spec)
	return nil
}
func (f *fake) DeleteRevision(context.Context, int) error { f.call("delete-revision"); return nil }
func (f *fake) PutBackup(context.Context, string, int) (bool, error) {
	f.call("put-backup")
	return true, nil
}
func (f *fake) DropBackup(context.Context, string) error { f.call("drop-backup"); return nil }
func (f *fake) CopyBackup(context.Context, storage.BackupInfo, *state.State) error {
	f.call("copy-backup")
	return nil
}
func (f *fake) MarkMoved(context.Context, string) error { f.call("mark-moved"); return nil }
func (f *fake) Unlock(context.Context) error            { f.call("unlock"); return nil }

var errReleased = fmt.Errorf("released: %w", storage.ErrLost)

func newWriter(t *testing.T, expired func() error) (*fake, *remote.Hold, *remote.Writer) {
	t.Helper()
	f := &fake{}
	h := remote.NewHold(remote.Messages{
		Lost:     func(why error) error { return fmt.Errorf("lost (%v): %w", why, storage.ErrLost) },
		Released: func() error { return errReleased },
		Expired:  expired,
	})
	w := remote.NewWriter(f, h, remote.Start{Loc: "fake://", Serial: 3, Lineage: "L1"})
	return f, h, w
}

// writes are every write a Writer makes, each as its caller makes it.
var writes = []struct {
	name string
	do   func(context.Context, *remote.Writer) error
}{
	{"commit", func(ctx context.Context, w *remote.Writer) error {
		_, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "o", Kind: "k"}}})
		return err
	}},
	{"put-revision", func(ctx context.Context, w *remote.Writer) error {
		return w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "s"})
	}},
	{"delete-revision", func(ctx context.Context, w *remote.Writer) error { return w.DeleteRevision(ctx, 1) }},
	{"put-backup", func(ctx context.Context, w *remote.Writer) error {
		_, err := w.PutBackup(ctx, "b", 1)
		return err
	}},
	{"drop-backup", func(ctx context.Context, w *remote.Writer) error { return w.DropBackup(ctx, "b") }},
	{"copy-backup", func(ctx context.Context, w *remote.Writer) error {
		return w.CopyBackup(ctx, storage.BackupInfo{Name: "b"}, &state.State{})
	}},
	{"mark-moved", func(ctx context.Context, w *remote.Writer) error { return w.MarkMoved(ctx, "elsewhere") }},
	{"checkpoint", func(ctx context.Context, w *remote.Writer) error { return w.Checkpoint(ctx, 1) }},
}

// TestNothingWrittenOnceNotHeld is the lock's promise as an attacker would
// test it: a writer whose lock was lost (a watcher, a renewal, a fence), ran
// out, or was released, or whose last write's outcome is unknown, makes no
// call to its backend at all, whatever it is asked to write.
func TestNothingWrittenOnceNotHeld(t *testing.T) {
	ctx := context.Background()
	unknown := errors.New("connection reset")
	states := []struct {
		name  string
		setup func(*fake, *remote.Hold, *remote.Writer, *bool)
		want  error // errors.Is
	}{
		{"lost", func(_ *fake, h *remote.Hold, _ *remote.Writer, _ *bool) { _ = h.Lose(errors.New("taken over")) }, storage.ErrLost},
		{"lease ran out", func(_ *fake, _ *remote.Hold, _ *remote.Writer, expired *bool) { *expired = true }, storage.ErrLost},
		{"released", func(_ *fake, _ *remote.Hold, w *remote.Writer, _ *bool) { _ = w.Release(ctx) }, storage.ErrLost},
		{"outcome unknown", func(f *fake, _ *remote.Hold, w *remote.Writer, _ *bool) {
			f.appendErr = &remote.UnknownError{Err: errors.New("write: reset"), Later: unknown}
			_, _ = w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "o", Kind: "k"}}})
			f.appendErr = nil
		}, unknown},
	}
	for _, s := range states {
		for _, wr := range writes {
			t.Run(s.name+"/"+wr.name, func(t *testing.T) {
				expired := false
				f, h, w := newWriter(t, func() error {
					if expired {
						return errors.New("the lease ran out")
					}
					return nil
				})
				s.setup(f, h, w, &expired)
				before := len(f.Calls())
				err := wr.do(ctx, w)
				if !errors.Is(err, s.want) {
					t.Fatalf("%s after %s: err %v, want %v", wr.name, s.name, err, s.want)
				}
				if got := f.Calls()[before:]; len(got) > 0 {
					t.Fatalf("%s after %s reached the backend: %v", wr.name, s.name, got)
				}
				if s.want == storage.ErrLost && s.name != "released" {
					select {
					case <-w.Lost():
					default:
						t.Fatal("Lost() not closed")
					}
					if w.LostErr() == nil {
						t.Fatal("LostErr nil once lost")
					}
				}
			})
		}
	}
}

// TestDeferredFirst: what was deferred is stored before a Checkpoint
// compacts and before the lock goes, and Release is idempotent.
func TestDeferredFirst(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		do   func(*remote.Writer) error
		want []string
	}{
		{"checkpoint", func(w *remote.Writer) error { return w.Checkpoint(ctx, 1) }, []string{"append", "checkpoint"}},
		{"release", func(w *remote.Writer) error {
			if err := w.Release(ctx); err != nil {
				return err
			}
			return w.Release(ctx)
		}, []string{"append", "unlock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, w := newWriter(t, nil)
			serial, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: "o", Kind: "k"}}, Deferred: true})
			if err != nil || serial != 3 {
				t.Fatalf("deferred commit: %d, %v", serial, err)
			}
			if len(f.Calls()) != 0 {
				t.Fatalf("a deferred commit was written at once: %v", f.Calls())
			}
			if err := tt.do(w); err != nil {
				t.Fatal(err)
			}
			if got := f.Calls(); !slices.Equal(got, tt.want) {
				t.Fatalf("calls %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCommitPrepared: what reaches Append is checked, sealed and stamped
// with the stack's lineage, and the serial and lineage go on from it.
func TestCommitPrepared(t *testing.T) {
	ctx := context.Background()
	f, _, w := newWriter(t, nil)
	recs := []journal.Record{{Op: "o", Kind: "k"}}
	serial, err := w.Commit(ctx, storage.Commit{Records: recs, Change: storage.Change{Put: []*state.Resource{{Name: "a", Type: "t", Protection: protection.Durable}}}})
	if err != nil || serial != 4 {
		t.Fatalf("commit: %d, %v", serial, err)
	}
	if recs[0].ID == "" || recs[0].Lineage != "L1" {
		t.Fatalf("record not stamped: %+v", recs[0])
	}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{{Type: "t"}}}}); !errors.Is(err, storage.ErrNoName) {
		t.Fatalf("a put without a name: %v", err)
	}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Meta: &storage.Meta{Lineage: "L2"}}}); !errors.Is(err, storage.ErrLineage) {
		t.Fatalf("another lineage on a stack that holds something: %v", err)
	}
	if len(f.groups) != 1 {
		t.Fatalf("refused commits reached the backend: %d groups", len(f.groups))
	}
	g := f.groups[0]
	if g.PrevSerial != 3 || g.Serial != 4 || g.Lineage != "L1" || g.PrevLineage != "L1" || len(g.Accepted) != 1 {
		t.Fatalf("group %+v", g)
	}
}
