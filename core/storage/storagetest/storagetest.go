// Package storagetest is the conformance suite of core/storage: what every
// backend (file, postgres, s3) must do, checked the same way for each.
//
// A backend's test calls Run with a Factory:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, storagetest.Factory{
//			New:  func(t *testing.T) string { return t.TempDir() },
//			Open: func(ctx context.Context, home string, o storage.Options) (storage.Backend, error) {
//				return filestore.Open(ctx, home, o)
//			},
//		})
//	}
//
// Some cases run real processes: the test binary is executed again, with
// the environment naming the case and the home, and Run, called again in
// that process by the same test function, plays its part and exits. So the
// test that calls Run must be runnable on its own (-test.run=^Name$), and
// Open must work in a fresh process from home alone.
//
// What is checked: durability of every acknowledged commit (reopen and
// compare), records and their change committed together, concurrent
// commits, one writer (in-process, and N processes racing for the lock:
// exactly one wins, the rest get a *LockedError naming it), a kill -9 at
// every write boundary (the state loaded after it is one of acknowledged
// commits, never torn, and the lock is free again), ErrLost when the
// backend can lose a lock (Factory.Steal), lineage refusal, revisions,
// backups kept and pruned, Checkpoint's journal compaction (and a kill -9
// at every write of a run of operations that compacts twice), and no
// sensitive value in clear in what is stored (Factory.Raw), and a hand edit
// of what is stored (a protection level lowered) refused on read
// (Factory.Tamper).
package storagetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Factory is how the suite makes and opens a backend's stack homes.
type Factory struct {
	// New returns a fresh, empty home: whatever Open needs to reach one
	// stack's storage (a folder, a URL with a fresh database schema or
	// bucket prefix). Required.
	New func(t *testing.T) string
	// Open opens the stack opts.Stack in home, as a new process would.
	// Required.
	Open func(ctx context.Context, home string, opts storage.Options) (storage.Backend, error)
	// CopyState, when set, replaces the state stored in home to by the one
	// stored in home from (what a person copying a state file would do),
	// for the lineage cases.
	CopyState func(t *testing.T, from, to string)
	// Raw, when set, returns every byte stored for home (files, rows,
	// objects), for the check that no sensitive value is stored in clear.
	Raw func(t *testing.T, home string) []byte
	// Tamper, when set, edits by hand what home stores of the state (its
	// files, rows or objects, as a person with a text editor, psql or the
	// aws CLI would): every occurrence of old replaced by new, for the
	// HandEdit case.
	Tamper func(t *testing.T, home, old, new string)
	// Steal, when set, makes the writer of home lose its lock (a lease
	// run out and taken over, a connection cut), for the ErrLost case.
	Steal func(t *testing.T, home string)
	// Processes is how many processes race for the lock (default 6).
	Processes int
}

const (
	envCase = "BULWARK_STORAGETEST_CASE"
	envHome = "BULWARK_STORAGETEST_HOME"
	envKey  = "BULWARK_STORAGETEST_KEY"
	envArg  = "BULWARK_STORAGETEST_ARG"
	// Stack is the stack the suite's homes hold.
	Stack = "conformance"
)

// Run runs the suite against f. In a process the suite started, it plays
// that process's part and exits.
func Run(t *testing.T, f Factory) {
	if c := os.Getenv(envCase); c != "" {
		child(t, f, c)
		return
	}
	if f.New == nil || f.Open == nil {
		t.Fatal("storagetest: Factory.New and Factory.Open are required")
	}
	key, err := secrets.NewKey("storagetest")
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{f: f, key: key}
	cases := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Empty", s.empty},
		{"Durable", s.durable},
		{"RecordsAndChangeTogether", s.atomic},
		{"ConcurrentCommits", s.concurrent},
		{"OneWriter", s.oneWriter},
		{"OneWriterAmongProcesses", s.processes},
		{"CrashAtEveryWrite", s.crash},
		{"CrashWhileCompacting", s.crashCompacting},
		{"Deferred", s.deferred},
		{"CrashWithDeferredRecords", s.crashDeferred},
		{"Lost", s.lost},
		{"Lineage", s.lineage},
		{"CommitOfAnotherLineage", s.commitOfAnotherLineage},
		{"Revisions", s.revisions},
		{"Backups", s.backups},
		{"BackupsOfFailedAttempts", s.backupsOfFailedAttempts},
		{"BackupChecks", s.backupChecks},
		{"ReplaceBackup", s.replaceBackup},
		{"Checkpoint", s.checkpoint},
		{"NoOpsStopGrowing", s.noOpsStopGrowing},
		{"Sealed", s.sealed},
		{"HandEdit", s.handEdit},
	}
	for _, c := range cases {
		t.Run(c.name, c.fn)
	}
}

type suite struct {
	f   Factory
	key *secrets.Key
}

func (s *suite) options() storage.Options {
	return storage.Options{Stack: Stack, Sealing: state.Sealing{Sealer: s.key.Box(secrets.StackContext(Stack))}}
}

func (s *suite) open(t *testing.T, home string) storage.Backend {
	t.Helper()
	return openWith(t, s.f, home, s.options())
}

func openWith(t testing.TB, f Factory, home string, o storage.Options) storage.Backend {
	t.Helper()
	b, err := f.Open(context.Background(), home, o)
	if err != nil {
		t.Fatalf("open %s: %v", home, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func (s *suite) lock(t *testing.T, b storage.Backend, op string) storage.Writer {
	t.Helper()
	w, err := b.Lock(context.Background(), holder(op))
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	t.Cleanup(func() { w.Release(context.Background()) })
	return w
}

func holder(op string) storage.Holder {
	host, _ := os.Hostname()
	return storage.Holder{Op: op, PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second)}
}

// res is a resource of the suite's stacks.
func res(name string, size int) *state.Resource {
	return &state.Resource{Name: name, Type: "network", Provider: "mock", Source: "mock", ID: "id-" + name,
		Protection: protection.Ephemeral, Config: map[string]any{"size": float64(size)}, Attributes: map[string]any{"size": float64(size), "arn": "arn:" + name}}
}

func step(op, resource, status string) journal.Record {
	return journal.Record{Op: op, Kind: journal.KindStep, Step: resource, Resource: resource, Phase: "execute", Status: status}
}

// script is the sequence of commits the durability and crash cases write;
// model(n) is the state after its first n.
func script(op string) []storage.Commit {
	var out []storage.Commit
	out = append(out, storage.Commit{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}})
	for i := range 5 {
		n := fmt.Sprintf("r%d", i)
		out = append(out, storage.Commit{Records: []journal.Record{step(op, n, journal.StepStarted)}})
		out = append(out, storage.Commit{Records: []journal.Record{step(op, n, journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res(n, i)}}})
	}
	out = append(out,
		storage.Commit{Records: []journal.Record{step(op, "r1", journal.StepStarted), step(op, "r1", journal.StepOK)},
			Change: storage.Change{Put: []*state.Resource{res("r1", 10)}, Delete: []string{"r3"}}},
		storage.Commit{Change: storage.Change{Meta: &storage.Meta{Current: 1, Revisions: []state.Revision{{N: 1, Op: op, File: "s.yaml", Status: state.RevisionApplied, Digest: state.SpecDigest("spec")}}}}},
		storage.Commit{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}},
	)
	return out
}

// fresh copies a script's commits so a run never shares its resources with
// another (Commit keeps what it is given).
func fresh(cs []storage.Commit) []storage.Commit {
	out := make([]storage.Commit, len(cs))
	for i, c := range cs {
		out[i].Records = slices.Clone(c.Records)
		out[i].Change = c.Change
		out[i].Change.Put = nil
		for _, r := range c.Change.Put {
			out[i].Change.Put = append(out[i].Change.Put, r.Clone())
		}
	}
	return out
}

// model is the state after the first n commits of cs.
func model(cs []storage.Commit, n int) *state.State {
	st := &state.State{Version: state.Version, Stack: Stack, Resources: map[string]*state.Resource{}}
	for _, c := range fresh(cs[:n]) {
		if !c.Change.Empty() {
			c.Change.Apply(st)
		}
	}
	return st
}

// sameState compares what a backend must keep of a state.
func sameState(got, want *state.State) error {
	if got.Serial != want.Serial {
		return fmt.Errorf("serial %d, want %d", got.Serial, want.Serial)
	}
	if got.Stack != want.Stack {
		return fmt.Errorf("stack %q, want %q", got.Stack, want.Stack)
	}
	if !reflect.DeepEqual(got.Names(), want.Names()) {
		return fmt.Errorf("resources %v, want %v", got.Names(), want.Names())
	}
	for n, w := range want.Resources {
		if g := got.Resources[n]; !reflect.DeepEqual(g, w) {
			return fmt.Errorf("resource %s = %+v, want %+v", n, g, w)
		}
	}
	if got.Current != want.Current || len(got.Revisions) != len(want.Revisions) || len(got.Interventions) != len(want.Interventions) {
		return fmt.Errorf("meta current %d revisions %d interventions %d, want %d %d %d", got.Current, len(got.Revisions), len(got.Interventions),
			want.Current, len(want.Revisions), len(want.Interventions))
	}
	return nil
}

func (s *suite) empty(t *testing.T) {
	ctx := context.Background()
	b := s.open(t, s.f.New(t))
	st, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != 0 || len(st.Resources) != 0 || st.Stack != Stack {
		t.Errorf("empty home: %+v", st)
	}
	recs, bad, err := b.Journal(ctx)
	if err != nil || len(recs) != 0 || len(bad) != 0 {
		t.Errorf("empty journal: %v %v %v", recs, bad, err)
	}
	if h, err := b.Holder(ctx); err != nil || h != nil {
		t.Errorf("holder of an empty home: %v %v", h, err)
	}
	if _, err := b.Revision(ctx, 1); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("revision of an empty home: %v", err)
	}
	if bk, err := b.Backups(ctx); err != nil || len(bk) != 0 {
		t.Errorf("backups of an empty home: %v %v", bk, err)
	}
	w := s.lock(t, b, "op_empty")
	if serial, err := w.Commit(ctx, storage.Commit{}); err != nil || serial != 0 {
		t.Errorf("empty commit: %d %v", serial, err)
	}
}

func (s *suite) durable(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_durable")
	cs := fresh(script("op_durable"))
	var ids []string
	for i, c := range cs {
		serial, err := w.Commit(ctx, c)
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if want := model(cs, i+1).Serial; serial != want {
			t.Errorf("commit %d returned serial %d, want %d", i, serial, want)
		}
		for _, r := range c.Records {
			if r.ID == "" {
				t.Fatalf("commit %d: a record's id was not set in place", i)
			}
			ids = append(ids, r.ID)
		}
		// Every acknowledged commit is there for a reader, at once.
		if st, err := s.open(t, home).Load(ctx); err != nil {
			t.Fatal(err)
		} else if err := sameState(st, model(cs, i+1)); err != nil {
			t.Fatalf("after commit %d, another reader loads: %v", i, err)
		}
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Errorf("second release: %v", err)
	}
	if _, err := w.Commit(ctx, cs[1]); err == nil {
		t.Error("a released writer committed")
	}
	b2 := s.open(t, home)
	st, err := b2.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameState(st, model(cs, len(cs))); err != nil {
		t.Fatalf("reopened: %v", err)
	}
	if st.Lineage == "" {
		t.Error("no lineage")
	}
	recs, _, err := b2.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.ID)
		if r.Lineage != st.Lineage {
			t.Errorf("record %s carries lineage %q, the state %q", r.ID, r.Lineage, st.Lineage)
		}
		if r.Time.IsZero() {
			t.Errorf("record %s has no time", r.ID)
		}
	}
	if !reflect.DeepEqual(got, ids) {
		t.Errorf("journal ids %v, committed %v", got, ids)
	}
	// The state goes on from where it is, under a new lock.
	w2 := s.lock(t, b2, "op_durable2")
	serial, err := w2.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_durable2", "r9", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("r9", 9)}}})
	if err != nil || serial != st.Serial+1 {
		t.Fatalf("commit after reopen: %d %v", serial, err)
	}
}

func (s *suite) atomic(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_atomic")
	// A change Load would refuse is refused whole: no record of it stays.
	bad := res("bad", 1)
	bad.Protection = protection.Level(99) // on no rung of the ladder
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_atomic", "bad", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{bad}}}); err == nil {
		t.Fatal("a resource of an unknown protection level was committed")
	}
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_atomic", "ok", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("ok", 1)}}}); err != nil {
		t.Fatalf("the writer is unusable after a refused commit: %v", err)
	}
	w.Release(ctx)
	b2 := s.open(t, home)
	recs, _, err := b2.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Step != "ok" {
		t.Errorf("journal after a refused commit: %+v", recs)
	}
	st, err := b2.Load(ctx)
	if err != nil || st.Serial != 1 || st.Resources["ok"] == nil || st.Resources["bad"] != nil {
		t.Errorf("state after a refused commit: %+v %v", st, err)
	}
}

func (s *suite) concurrent(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	w := s.lock(t, s.open(t, home), "op_conc")
	const n = 40
	serials := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("c%02d", i)
			serials[i], errs[i] = w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_conc", name, journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res(name, i)}}})
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("commit %d: %v", i, errs[i])
		}
		if seen[serials[i]] || serials[i] < 1 || serials[i] > n {
			t.Errorf("serial %d twice or out of range", serials[i])
		}
		seen[serials[i]] = true
	}
	st, err := s.open(t, home).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != n || len(st.Resources) != n {
		t.Errorf("after %d concurrent commits: serial %d, %d resources", n, st.Serial, len(st.Resources))
	}
}

func (s *suite) oneWriter(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	w := s.lock(t, s.open(t, home), "op_first")
	other := s.open(t, home)
	_, err := other.Lock(ctx, holder("op_second"))
	var le *storage.LockedError
	if !errors.As(err, &le) || !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("second lock: %v, want a *LockedError", err)
	}
	if le.Holder == nil || le.Holder.Op != "op_first" {
		t.Errorf("the refusal names %v, want op_first", le.Holder)
	}
	if h, err := other.Holder(ctx); err != nil || h == nil || h.Op != "op_first" {
		t.Errorf("holder: %v %v", h, err)
	}
	// Reading never takes the lock and never makes a Lock fail.
	if _, err := other.Load(ctx); err != nil {
		t.Errorf("load while locked: %v", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	w2 := s.lock(t, other, "op_second")
	if w2.Stale() != nil {
		t.Errorf("a released lock is reported stale: %v", w2.Stale())
	}
}

func (s *suite) lost(t *testing.T) {
	if s.f.Steal == nil {
		t.Skip("the backend cannot lose a lock it holds (Factory.Steal is nil)")
	}
	ctx := context.Background()
	home := s.f.New(t)
	w := s.lock(t, s.open(t, home), "op_lost")
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("a", 1)}}}); err != nil {
		t.Fatal(err)
	}
	s.f.Steal(t, home)
	_, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_lost", "b", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("b", 1)}}})
	if !errors.Is(err, storage.ErrLost) {
		t.Fatalf("commit after the lock was lost: %v, want ErrLost", err)
	}
	select {
	case <-w.Lost():
	default:
		t.Error("Lost() is not closed after a lost commit")
	}
	st, err := s.open(t, home).Load(ctx)
	if err != nil || st.Resources["b"] != nil {
		t.Errorf("a lost writer's commit was written: %+v %v", st, err)
	}
}

func (s *suite) lineage(t *testing.T) {
	ctx := context.Background()
	home, foreign := s.f.New(t), s.f.New(t)
	for _, h := range []string{home, foreign} {
		w := s.lock(t, s.open(t, h), "op_lineage")
		if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_lineage", "a", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("a", 1)}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Checkpoint(ctx, 20); err != nil {
			t.Fatal(err)
		}
		w.Release(ctx)
	}
	a, err := s.open(t, home).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.open(t, foreign).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.Lineage == "" || a.Lineage == f.Lineage {
		t.Fatalf("two stacks minted lineages %q and %q", a.Lineage, f.Lineage)
	}
	if s.f.CopyState == nil {
		t.Skip("Factory.CopyState is nil: no foreign state can be planted")
	}
	s.f.CopyState(t, foreign, home)
	b := s.open(t, home)
	if _, err := b.Load(ctx); !errors.Is(err, storage.ErrLineage) {
		t.Errorf("load of a foreign state: %v, want ErrLineage", err)
	}
	if w, err := b.Lock(ctx, holder("op_lineage2")); !errors.Is(err, storage.ErrLineage) {
		if err == nil {
			w.Release(ctx)
		}
		t.Errorf("lock over a foreign state: %v, want ErrLineage", err)
	}
	// Refusing takes no lock with it.
	w := s.lock(t, s.open(t, foreign), "op_lineage3")
	w.Release(ctx)
}

// commitOfAnotherLineage: a Commit whose metadata names another lineage
// than the stack's is refused (ErrLineage) once the stack holds anything,
// writes nothing, and the stack still loads, in its own lineage.
func (s *suite) commitOfAnotherLineage(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	w := s.lock(t, s.open(t, home), "op_lin")
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_lin", "a", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("a", 1)}}}); err != nil {
		t.Fatal(err)
	}
	before, err := s.open(t, home).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := storage.MetaOf(before)
	m.Lineage = "01FOREIGNLINEAGE0000000000"
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_lin", "b", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("b", 1)}, Meta: m}}); !errors.Is(err, storage.ErrLineage) {
		t.Fatalf("commit of another lineage: %v, want ErrLineage", err)
	}
	if err := w.Checkpoint(ctx, 20); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	after, err := s.open(t, home).Load(ctx)
	if err != nil {
		t.Fatalf("load after a refused commit: %v", err)
	}
	if after.Lineage != before.Lineage || after.Resources["b"] != nil || after.Serial != before.Serial {
		t.Fatalf("after a refused commit: lineage %q serial %d resources %v, want lineage %q serial %d without b", after.Lineage, after.Serial, after.Names(), before.Lineage, before.Serial)
	}
}

func (s *suite) revisions(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_rev")
	body := storage.RevisionBody{Spec: "stack: conformance\n# token: hunter2-revision\n", Variables: map[string]any{"region": "eu", "token": "hunter2-variable"}, Sensitive: []string{"token"}}
	if err := w.PutRevision(ctx, 1, body); err != nil {
		t.Fatal(err)
	}
	if err := w.PutRevision(ctx, 2, storage.RevisionBody{Spec: "two"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.open(t, home).Revision(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, body) {
		t.Errorf("revision 1 = %+v, want %+v", got, body)
	}
	if err := w.DeleteRevision(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Revision(ctx, 1); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("deleted revision: %v", err)
	}
	if got, err := b.Revision(ctx, 2); err != nil || got.Spec != "two" {
		t.Errorf("revision 2: %+v %v", got, err)
	}
}

func (s *suite) backups(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_bk")
	var names []string
	for i := range 4 {
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res(fmt.Sprintf("b%d", i), i)}}}); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("op_%026d", i)
		names = append(names, name)
		stored, err := w.PutBackup(ctx, name, 2)
		if err != nil || !stored {
			t.Fatalf("backup %s: %v %v", name, stored, err)
		}
	}
	if stored, err := w.PutBackup(ctx, names[3], 2); err != nil || stored {
		t.Errorf("a second backup under one name: stored %v, %v", stored, err)
	}
	list, err := b.Backups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, bk := range list {
		got = append(got, bk.Name)
	}
	if !reflect.DeepEqual(got, names[2:]) {
		t.Errorf("backups kept %v, want %v", got, names[2:])
	}
	st, err := s.open(t, home).Backup(ctx, names[2])
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != 3 || len(st.Resources) != 3 {
		t.Errorf("backup %s: serial %d, %d resources; want 3, 3", names[2], st.Serial, len(st.Resources))
	}
	if _, err := b.Backup(ctx, names[0]); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("pruned backup: %v", err)
	}
}

// backupCopier is a Writer that stores a backup read elsewhere (state
// migrate's), the one way to put a backup of the suite's making in a home.
type backupCopier interface {
	CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error
}

// backupChecks: a backup is what a restore puts back, so Backup refuses
// one of another lineage (ErrLineage) or with a protection level bulwark
// does not know (state.ErrCorrupt), on every backend, as Load refuses
// such a state. The backups are stored as state migrate copies one in.
func (s *suite) backupChecks(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_bkc")
	bc, ok := w.(backupCopier)
	if !ok {
		t.Skip("the backend's Writer copies no backup in")
	}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("a", 1)}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(st *state.State)
		want   error
	}{
		{"op_01000000000000000000000001", func(st *state.State) { st.Lineage = "another-lineage" }, storage.ErrLineage},
		{"op_01000000000000000000000002", func(st *state.State) { st.Resources["a"].Protection = protection.Unspecified }, state.ErrCorrupt}, // stored as "": no level
		// A prior's unknown word cannot be made through the API (the level
		// is typed, and a level off the ladder cannot be written):
		// state's TestUnknownPriorProtectionIsAnError plants one in a file.
	}
	for _, c := range cases {
		st := cur.Clone()
		c.change(st)
		if err := bc.CopyBackup(ctx, storage.BackupInfo{Name: c.name, Serial: st.Serial}, st); err != nil {
			continue // refused as it was stored: nothing to restore
		}
		if _, err := s.open(t, home).Backup(ctx, c.name); !errors.Is(err, c.want) {
			t.Errorf("backup %s: %v, want an error matching %v", c.name, err, c.want)
		}
	}
}

// ringSealer seals under one key and opens under any it holds, by the key
// id a sealed value names (as a session does while secrets rotate runs).
type ringSealer struct {
	seal *secrets.Box
	ring map[string]*secrets.Box
}

func (r ringSealer) SealValue(v any) (string, error) { return r.seal.SealValue(v) }

func (r ringSealer) OpenValue(sealed string) (any, error) {
	rest, _ := strings.CutPrefix(sealed, secrets.Prefix)
	id, _, _ := strings.Cut(rest, ":")
	if b, ok := r.ring[id]; ok {
		return b.OpenValue(sealed)
	}
	return r.seal.OpenValue(sealed)
}

// replaceBackup: a backup stored again in place (secrets rotate) keeps its
// name, time, serial and order, opens under the new key alone and no
// longer under the old; replacing one that does not exist is ErrNotFound.
func (s *suite) replaceBackup(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_01000000000000000000000010")
	if _, ok := w.(storage.BackupReplacer); !ok {
		t.Skip("the backend's Writer replaces no backup")
	}
	r := res("a", 1)
	r.Attributes["token"] = "tok-secret-1"
	r.Sensitive = []string{"token"}
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{r, res("b", 2)}}}); err != nil {
		t.Fatal(err)
	}
	names := []string{"op_01000000000000000000000011", "op_01000000000000000000000012"}
	for i, n := range names {
		if stored, err := w.PutBackup(ctx, n, 0); err != nil || !stored {
			t.Fatalf("backup %s: stored %v, %v", n, stored, err)
		}
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res("c", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := b.Backups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}

	newKey, err := secrets.NewKey("storagetest-new")
	if err != nil {
		t.Fatal(err)
	}
	oldBox, newBox := s.key.Box(secrets.StackContext(Stack)), newKey.Box(secrets.StackContext(Stack))
	both := storage.Options{Stack: Stack, Sealing: state.Sealing{Sealer: ringSealer{seal: newBox, ring: map[string]*secrets.Box{
		sealedKey(t, oldBox): oldBox, sealedKey(t, newBox): newBox}}}}
	rb := openWith(t, s.f, home, both)
	rw := s.lock(t, rb, "op_01000000000000000000000013")
	rep := rw.(storage.BackupReplacer)
	for _, n := range names[:1] {
		st, err := rb.Backup(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.ReplaceBackup(ctx, n, st); err != nil {
			t.Fatalf("replace backup %s: %v", n, err)
		}
	}
	if err := rep.ReplaceBackup(ctx, "op_01000000000000000000000099", &state.State{Stack: Stack}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("replacing a backup that does not exist: %v", err)
	}
	after, err := rb.Backups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("backups %v after, %v before", after, before)
	}
	for i := range before {
		a, bf := after[i], before[i]
		if a.Name != bf.Name || a.Serial != bf.Serial || !a.Time.Equal(bf.Time) {
			t.Errorf("backup %d: %+v after, %+v before", i, a, bf)
		}
	}

	// Under the old key alone (the state still opens under it): the
	// replaced backup does not open, the other one does.
	onlyOld := openWith(t, s.f, home, storage.Options{Stack: Stack, Sealing: state.Sealing{Sealer: oldBox}})
	if _, err := onlyOld.Backup(ctx, names[0]); err == nil {
		t.Error("the replaced backup still opens under the old key")
	}
	if _, err := onlyOld.Backup(ctx, names[1]); err != nil {
		t.Errorf("a backup not replaced no longer opens under its key: %v", err)
	}
	// The state sealed under the new key too (as a rotation's last step
	// does): the replaced backup opens under the new key alone.
	cur, err := rb.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var puts []*state.Resource
	for _, n := range cur.Names() {
		puts = append(puts, cur.Resources[n])
	}
	if _, err := rw.Commit(ctx, storage.Commit{Change: storage.Change{Put: puts}}); err != nil {
		t.Fatal(err)
	}
	if err := rw.Checkpoint(ctx, 0); err != nil {
		t.Fatal(err)
	}
	onlyNew := openWith(t, s.f, home, storage.Options{Stack: Stack, Sealing: state.Sealing{Sealer: newBox}})
	st, err := onlyNew.Backup(ctx, names[0])
	if err != nil {
		t.Fatalf("the replaced backup under the new key alone: %v", err)
	}
	if st.Resources["a"] == nil || st.Resources["a"].Attributes["token"] != "tok-secret-1" || len(st.Resources) != 2 {
		t.Errorf("the replaced backup holds %+v", st.Resources)
	}
}

// sealedKey is the key id b's sealed values name.
func sealedKey(t *testing.T, b *secrets.Box) string {
	t.Helper()
	v, err := b.SealValue("x")
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := strings.CutPrefix(v, secrets.Prefix)
	id, _, _ := strings.Cut(rest, ":")
	return id
}

// backupsOfFailedAttempts: attempts that change nothing (each journals its
// start and end, and fails before its first change, as on a full disk) add
// no backup, however many there are; the backup of one that changed
// nothing can be dropped; a change makes the next backup a new one again.
func (s *suite) backupsOfFailedAttempts(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_attempts")
	name := func(i int) string { return fmt.Sprintf("op_%026d", i) }
	names := func() []string {
		t.Helper()
		list, err := b.Backups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, bk := range list {
			out = append(out, bk.Name)
		}
		return out
	}
	change := func(i int) {
		t.Helper()
		if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{res(fmt.Sprintf("a%d", i), 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	change(0)
	if stored, err := w.PutBackup(ctx, name(0), 3); err != nil || !stored {
		t.Fatalf("first backup: %v %v", stored, err)
	}
	bytes := func() int64 {
		t.Helper()
		st, err := b.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.BackupBytes
	}
	size := bytes()
	for i := 1; i <= 8; i++ {
		// An attempt journals its start and its failure: records alone,
		// the state unchanged.
		op := name(i)
		if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{
			{Op: op, Kind: journal.KindOp, Type: "update", Status: journal.OpRunning},
			{Op: op, Kind: journal.KindOp, Type: "update", Status: journal.OpFailed},
		}}); err != nil {
			t.Fatal(err)
		}
		if stored, err := w.PutBackup(ctx, op, 3); err != nil || stored {
			t.Fatalf("attempt %d, the state unchanged since the newest backup: stored %v, %v", i, stored, err)
		}
	}
	if got := names(); !reflect.DeepEqual(got, []string{name(0)}) {
		t.Errorf("after 8 attempts that changed nothing: backups %v, want only %s", got, name(0))
	}
	if got := bytes(); got != size {
		t.Errorf("after 8 attempts that changed nothing: %d bytes of backups, want %d", got, size)
	}
	// The backup of an attempt that changed nothing is dropped when it
	// ends; dropping one that is not there is no error.
	if err := w.DropBackup(ctx, name(0)); err != nil {
		t.Fatal(err)
	}
	if err := w.DropBackup(ctx, name(0)); err != nil {
		t.Errorf("dropping a backup twice: %v", err)
	}
	if err := w.DropBackup(ctx, name(99)); err != nil {
		t.Errorf("dropping a backup never stored: %v", err)
	}
	if got := names(); len(got) != 0 {
		t.Errorf("after the drop: backups %v, want none", got)
	}
	if _, err := b.Backup(ctx, name(0)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("dropped backup: %v", err)
	}
	// With none holding the state, the next attempt's backup is taken;
	// after a change, the next one's too.
	if stored, err := w.PutBackup(ctx, name(10), 3); err != nil || !stored {
		t.Fatalf("a backup after the drop: %v %v", stored, err)
	}
	change(1)
	if stored, err := w.PutBackup(ctx, name(11), 3); err != nil || !stored {
		t.Fatalf("a backup after a change: %v %v", stored, err)
	}
	if got, want := names(), []string{name(10), name(11)}; !reflect.DeepEqual(got, want) {
		t.Errorf("backups %v, want %v", got, want)
	}
	if got := s.open(t, home); got != nil {
		if list, err := got.Backups(ctx); err != nil || len(list) != 2 || list[1].Serial != 2 {
			t.Errorf("backups read afresh: %+v %v", list, err)
		}
	}
}

func (s *suite) checkpoint(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_setup")
	const ops, keep = 12, 3
	var opIDs []string
	for i := range ops {
		op := journal.NewOpID()
		opIDs = append(opIDs, op)
		for _, c := range []storage.Commit{
			{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
			{Records: []journal.Record{step(op, "r", journal.StepStarted)}},
			{Records: []journal.Record{step(op, "r", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("r", i)}}},
			{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}},
		} {
			if _, err := w.Commit(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Checkpoint(ctx, keep); err != nil {
		t.Fatal(err)
	}
	st, err := s.open(t, home).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != ops || !reflect.DeepEqual(st.Resources["r"], res("r", ops-1)) {
		t.Errorf("after checkpoint: serial %d, r %+v", st.Serial, st.Resources["r"])
	}
	recs, _, err := b.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	perOp := map[string][]journal.Record{}
	for _, r := range recs {
		perOp[r.Op] = append(perOp[r.Op], r)
	}
	for i, op := range opIDs {
		rs := perOp[op]
		switch {
		case i >= ops-keep && len(rs) != 4:
			t.Errorf("operation %d of the last %d kept %d record(s), want 4 whole", i, keep, len(rs))
		case i < ops-keep && (len(rs) != 1 || rs[0].Kind != journal.KindSummary || rs[0].Status != journal.OpSucceeded):
			t.Errorf("old operation %d: %+v, want one summary", i, rs)
		}
	}
	// Commits go on after a checkpoint, and a reload sees them.
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Delete: []string{"r"}}}); err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	st, err = s.open(t, home).Load(ctx)
	if err != nil || st.Serial != ops+1 || len(st.Resources) != 0 {
		t.Errorf("after a commit past the checkpoint: %+v %v", st, err)
	}
}

// noOpOp is the records a no-op apply journals: an update whose Check
// found its one step done.
func noOpOp(op string) []storage.Commit {
	return []storage.Commit{
		{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "update", Status: journal.OpRunning}}},
		{Records: []journal.Record{{Op: op, Kind: journal.KindStep, Step: "r", Resource: "r", Phase: "check", Status: journal.StepSkipped}}},
		{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "update", Status: journal.OpSucceeded}}},
	}
}

// The journal stops growing under repeated no-op applies
// (docs/architecture.md, "State backends and retention"): each operation is
// one command (commits, then a Checkpoint keeping keep whole), and once the
// no-op ones are past the retention window their summaries are one line, so a
// batch more of them leaves the journal as many records as before (and its
// size within what a longer count and times written with fewer trailing zeros
// make). An update that changed something, or failed, keeps its own line.
func (s *suite) noOpsStopGrowing(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	const keep = 3
	run := func(cs []storage.Commit) {
		t.Helper()
		w := s.lock(t, b, "op_cmd")
		defer w.Release(ctx)
		for _, c := range cs {
			if _, err := w.Commit(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Checkpoint(ctx, keep); err != nil {
			t.Fatal(err)
		}
	}
	changed := journal.NewOpID()
	run([]storage.Commit{
		{Records: []journal.Record{{Op: changed, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
		{Records: []journal.Record{step(changed, "r", journal.StepStarted)}},
		{Records: []journal.Record{step(changed, "r", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("r", 1)}}},
		{Records: []journal.Record{{Op: changed, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}},
	})
	var first []string
	for range 3 {
		op := journal.NewOpID()
		first = append(first, op)
		run(noOpOp(op))
	}
	failed := journal.NewOpID()
	run([]storage.Commit{
		{Records: []journal.Record{{Op: failed, Kind: journal.KindOp, Type: "update", Status: journal.OpRunning}}},
		{Records: []journal.Record{{Op: failed, Kind: journal.KindStep, Step: "r", Resource: "r", Phase: "check", Status: journal.StepFailed, Error: "boom"}}},
		{Records: []journal.Record{{Op: failed, Kind: journal.KindOp, Type: "update", Status: journal.OpFailed, Error: "boom"}}},
	})
	// A period of the compaction is keep+1 operations: measure at the
	// same point of two periods.
	period := keep + 1
	for range 5 * period {
		run(noOpOp(journal.NewOpID()))
	}
	before, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 * period {
		run(noOpOp(journal.NewOpID()))
	}
	after, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.JournalRecords != before.JournalRecords || after.JournalBytes+after.StateBytes > before.JournalBytes+before.StateBytes+64 {
		t.Errorf("%d no-op operations more grew the journal: %d records, %d+%d bytes, then %d records, %d+%d bytes",
			3*period, before.JournalRecords, before.JournalBytes, before.StateBytes, after.JournalRecords, after.JournalBytes, after.StateBytes)
	}
	recs, _, err := s.open(t, home).Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sums []journal.Record
	for _, r := range recs {
		if r.Kind == journal.KindSummary {
			sums = append(sums, r)
		}
	}
	// The apply, the first three no-ops collapsed, the failed update, the
	// later no-ops collapsed: every one of the 1+3+1+8*period operations
	// but the newest whole ones is accounted for.
	if len(sums) != 4 || sums[0].Op != changed || sums[0].Repeated > 1 ||
		sums[1].Op != first[0] || sums[1].Repeated != 3 || sums[1].Last != first[2] ||
		sums[2].Op != failed || sums[2].Repeated > 1 || sums[2].Unchanged || sums[3].Repeated < 2 {
		var got []string
		for _, r := range sums {
			got = append(got, fmt.Sprintf("%s %s %s unchanged=%v repeated=%d last=%s", r.Op, r.Type, r.Status, r.Unchanged, r.Repeated, r.Last))
		}
		t.Errorf("summaries: want the apply, 3 no-ops as one, the failed update, the later no-ops as one; got\n%s", strings.Join(got, "\n"))
	}
	n := 0
	for _, r := range sums {
		n += max(r.Repeated, 1)
	}
	whole := map[string]bool{}
	for _, r := range recs {
		if r.Kind == journal.KindOp {
			whole[r.Op] = true
		}
	}
	if after.SummarizedOps != n {
		t.Errorf("Stats: %d operations summarized, the journal's summaries stand for %d", after.SummarizedOps, n)
	}
	if n+len(whole) != 1+3+1+8*period {
		t.Errorf("%d operation(s) summarized and %d whole, want %d in all", n, len(whole), 1+3+1+8*period)
	}
}

func (s *suite) sealed(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	b := s.open(t, home)
	w := s.lock(t, b, "op_sealed")
	r := res("db", 1)
	r.Attributes["password"] = "hunter2-attribute"
	r.Config["password"] = "hunter2-config"
	r.Prior = &state.Prior{Op: "op_sealed", Protection: protection.Ephemeral, Attributes: map[string]any{"password": "hunter2-prior"}}
	// An id and an arn the provider computed from a secret (a bucket named
	// after one): the id is stored sealed too, and opened clear.
	r.ID = "bk-hunter2-computed-id"
	r.Attributes["arn"] = "arn:aws:s3:::bk-hunter2-computed-id"
	r.Sensitive = []string{state.SensitiveID, "arn", "password"}
	// The metadata's revisions carry their variables (history shows them,
	// masked), the sensitive ones to be sealed like any other value.
	meta := &storage.Meta{Current: 1, Revisions: []state.Revision{{N: 1, Op: "op_sealed", Status: "applied",
		Variables: map[string]any{"pw": "hunter2-meta-variable", "env": "dev"}, SensitiveVariables: []string{"pw"}}}}
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_sealed", "db", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{r}, Meta: meta}}); err != nil {
		t.Fatal(err)
	}
	if meta.Revisions[0].Variables["pw"] != "hunter2-meta-variable" {
		t.Error("Commit changed the metadata it was given")
	}
	if r.Attributes["password"] != "hunter2-attribute" {
		t.Error("Commit changed the resource it was given")
	}
	if err := w.PutRevision(ctx, 1, storage.RevisionBody{Spec: "token: hunter2-revision", Variables: map[string]any{"pw": "hunter2-variable"}, Sensitive: []string{"pw"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PutBackup(ctx, "op_sealed", 5); err != nil {
		t.Fatal(err)
	}
	if err := w.Checkpoint(ctx, 20); err != nil {
		t.Fatal(err)
	}
	st, err := s.open(t, home).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Resources["db"]; !reflect.DeepEqual(got, r) {
		t.Errorf("loaded %+v, want %+v", got, r)
	}
	if len(st.Revisions) != 1 || st.Revisions[0].Variables["pw"] != "hunter2-meta-variable" || st.Revisions[0].Variables["env"] != "dev" {
		t.Errorf("loaded revisions %+v, want revision 1 with its variables opened", st.Revisions)
	}
	if s.f.Raw == nil {
		t.Skip("Factory.Raw is nil: what is stored cannot be read raw")
	}
	raw := string(s.f.Raw(t, home))
	for _, secret := range []string{"hunter2-attribute", "hunter2-config", "hunter2-prior", "hunter2-revision", "hunter2-variable", "hunter2-meta-variable", "hunter2-computed-id"} {
		if strings.Contains(raw, secret) {
			t.Errorf("%q is stored in clear", secret)
		}
	}
	// Without the key, the values stay sealed: never guessed, never lost.
	noKey := openWith(t, s.f, home, storage.Options{Stack: Stack})
	st, err = noKey.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := st.Resources["db"].Attributes["password"].(string); !secrets.IsSealed(v) {
		t.Errorf("loaded without a key: %v", st.Resources["db"].Attributes["password"])
	}
	if id := st.Resources["db"].ID; !secrets.IsSealed(id) {
		t.Errorf("loaded without a key, the id is %q, want it sealed", id)
	}
}

// childRun re-executes the test binary for a case's process part.
func (s *suite) childCmd(t *testing.T, caseName, home, arg string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+topName(t)+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCase+"="+caseName, envHome+"="+home, envKey+"="+s.key.Encode(), envArg+"="+arg)
	return cmd
}

// topName is the name of the test that called Run.
func topName(t *testing.T) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

func (s *suite) processes(t *testing.T) {
	home := s.f.New(t)
	n := s.f.Processes
	if n <= 0 {
		n = 6
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin interface{ Close() error }
		lines chan string
	}
	var procs []proc
	for i := range n {
		cmd := s.childCmd(t, "lock", home, "op_proc_"+strconv.Itoa(i))
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := proc{cmd: cmd, stdin: in, lines: make(chan string, 16)}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "storagetest: ") {
					p.lines <- strings.TrimPrefix(l, "storagetest: ")
				}
			}
			close(p.lines)
		}()
		procs = append(procs, p)
	}
	winners, winner := 0, ""
	var refusals []string
	deadline := time.After(60 * time.Second)
	for i, p := range procs {
		select {
		case l, ok := <-p.lines:
			switch {
			case !ok:
				t.Errorf("process %d said nothing", i)
			case strings.HasPrefix(l, "won "):
				winners++
				winner = strings.TrimPrefix(l, "won ")
			case strings.HasPrefix(l, "locked "):
				refusals = append(refusals, strings.TrimPrefix(l, "locked "))
			default:
				t.Errorf("process %d: %s", i, l)
			}
		case <-deadline:
			t.Fatal("processes did not answer within 60 s")
		}
	}
	for _, p := range procs {
		p.stdin.Close()
		p.cmd.Wait()
	}
	t.Logf("%d processes raced: %s won, %d refused naming it", n, winner, len(refusals))
	if winners != 1 {
		t.Fatalf("%d of %d processes took the lock, want exactly 1", winners, n)
	}
	for _, r := range refusals {
		if r != winner {
			t.Errorf("a refusal names %q, the holder is %q", r, winner)
		}
	}
}

// The crash case: a process runs script and is killed (SIGKILL) right
// after its k-th durable write, for k = 1, 2, ... until it finishes.
func (s *suite) crash(t *testing.T) {
	ctx := context.Background()
	cs := script("op_crash")
	for k := 1; ; k++ {
		if k > 200 {
			t.Fatal("the script never finished")
		}
		home := s.f.New(t)
		cmd := s.childCmd(t, "crash", home, strconv.Itoa(k))
		cmd.Stderr = os.Stderr
		out, _ := cmd.Output()
		acked := 0
		finished := false
		for _, l := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(l, "storagetest: ack "):
				acked, _ = strconv.Atoi(strings.TrimPrefix(l, "storagetest: ack "))
			case l == "storagetest: done":
				finished = true
			}
		}
		killed := cmd.ProcessState != nil && !cmd.ProcessState.Success()
		if !killed && !finished {
			t.Fatalf("k=%d: the process neither finished nor was killed: %s", k, cmd.ProcessState)
		}
		b := s.open(t, home)
		st, err := b.Load(ctx)
		if err != nil {
			t.Fatalf("killed after write %d (%d commits acknowledged): load: %v", k, acked, err)
		}
		// A prefix: every acknowledged commit, maybe the one in flight.
		okPrefix := false
		for _, n := range []int{acked, acked + 1} {
			if n <= len(cs) && sameState(st, model(cs, n)) == nil {
				okPrefix = true
			}
		}
		if !okPrefix {
			t.Fatalf("killed after write %d (%d commits acknowledged): the state loaded is no prefix of them: %v", k, acked, sameState(st, model(cs, acked)))
		}
		recs, bad, err := b.Journal(ctx)
		if err != nil || len(bad) > 0 {
			t.Fatalf("killed after write %d: journal: %v %v", k, bad, err)
		}
		if want := countRecords(cs, acked); len(recs) < want || len(recs) > countRecords(cs, acked+1) {
			t.Fatalf("killed after write %d: %d journal record(s) for %d acknowledged commits (want %d..%d)", k, len(recs), acked, want, countRecords(cs, acked+1))
		}
		// The dead holder's lock is free, and writing goes on.
		w, err := b.Lock(ctx, holder("op_after_crash"))
		if err != nil {
			t.Fatalf("killed after write %d: lock after the crash: %v", k, err)
		}
		if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_after_crash", "z", journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res("z", 1)}}}); err != nil {
			t.Fatalf("killed after write %d: commit after the crash: %v", k, err)
		}
		w.Release(ctx)
		if st2, err := s.open(t, home).Load(ctx); err != nil || st2.Serial != st.Serial+1 || st2.Resources["z"] == nil {
			t.Fatalf("killed after write %d: after a commit past the crash: %+v %v", k, st2, err)
		}
		if finished {
			t.Logf("killed at each of %d write boundaries, then ran to the end", k-1)
			return
		}
	}
}

// deferredScript is a run's commits as the engine makes them: a step's
// "verify ok" and a skipped step's "check skipped" are Deferred.
func deferredScript(op string) []storage.Commit {
	var out []storage.Commit
	out = append(out, storage.Commit{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}})
	for i := range 4 {
		n := fmt.Sprintf("r%d", i)
		skipped := step(op, "s"+n, journal.StepSkipped)
		skipped.Phase = "check"
		verified := step(op, n, journal.StepOK)
		verified.Phase = "verify"
		out = append(out,
			storage.Commit{Records: []journal.Record{skipped}, Deferred: true},
			storage.Commit{Records: []journal.Record{step(op, n, journal.StepStarted)}},
			storage.Commit{Records: []journal.Record{step(op, n, journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res(n, i)}}},
			storage.Commit{Records: []journal.Record{verified}, Deferred: true},
		)
	}
	out = append(out, storage.Commit{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}})
	return out
}

// recordKeys names each record of cs (step, phase, status), in order.
func recordKeys(cs []storage.Commit) []string {
	var out []string
	for _, c := range cs {
		for _, r := range c.Records {
			out = append(out, r.Kind+" "+r.Step+" "+r.Phase+" "+r.Status)
		}
	}
	return out
}

func journalKeys(recs []journal.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Kind+" "+r.Step+" "+r.Phase+" "+r.Status)
	}
	return out
}

// A Deferred Commit is acknowledged at once and written, in order, with
// the next waited Commit, Checkpoint or Release; one that carries a change
// is waited for.
func (s *suite) deferred(t *testing.T) {
	ctx := context.Background()
	home := s.f.New(t)
	w := s.lock(t, s.open(t, home), "op_def")
	rec := func(name string) journal.Record { return step("op_def", name, journal.StepOK) }
	var want []storage.Commit
	commit := func(c storage.Commit) int64 {
		t.Helper()
		serial, err := w.Commit(ctx, c)
		if err != nil {
			t.Fatalf("commit %v: %v", journalKeys(c.Records), err)
		}
		want = append(want, c)
		return serial
	}
	// seen checks what another reader finds: every record committed so
	// far, in order (at least up to the last waited one).
	seen := func(what string) {
		t.Helper()
		recs, bad, err := s.open(t, home).Journal(ctx)
		if err != nil || len(bad) > 0 {
			t.Fatalf("%s: journal: %v %v", what, bad, err)
		}
		if got, all := journalKeys(recs), recordKeys(want); !slices.Equal(got, all) {
			t.Fatalf("%s: another reader finds %v, want %v", what, got, all)
		}
	}
	commit(storage.Commit{Records: []journal.Record{rec("a")}, Change: storage.Change{Put: []*state.Resource{res("a", 1)}}})
	if serial := commit(storage.Commit{Records: []journal.Record{rec("d1"), rec("d2")}, Deferred: true}); serial != 1 {
		t.Errorf("a deferred commit returned serial %d, want the state's, 1", serial)
	}
	commit(storage.Commit{Records: []journal.Record{rec("d3")}, Deferred: true})
	commit(storage.Commit{Records: []journal.Record{rec("b")}})
	seen("after a waited commit")
	// A change is never deferred: it is there for a reader at once.
	if serial := commit(storage.Commit{Records: []journal.Record{rec("c")}, Change: storage.Change{Put: []*state.Resource{res("c", 3)}}, Deferred: true}); serial != 2 {
		t.Errorf("a deferred commit with a change returned serial %d, want 2", serial)
	}
	if st, err := s.open(t, home).Load(ctx); err != nil || st.Resources["c"] == nil {
		t.Fatalf("a deferred commit with a change was not durable when acknowledged: %v", err)
	}
	seen("after a deferred commit with a change")
	commit(storage.Commit{Records: []journal.Record{rec("d4")}, Deferred: true})
	if err := w.Checkpoint(ctx, 20); err != nil {
		t.Fatal(err)
	}
	seen("after a checkpoint")
	commit(storage.Commit{Records: []journal.Record{rec("d5")}, Deferred: true})
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	seen("after release")
}

// The crash case with deferred records: killed after each durable write,
// the journal holds a prefix of what was committed, in order, with every
// record of each acknowledged waited commit and of the deferred ones
// before it.
func (s *suite) crashDeferred(t *testing.T) {
	ctx := context.Background()
	cs := deferredScript("op_crash")
	keys := recordKeys(cs)
	for k := 1; ; k++ {
		if k > 200 {
			t.Fatal("the script never finished")
		}
		home := s.f.New(t)
		cmd := s.childCmd(t, "crash-deferred", home, strconv.Itoa(k))
		cmd.Stderr = os.Stderr
		out, _ := cmd.Output()
		acked, finished := 0, false
		for _, l := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(l, "storagetest: ack "):
				acked, _ = strconv.Atoi(strings.TrimPrefix(l, "storagetest: ack "))
			case l == "storagetest: done":
				finished = true
			}
		}
		if killed := cmd.ProcessState != nil && !cmd.ProcessState.Success(); !killed && !finished {
			t.Fatalf("k=%d: the process neither finished nor was killed: %s", k, cmd.ProcessState)
		}
		// The last waited commit acknowledged, and the next one (in flight).
		lastWaited, next := 0, len(cs)
		for i := range acked {
			if !cs[i].Deferred {
				lastWaited = i + 1
			}
		}
		for i := acked; i < len(cs); i++ {
			if !cs[i].Deferred {
				next = i + 1
				break
			}
		}
		b := s.open(t, home)
		st, err := b.Load(ctx)
		if err != nil {
			t.Fatalf("killed after write %d: load: %v", k, err)
		}
		if sameState(st, model(cs, acked)) != nil && sameState(st, model(cs, next)) != nil {
			t.Fatalf("killed after write %d (%d commits acknowledged): the state is no prefix: %v", k, acked, sameState(st, model(cs, acked)))
		}
		recs, bad, err := b.Journal(ctx)
		if err != nil || len(bad) > 0 {
			t.Fatalf("killed after write %d: journal: %v %v", k, bad, err)
		}
		got := journalKeys(recs)
		lo, hi := countRecords(cs, lastWaited), countRecords(cs, next)
		if len(got) < lo || len(got) > hi || !slices.Equal(got, keys[:len(got)]) {
			t.Fatalf("killed after write %d (%d commits acknowledged): journal %v, want the first %d..%d of %v", k, acked, got, lo, hi, keys)
		}
		if finished {
			if len(got) != len(keys) {
				t.Fatalf("finished, yet the journal has %d of %d records", len(got), len(keys))
			}
			t.Logf("killed at each of %d write boundaries, then ran to the end", k-1)
			return
		}
	}
}

// compactOps is how many operations the compaction crash case runs, each
// of compactScript's commits and a Checkpoint keeping 1 operation whole:
// the journal is compacted at the third and the fifth.
const compactOps = 6

// compactScript is operation i's commits in the compaction crash case.
func compactScript(i int) []storage.Commit {
	op := fmt.Sprintf("op_compact_%d", i)
	n := fmt.Sprintf("c%d", i)
	return []storage.Commit{
		{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning}}},
		{Records: []journal.Record{step(op, n, journal.StepStarted)}},
		{Records: []journal.Record{step(op, n, journal.StepOK)}, Change: storage.Change{Put: []*state.Resource{res(n, i)}}},
		{Records: []journal.Record{{Op: op, Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded}}},
	}
}

// The compaction crash case: operations run one after the other, each
// ended by a Checkpoint that keeps one whole, so the journal is compacted
// twice; the process is killed (SIGKILL) right after its k-th durable
// write, for k = 1, 2, ... until it finishes. After every kill the state
// is one of acknowledged commits, every operation acknowledged is in the
// journal whole or as its one summary line (an operation in flight: a
// prefix of its records), nothing else is, and the stack goes on.
func (s *suite) crashCompacting(t *testing.T) {
	ctx := context.Background()
	var cs []storage.Commit
	for i := range compactOps {
		cs = append(cs, compactScript(i)...)
	}
	for k := 1; ; k++ {
		if k > 400 {
			t.Fatal("the script never finished")
		}
		home := s.f.New(t)
		cmd := s.childCmd(t, "compactcrash", home, strconv.Itoa(k))
		cmd.Stderr = os.Stderr
		out, _ := cmd.Output()
		acked, finished := 0, false
		for _, l := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(l, "storagetest: ack "):
				acked, _ = strconv.Atoi(strings.TrimPrefix(l, "storagetest: ack "))
			case l == "storagetest: done":
				finished = true
			}
		}
		if killed := cmd.ProcessState != nil && !cmd.ProcessState.Success(); !killed && !finished {
			t.Fatalf("k=%d: the process neither finished nor was killed: %s\n%s", k, cmd.ProcessState, out)
		}
		b := s.open(t, home)
		st, err := b.Load(ctx)
		if err != nil {
			t.Fatalf("killed after write %d (%d commits acknowledged): load: %v", k, acked, err)
		}
		if sameState(st, model(cs, acked)) != nil && (acked == len(cs) || sameState(st, model(cs, acked+1)) != nil) {
			t.Fatalf("killed after write %d (%d commits acknowledged): the state loaded is no prefix of them: %v", k, acked, sameState(st, model(cs, acked)))
		}
		recs, bad, err := b.Journal(ctx)
		if err != nil || len(bad) > 0 {
			t.Fatalf("killed after write %d: journal: %v %v", k, bad, err)
		}
		if err := opsInJournal(recs, acked); err != nil {
			t.Fatalf("killed after write %d (%d commits acknowledged): %v", k, acked, err)
		}
		// The stack goes on: one more operation, compacted as ever.
		w, err := b.Lock(ctx, holder("op_compact_after"))
		if err != nil {
			t.Fatalf("killed after write %d: lock after the crash: %v", k, err)
		}
		for _, c := range compactScript(compactOps) {
			if _, err := w.Commit(ctx, c); err != nil {
				t.Fatalf("killed after write %d: commit after the crash: %v", k, err)
			}
		}
		if err := w.Checkpoint(ctx, 1); err != nil {
			t.Fatalf("killed after write %d: checkpoint after the crash: %v", k, err)
		}
		w.Release(ctx)
		b2 := s.open(t, home)
		if _, err := b2.Load(ctx); err != nil {
			t.Fatalf("killed after write %d: load after going on: %v", k, err)
		}
		recs, bad, err = b2.Journal(ctx)
		if err != nil || len(bad) > 0 {
			t.Fatalf("killed after write %d: journal after going on: %v %v", k, bad, err)
		}
		if n := len(recs); n == 0 || recs[n-1].Op != fmt.Sprintf("op_compact_%d", compactOps) || recs[n-1].Status != journal.OpSucceeded {
			t.Fatalf("killed after write %d: the operation after the crash is not the journal's last: %+v", k, recs)
		}
		if finished {
			t.Logf("killed at each of %d write boundaries of %d operations compacted twice, then ran to the end", k-1, compactOps)
			return
		}
	}
}

// opsInJournal checks the journal of the compaction crash case after
// acked commits: the operations in order, each whole (its commits' records
// so far) or one summary of a finished one, and none that never started.
func opsInJournal(recs []journal.Record, acked int) error {
	per := len(compactScript(0))
	i := 0
	for op := 0; op < compactOps; op++ {
		id := fmt.Sprintf("op_compact_%d", op)
		done := min(max(acked-op*per, 0), per) // its commits acknowledged
		var mine []journal.Record
		for i < len(recs) && recs[i].Op == id {
			mine = append(mine, recs[i])
			i++
		}
		switch {
		case len(mine) == 1 && mine[0].Kind == journal.KindSummary:
			if done < per-1 || mine[0].Status != journal.OpSucceeded || mine[0].Steps != per {
				return fmt.Errorf("operation %d (%d of its commits acknowledged) is summarized as %+v", op, done, mine[0])
			}
		case len(mine) < done || len(mine) > min(done+1, per):
			return fmt.Errorf("operation %d: %d record(s) for %d commits acknowledged", op, len(mine), done)
		}
		for j, r := range mine {
			if r.Kind != journal.KindSummary && r.Status != compactScript(op)[j].Records[0].Status {
				return fmt.Errorf("operation %d: record %d is %+v", op, j, r)
			}
		}
	}
	if i != len(recs) {
		return fmt.Errorf("the journal holds %d record(s) of no operation run: %+v", len(recs)-i, recs[i:])
	}
	return nil
}

func countRecords(cs []storage.Commit, n int) int {
	c := 0
	for _, x := range cs[:min(n, len(cs))] {
		c += len(x.Records)
	}
	return c
}

// child plays a process's part of a case, then exits.
func child(t *testing.T, f Factory, name string) {
	ctx := context.Background()
	home, arg := os.Getenv(envHome), os.Getenv(envArg)
	key, err := secrets.ParseKey(os.Getenv(envKey), "storagetest")
	if err != nil {
		fmt.Println("storagetest: key:", err)
		os.Exit(2)
	}
	o := storage.Options{Stack: Stack, Sealing: state.Sealing{Sealer: key.Box(secrets.StackContext(Stack))}}
	say := func(format string, a ...any) { fmt.Printf("storagetest: "+format+"\n", a...) }
	switch name {
	case "lock":
		b, err := f.Open(ctx, home, o)
		if err != nil {
			say("open: %v", err)
			os.Exit(2)
		}
		w, err := b.Lock(ctx, holder(arg))
		var le *storage.LockedError
		switch {
		case errors.As(err, &le) && le.Holder != nil:
			say("locked %s", le.Holder.Op)
			os.Exit(0)
		case err != nil:
			say("lock: %v", err)
			os.Exit(2)
		}
		say("won %s", arg)
		// Hold it until the test has heard from every process.
		bufio.NewReader(os.Stdin).ReadString('\n')
		w.Release(ctx)
		os.Exit(0)
	case "crash":
		k, _ := strconv.Atoi(arg)
		writes := 0
		o.AfterWrite = func() {
			writes++
			if writes == k {
				killSelf()
				select {}
			}
		}
		b, err := f.Open(ctx, home, o)
		if err != nil {
			say("open: %v", err)
			os.Exit(2)
		}
		w, err := b.Lock(ctx, holder("op_crash"))
		if err != nil {
			say("lock: %v", err)
			os.Exit(2)
		}
		for i, c := range script("op_crash") {
			if _, err := w.Commit(ctx, c); err != nil {
				say("commit %d: %v", i, err)
				os.Exit(2)
			}
			say("ack %d", i+1)
			if i == 6 {
				// A checkpoint and a backup in the middle are write
				// boundaries too.
				if err := w.Checkpoint(ctx, 1); err != nil {
					say("checkpoint: %v", err)
					os.Exit(2)
				}
				if _, err := w.PutBackup(ctx, "op_crash", 5); err != nil {
					say("backup: %v", err)
					os.Exit(2)
				}
			}
		}
		if err := w.Checkpoint(ctx, 1); err != nil {
			say("checkpoint: %v", err)
			os.Exit(2)
		}
		w.Release(ctx)
		say("done")
		os.Exit(0)
	case "crash-deferred":
		k, _ := strconv.Atoi(arg)
		writes := 0
		o.AfterWrite = func() {
			writes++
			if writes == k {
				killSelf()
				select {}
			}
		}
		b, err := f.Open(ctx, home, o)
		if err != nil {
			say("open: %v", err)
			os.Exit(2)
		}
		w, err := b.Lock(ctx, holder("op_crash"))
		if err != nil {
			say("lock: %v", err)
			os.Exit(2)
		}
		for i, c := range deferredScript("op_crash") {
			if _, err := w.Commit(ctx, c); err != nil {
				say("commit %d: %v", i, err)
				os.Exit(2)
			}
			say("ack %d", i+1)
		}
		w.Release(ctx)
		say("done")
		os.Exit(0)
	case "compactcrash":
		k, _ := strconv.Atoi(arg)
		writes := 0
		o.AfterWrite = func() {
			writes++
			if writes == k {
				killSelf()
				select {}
			}
		}
		b, err := f.Open(ctx, home, o)
		if err != nil {
			say("open: %v", err)
			os.Exit(2)
		}
		w, err := b.Lock(ctx, holder("op_compact"))
		if err != nil {
			say("lock: %v", err)
			os.Exit(2)
		}
		acked := 0
		for i := range compactOps {
			for _, c := range compactScript(i) {
				if _, err := w.Commit(ctx, c); err != nil {
					say("commit: %v", err)
					os.Exit(2)
				}
				acked++
				say("ack %d", acked)
			}
			if err := w.Checkpoint(ctx, 1); err != nil {
				say("checkpoint: %v", err)
				os.Exit(2)
			}
		}
		w.Release(ctx)
		say("done")
		os.Exit(0)
	}
	say("unknown case %q", name)
	os.Exit(2)
}

// handEdit: a protection level lowered by hand where the backend stores it
// is refused by Load (state.ErrCorrupt, naming the stack), never loaded:
// whether it is stored in a snapshot (after a Checkpoint) or only in what
// a Commit wrote (a journal's change, a WAL object, a row).
func (s *suite) handEdit(t *testing.T) {
	if s.f.Tamper == nil {
		t.Skip("the factory cannot edit what its backend stores")
	}
	for _, checkpoint := range []bool{true, false} {
		name := "after a checkpoint"
		if !checkpoint {
			name = "as committed"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			home := s.f.New(t)
			b := s.open(t, home)
			w := s.lock(t, b, "op_1")
			vault := res("vault", 1)
			vault.Protection = protection.Durable
			if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{step("op_1", "vault", journal.StepOK)},
				Change: storage.Change{Put: []*state.Resource{vault, res("web", 1)}}}); err != nil {
				t.Fatal(err)
			}
			if checkpoint {
				if err := w.Checkpoint(ctx, 20); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if st, err := s.open(t, home).Load(ctx); err != nil || st.Resources["vault"] == nil || st.Resources["vault"].Protection != protection.Durable {
				t.Fatalf("before the edit: %v %v", st, err)
			}
			s.f.Tamper(t, home, `"durable"`, `"ephemeral"`)
			st, err := s.open(t, home).Load(ctx)
			if err == nil {
				t.Fatalf("a protection level lowered by hand was loaded: vault is %s", st.Resources["vault"].Protection)
			}
			if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), Stack) {
				t.Fatalf("Load after a hand edit: %v, want state.ErrCorrupt naming stack %s", err, Stack)
			}
		})
	}
}

// killSelf ends this process at once, as a crash would: SIGKILL on unix,
// TerminateProcess on Windows. No deferred function runs.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {}
}
