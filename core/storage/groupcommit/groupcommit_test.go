package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
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
	// The waiter's group is written after the leader's, by the queue (the
	// leader returned after its own group).
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		mu.Lock()
		n := len(written)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
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
	// A new caller is written too, after them.
	p, err := q.Commit(context.Background(), commit("after"))
	if err != nil || p.Err != nil || p.Serial != 3 {
		t.Errorf("after: %+v, %v", p, err)
	}
}

// A Deferred Commit is returned at once and written with the next waited
// Commit's group, before it; Flush writes what is left; a deferred record
// that fails is the error of the waited Commit it was written with.
func TestDeferredRidesOnTheNextWaitedCommit(t *testing.T) {
	var groups [][]string
	q := groupcommit.New(func(ctx context.Context, group []*groupcommit.Pending) {
		var names []string
		for _, p := range group {
			name := p.Commit.Change.Delete
			if len(p.Commit.Records) > 0 {
				name = []string{p.Commit.Records[0].Step}
			}
			if len(name) > 0 {
				names = append(names, name[0])
				if name[0] == "bad" {
					p.Err = errOdd
				}
			}
		}
		groups = append(groups, names)
	})
	deferred := func(name string) {
		t.Helper()
		p, err := q.Commit(context.Background(), storage.Commit{Records: []journal.Record{{Step: name}}, Deferred: true})
		if err != nil || !p.Deferred {
			t.Fatalf("deferred %s: %+v %v", name, p, err)
		}
	}
	deferred("d1")
	deferred("d2")
	if len(groups) != 0 {
		t.Fatalf("deferred commits started a write: %v", groups)
	}
	if p, err := q.Commit(context.Background(), commit("w1")); err != nil || p.Err != nil {
		t.Fatalf("w1: %v %v", p, err)
	}
	deferred("d3")
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.Flush(context.Background()); err != nil || len(groups) != 2 {
		t.Fatalf("flush of nothing: %v, groups %v", err, groups)
	}
	// A deferred Commit with a change is waited for.
	if p, err := q.Commit(context.Background(), storage.Commit{Change: storage.Change{Delete: []string{"c"}}, Deferred: true}); err != nil || p.Deferred {
		t.Fatalf("a deferred commit with a change: %+v %v", p, err)
	}
	deferred("bad")
	if p, err := q.Commit(context.Background(), commit("w2")); err != nil || !errors.Is(p.Err, errOdd) {
		t.Fatalf("w2 after a failed deferred record: %+v %v, want its error", p, err)
	}
	if got := fmt.Sprint(groups); got != "[[d1 d2 w1] [d3] [c] [bad w2]]" {
		t.Errorf("groups %s", got)
	}
}

// A leader writes its own group and returns: what was queued meanwhile is
// written by the queue, not by the leader's caller, whose step goes on.
func TestLeaderReturnsAfterItsOwnGroup(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	second := make(chan struct{})
	var mu sync.Mutex
	var written []string
	q := groupcommit.New(func(ctx context.Context, group []*groupcommit.Pending) {
		switch group[0].Commit.Change.Delete[0] {
		case "leader":
			close(entered)
			<-release
		case "waiter":
			<-second // the next group's write is slow
		}
		mu.Lock()
		for _, p := range group {
			written = append(written, p.Commit.Change.Delete[0])
		}
		mu.Unlock()
	})
	result := func(name string, done chan<- error) {
		p, err := q.Commit(context.Background(), commit(name))
		if err == nil {
			err = p.Err
		}
		done <- err
	}
	leaderDone, waiterDone := make(chan error, 1), make(chan error, 1)
	go result("leader", leaderDone)
	<-entered
	go result("waiter", waiterDone)
	for deadline := time.Now().Add(10 * time.Second); groupcommit.Queued(q) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never queued")
		}
		runtime.Gosched()
	}
	close(release)
	select {
	case err := <-leaderDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader waits on the next group's write")
	}
	close(second)
	if err := <-waiterDone; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(written) != "[leader waiter]" {
		t.Errorf("written %v", written)
	}
}

// Flush waits for a group already being written: a deferred record that
// rides on another caller's group in flight is durable when Flush returns
// (Release and Checkpoint rely on it), not merely out of the queue.
func TestFlushWaitsForTheGroupInFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var written atomic.Bool
	q := groupcommit.New(func(ctx context.Context, group []*groupcommit.Pending) {
		if len(group) == 2 { // the deferred record and the waited commit
			close(entered)
			<-release
			written.Store(true)
		}
	})
	if _, err := q.Commit(context.Background(), storage.Commit{Records: []journal.Record{{Op: "op_1", Kind: journal.KindStep}}, Deferred: true}); err != nil {
		t.Fatal(err)
	}
	go q.Commit(context.Background(), commit("c0"))
	<-entered // the group is being written, and the queue is empty
	flushed := make(chan bool, 1)
	go func() {
		err := q.Flush(context.Background())
		flushed <- err == nil && written.Load()
	}()
	select {
	case ok := <-flushed:
		t.Fatalf("Flush returned (ok %v) while the group carrying the deferred record was still being written", ok)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if ok := <-flushed; !ok {
		t.Fatal("Flush returned before the deferred record was written")
	}
}
