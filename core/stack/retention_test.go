package stack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
)

func backups(t *testing.T, e *env, stackName string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(stack.StackDir(e.stateDir, stackName), "backups"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, en := range entries {
		out = append(out, en.Name())
	}
	return out
}

// A no-op apply records no revision and no backup: the state folder stops
// growing under repeated no-op runs (docs/architecture.md, "State backends
// and retention").
func TestNoOpApplyRecordsNoRevisionNoBackup(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "net", typ: "network"}, res{name: "vm", typ: "compute", deps: []string{"net"}, size: 1})
	e.mustApply(t, sp)
	e.mustApply(t, mkSpec(t, res{name: "net", typ: "network"}, res{name: "vm", typ: "compute", deps: []string{"net"}, size: 2}))
	st0, b0 := e.state(t, "s"), backups(t, e, "s")
	if len(st0.Revisions) != 2 || len(b0) != 1 {
		t.Fatalf("after a create and an update: %d revisions, backups %v", len(st0.Revisions), b0)
	}
	sp2 := mkSpec(t, res{name: "net", typ: "network"}, res{name: "vm", typ: "compute", deps: []string{"net"}, size: 2})
	for i := 0; i < 3; i++ {
		if r := e.mustApply(t, sp2); r.Changed != 0 {
			t.Fatalf("no-op apply %d changed %d", i, r.Changed)
		}
	}
	st, b := e.state(t, "s"), backups(t, e, "s")
	if len(st.Revisions) != 2 || st.Current != st0.Current || len(b) != 1 {
		t.Errorf("after 3 no-op applies: %d revisions (current %d, was %d), backups %v", len(st.Revisions), st.Current, st0.Current, b)
	}
	// Drift is not a no-op: the run that repairs it is recorded.
	e.w.Remove("vm")
	if r := e.mustApply(t, sp2); r.Changed != 1 {
		t.Fatalf("repairing apply changed %d", r.Changed)
	}
	if st := e.state(t, "s"); len(st.Revisions) != 3 {
		t.Errorf("a repairing apply recorded %d revisions, want 3", len(st.Revisions))
	}
}

// Only the last KeepRevisions revisions (default 20) and 5 backups are kept;
// the current one always is, and numbers are never reused.
func TestRetentionBoundsRevisionsAndBackups(t *testing.T) {
	for _, tt := range []struct {
		name string
		keep int
		want int
	}{{"default", 0, stack.DefaultKeepRevisions}, {"keep 3", 3, 3}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			keep := func(o *stack.Options) { o.KeepRevisions = tt.keep }
			const n = 25
			for i := 1; i <= n; i++ {
				e.mustApply(t, mkSpec(t, res{name: "vm", typ: "compute", size: i}), keep)
			}
			st := e.state(t, "s")
			if len(st.Revisions) != tt.want || st.Current != n {
				t.Errorf("%d revisions kept (want %d), current %d (want %d)", len(st.Revisions), tt.want, st.Current, n)
			}
			if first := st.Revisions[0].N; first != n-tt.want+1 {
				t.Errorf("oldest kept revision %d, want %d", first, n-tt.want+1)
			}
			if b := backups(t, e, "s"); len(b) != stack.KeepBackups {
				t.Errorf("%d backups kept, want %d: %v", len(b), stack.KeepBackups, b)
			}
		})
	}
}

// rollback with no --to goes to the last revision whose spec differs from
// the current one: a revision that re-applied the same spec (a repaired
// drift) would make it do nothing.
func TestRollbackDefaultSkipsTheSameSpec(t *testing.T) {
	e := newEnv(t)
	a := mkSpec(t, res{name: "vm", typ: "compute", size: 1})
	b := mkSpec(t, res{name: "vm", typ: "compute", size: 2})
	e.mustApply(t, a) // revision 1
	e.mustApply(t, b) // revision 2
	e.w.Remove("vm")
	e.mustApply(t, b) // revision 3: the same spec, drift repaired
	r, err := stack.Rollback(e.ctx, b, e.opts(), 0)
	if err != nil || r.Err != nil {
		t.Fatalf("rollback: %v %v", err, resErr(r))
	}
	st := e.state(t, "s")
	if st.Current != 1 {
		t.Errorf("rollback went to revision %d, want 1 (the last whose spec differs)", st.Current)
	}
	if got := e.w.ByName("vm"); got == nil || fmt.Sprint(got.Attrs["size"]) != "1" {
		t.Errorf("after rollback: %+v", got)
	}
}

// The journal keeps the newest operations whole and compacts older finished
// ones to one summary line each, and consecutive no-op applies to one line
// in all: its size follows the number of operations that changed
// something, not the records every run writes, and history still accounts
// for every one.
func TestJournalCompactsOldOperations(t *testing.T) {
	e := newEnv(t)
	var rs []res
	for i := 0; i < 10; i++ {
		rs = append(rs, res{name: fmt.Sprintf("r%d", i), typ: "generic"})
	}
	sp := mkSpec(t, rs...)
	keep := func(o *stack.Options) { o.KeepOperations = 3 }
	const runs = 30
	for i := 0; i < runs; i++ {
		e.mustApply(t, sp, keep)
	}
	recs := journalIn(t, stack.StackDir(e.stateDir, "s"))
	lines, summarized, whole := 0, 0, map[string]bool{}
	for _, r := range recs {
		if r.Kind == journal.KindSummary {
			lines++
			summarized += max(r.Repeated, 1)
		} else {
			whole[r.Op] = true
		}
	}
	// The first apply, then the no-op ones as one line.
	if len(whole) > 2*3+1 || summarized+len(whole) != runs || lines != 2 {
		t.Errorf("%d operations whole, %d summarized in %d line(s): want at most %d whole, the rest in 2 lines", len(whole), summarized, lines, 2*3+1)
	}
	rep, err := inspect.StackHistory(sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range rep.Operations {
		n += max(o.Repeated, 1)
		if o.Status != journal.OpSucceeded || o.End.IsZero() || o.Type == "" || (o.Repeated > 1 && (o.LastID <= o.ID || o.LastStart.Before(o.Start))) {
			t.Errorf("history: %+v", o)
		}
	}
	if n != runs || len(rep.Operations) != len(whole)+2 {
		t.Fatalf("history lists %d operations in %d lines, want %d in %d", n, len(rep.Operations), runs, len(whole)+2)
	}
	// A failed, compensated run among them is compacted like any finished
	// one later, and the stack goes on converging.
	e.w.FailCreate("late")
	withLate := mkSpec(t, append(rs, res{name: "late", typ: "generic"})...)
	if r, _ := e.apply(withLate, keep); stack.ExitCode(r, nil) != stack.ExitCompensated {
		t.Fatalf("failing apply: %+v", r)
	}
	e.w.ClearFaults()
	for i := 0; i < 10; i++ {
		e.mustApply(t, sp, keep)
	}
	if st := e.state(t, "s"); len(st.Resources) != 10 {
		t.Errorf("after compaction: %d resources recorded", len(st.Resources))
	}
}
