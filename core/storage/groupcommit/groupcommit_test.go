package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/groupcommit"
)

// commit names a Commit by the one resource it deletes.
func commit(name string) storage.Commit {
	return storage.Commit{Change: storage.Change{Delete: []string{name}}}
}

var errOdd = errors.New("odd commits fail")

func TestConcurrentCallersEachGetTheirResult(t *testing.T) {
	for _, callers := range []int{1, 2, 16, 64} {
		t.Run(fmt.Sprint(callers), func(t *testing.T) {
			var (
				serial  int64
				written = map[string]int64{} // only the leader's flush touches these
				groups  int
			)
			q := groupcommit.New(func(ctx context.Context, group []*groupcommit.Pending) {
				groups++
				for _, p := range group {
					var n int
					fmt.Sscanf(p.Commit.Change.Delete[0], "c%d", &n)
					if n%2 == 1 {
						p.Err = fmt.Errorf("%s: %w", p.Commit.Change.Delete[0], errOdd)
						continue
					}
					serial++
					p.Serial = serial
					written[p.Commit.Change.Delete[0]] = serial
				}
			})
			type result struct {
				serial int64
				err    error
			}
			results := make([]result, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := q.Commit(context.Background(), commit(fmt.Sprintf("c%d", i)))
					if err != nil {
						results[i] = result{err: err}
						return
					}
					results[i] = result{p.Serial, p.Err}
				}()
			}
			wg.Wait()
			seen := map[int64]bool{}
			for i, r := range results {
				name := fmt.Sprintf("c%d", i)
				if i%2 == 1 {
					if !errors.Is(r.err, errOdd) {
						t.Errorf("%s: err %v, want its flush's error", name, r.err)
					}
					continue
				}
				if r.err != nil || r.serial == 0 || r.serial != written[name] || seen[r.serial] {
					t.Errorf("%s: serial %d err %v, written as %d", name, r.serial, r.err, written[name])
				}
				seen[r.serial] = true
			}
			if groups < 1 || groups > callers {
				t.Errorf("%d groups for %d callers", groups, callers)
			}
		})
	}
}

// A caller whose context ends stops waiting; the write of its Commit goes
// on, under a context that is not cancelled, and so does the leader's.
func TestCancelledCallerStopsWaitingWriteGoesOn(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var (
		mu      sync.Mutex
		written []string
		ctxErrs []error
	)
	q := groupcommit.New(func(ctx context.Context, group []*groupcommit.Pending) {
		if group[0].Commit.Change.Delete[0] == "leader" {
			close(entered)
			<-release
		}
		mu.Lock()
		defer mu.Unlock()
		for _, p := range group {
			written = append(written, p.Commit.Change.Delete[0])
			p.Serial = int64(len(written))
		}
		ctxErrs = append(ctxErrs, ctx.Err())
	})
	lctx, cancelLeader := context.WithCancel(context.Background())
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		q.Commit(lctx, commit("leader"))
	}()
	<-entered // the leader's flush is in flight
	wctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p, err := q.Commit(wctx, commit("waiter")); !errors.Is(err, context.Canceled) || p != nil {
		t.Fatalf("cancelled waiter: %v, %v; want context.Canceled at once", p, err)
	}
	cancelLeader()
	close(release)
	<-leaderDone
	mu.Lock()
	if fmt.Sprint(written) != "[leader waiter]" {
		t.Errorf("written %v, want the leader's group, then the cancelled waiter's", written)
	}
	for i, err := range ctxErrs {
		if err != nil {
			t.Errorf("group %d flushed under an ended context: %v", i, err)
		}
	}
	mu.Unlock()
	// The queue is idle again: a new caller leads a flush of its own.
	p, err := q.Commit(context.Background(), commit("after"))
	if err != nil || p.Err != nil || p.Serial != 3 {
		t.Errorf("after: %+v, %v", p, err)
	}
}
