package stack_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// mutateState rewrites a stack's state file behind bulwark's back.
func (e *env) mutateState(t *testing.T, stackName string, fn func(*state.State)) {
	t.Helper()
	st, err := state.Open(stack.StackDir(e.stateDir, stackName), stackName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Mutate(func(s *state.State) error { fn(s); return nil }); err != nil {
		t.Fatal(err)
	}
}

// Two stacks on one world: beta names alpha's protected database. Nothing
// is adopted: beta's plan shows the conflict naming alpha, beta's apply is
// refused before any step (exit 1), and beta's teardown deletes nothing.
func TestNoAdoptionAcrossStacks(t *testing.T) {
	e := newEnv(t)
	alpha := parseSpec(t, specYAML("alpha", res{name: "database", typ: "dynamodb_table", prot: "protected"}))
	beta := parseSpec(t, specYAML("beta", res{name: "database", typ: "dynamodb_table"}, res{name: "net", typ: "network"}))
	e.mustApply(t, alpha)
	c0, u0, d0 := e.w.Calls()

	pv, err := stack.Plan(e.ctx, beta, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if pv.Conflict == nil || len(pv.Conflict.Conflicts) != 1 {
		t.Fatalf("plan: conflict %v", pv.Conflict)
	}
	c := pv.Changes[0]
	if c.Action != plan.Conflict || c.Ownership != plan.Foreign || !strings.Contains(c.Owner, "stack alpha") {
		t.Errorf("plan of database: %+v", c.Change)
	}
	if c.Resource != "database" || !strings.Contains(pv.Conflict.Error(), "belongs to stack alpha") {
		t.Errorf("plan: conflict of %s: %v", c.Resource, pv.Conflict)
	}
	if code := stack.ExitCode(nil, pv.Err()); code != stack.ExitError {
		t.Errorf("plan exit %d", code)
	}

	r, err := e.apply(beta)
	var ce *plan.ConflictError
	if !errors.As(err, &ce) || stack.ExitCode(r, err) != stack.ExitError {
		t.Fatalf("beta apply: %v, exit %d", err, stack.ExitCode(r, err))
	}
	for _, want := range []string{"database", "stack alpha", "bulwark import stack.yaml NAME ID", "import: ID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if c1, u1, d1 := e.w.Calls(); c1 != c0 || u1 != u0 || d1 != d0 {
		t.Errorf("a refused apply called the provider: creates %d->%d, updates %d->%d, deletes %d->%d", c0, c1, u0, u1, d0, d1)
	}
	if st := e.state(t, "beta"); len(st.Resources) != 0 {
		t.Errorf("beta's state records %v", st.Names())
	}
	recs := journalIn(t, stack.StackDir(e.stateDir, "beta"))
	if len(recs) == 0 || recs[len(recs)-1].Status != journal.OpRefused {
		t.Errorf("the refusal is not journaled: %+v", recs)
	} else if last := recs[len(recs)-1]; last.User != storage.CurrentUser() || last.Spec == "" {
		t.Errorf("the refusal's record names user %q and spec %q, want %q and the spec's file", last.User, last.Spec, storage.CurrentUser())
	}

	if _, err := e.teardown(beta); err != nil {
		t.Fatalf("beta teardown: %v", err)
	}
	if _, _, d1 := e.w.Calls(); d1 != d0 {
		t.Errorf("beta's teardown deleted %v", e.w.Deletes()[d0:])
	}
	if e.w.ByName("database") == nil {
		t.Fatal("alpha's database is gone")
	}
	if pv, err := stack.Plan(e.ctx, alpha, e.opts()); err != nil || pv.HasChanges() {
		t.Errorf("alpha's plan after beta: %v, %+v", err, pv)
	}
}

// A resource made out of band, with no key, is a conflict too.
func TestOutOfBandResourceIsAConflict(t *testing.T) {
	e := newEnv(t)
	other := parseSpec(t, specYAML("other", res{name: "bucket", typ: "s3_bucket"}))
	e.mustApply(t, other)
	// Forget it in the other stack's state: now nobody records it.
	e.mutateState(t, "other", func(s *state.State) { delete(s.Resources, "bucket") })
	e.w.mu.Lock()
	for _, r := range e.w.resources {
		r.Key = ""
	}
	e.w.mu.Unlock()
	sp := parseSpec(t, specYAML("mine", res{name: "bucket", typ: "s3_bucket"}))
	_, err := e.apply(sp)
	var ce *plan.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(ce.Conflicts[0].Owner, "not made by bulwark") {
		t.Fatalf("apply: %v", err)
	}
}

// A protected resource whose force_new attribute drifted is refused by plan
// and apply alike (exit 3), and nothing is called.
func TestProtectedDriftPlanAndApplyAgree(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "db", typ: "dynamodb_table", prot: "protected", zone: "z1"})
	e.mustApply(t, sp)
	e.w.SetAttr("db", "zone", "z2")
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if pv.Refused == nil || stack.ExitCode(nil, pv.Err()) != stack.ExitRefused {
		t.Fatalf("plan: refused %v", pv.Refused)
	}
	if !strings.Contains(pv.Refused.Error(), "apply refused: it would delete protected resource(s) db") {
		t.Errorf("plan: refused %v", pv.Refused)
	}
	c0, u0, d0 := e.w.Calls()
	r, err := e.apply(sp)
	if stack.ExitCode(r, err) != stack.ExitRefused {
		t.Fatalf("apply: exit %d, %v", stack.ExitCode(r, err), err)
	}
	if c1, u1, d1 := e.w.Calls(); c1 != c0 || u1 != u0 || d1 != d0 {
		t.Error("a refused apply called the provider")
	}
}

// Reordering depends_on changes nothing, in plan and in apply.
func TestDependsOnReorderIsANoOp(t *testing.T) {
	e := newEnv(t)
	rs := []res{{name: "a", typ: "network"}, {name: "b", typ: "network"}, {name: "c", typ: "compute", deps: []string{"a", "b"}}}
	e.mustApply(t, mkSpec(t, rs...))
	rs[2].deps = []string{"b", "a"}
	sp := mkSpec(t, rs...)
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil || pv.HasChanges() {
		t.Fatalf("plan: %v, %+v", err, pv)
	}
	r := e.mustApply(t, sp)
	if r.Changed != 0 || r.Unchanged != 3 {
		t.Errorf("apply: %d changed, %d unchanged", r.Changed, r.Unchanged)
	}
}

// What a Create under this stack's key made, that the state does not
// record (a crash between the Create and the state write), is ours: the
// plan says it will be recorded, the apply records it and creates nothing.
func TestFoundUnderOurKeyIsRecovered(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "network"})
	e.mustApply(t, sp)
	e.mutateState(t, "s", func(s *state.State) { delete(s.Resources, "b") })
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil || pv.Err() != nil {
		t.Fatalf("plan: %v %v", err, pv.Err())
	}
	if c := pv.Changes[1]; c.Ownership != plan.Recovered || c.Action != plan.Update || !strings.Contains(c.Drift, "will be recorded") {
		t.Errorf("plan of b: %+v", c)
	}
	c0, _, _ := e.w.Calls()
	e.mustApply(t, sp)
	if c1, _, _ := e.w.Calls(); c1 != c0 {
		t.Error("a recovered resource was created again")
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
}

// Every state gets a lineage on its first write, the journal records carry
// it, and a state of another lineage than its journal is refused.
func TestLineage(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"})
	e.mustApply(t, sp)
	st := e.state(t, "s")
	if st.Lineage == "" {
		t.Fatal("no lineage recorded")
	}
	if k := st.Resources["a"].IdempotencyKey; k != "bulwark:s:"+st.Lineage+":"+strings.TrimPrefix(k, "bulwark:s:"+st.Lineage+":") || !strings.HasPrefix(k, "bulwark:s:"+st.Lineage+":") {
		t.Errorf("recorded key %q", k)
	}
	recs := journalIn(t, stack.StackDir(e.stateDir, "s"))
	for _, r := range recs {
		if r.Lineage != st.Lineage {
			t.Fatalf("record %+v does not carry lineage %s", r, st.Lineage)
		}
	}
	e.mutateState(t, "s", func(s *state.State) { s.Lineage = "01OTHERLINEAGE" })
	for name, run := range map[string]func() error{
		"apply": func() error { _, err := e.apply(sp); return err },
		"plan":  func() error { _, err := stack.Plan(e.ctx, sp, e.opts()); return err },
	} {
		var le *stack.LineageError
		if err := run(); !errors.As(err, &le) || !strings.Contains(err.Error(), "01OTHERLINEAGE") {
			t.Errorf("%s with a foreign state: %v", name, err)
		}
	}
}

// A state written before lineages and keys keeps working: what it records
// stays owned, and its next write mints a lineage.
func TestStateBeforeLineagesStaysOwned(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "db", typ: "dynamodb_table", prot: "protected"})
	e.mustApply(t, sp)
	// Make it look like an old stack: no lineage, bare keys, journal
	// without lineage.
	dir := stack.StackDir(e.stateDir, "s")
	e.mutateState(t, "s", func(s *state.State) {
		s.Lineage = ""
		for _, r := range s.Resources {
			r.IdempotencyKey = ""
		}
	})
	e.w.mu.Lock()
	for _, r := range e.w.resources {
		r.Key = "01BAREOLDKEY" + r.Name
	}
	e.w.mu.Unlock()
	if err := removeFile(filepath.Join(dir, "journal")); err != nil {
		t.Fatal(err)
	}
	if err := removeFile(filepath.Join(dir, journal.FileName)); err != nil {
		t.Fatal(err)
	}
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil || pv.HasChanges() {
		t.Fatalf("plan of an old state: %v %+v", err, pv)
	}
	r := e.mustApply(t, mkSpec(t, res{name: "a", typ: "network", size: 3}, res{name: "db", typ: "dynamodb_table", prot: "protected"}))
	if r.Changed != 1 {
		t.Errorf("changed %d", r.Changed)
	}
	if e.state(t, "s").Lineage == "" {
		t.Error("no lineage minted on the next write")
	}
}

func removeFile(path string) error { return os.RemoveAll(path) }

// A teardown never deletes what a recorded id holds once it carries another
// stack's key: the whole teardown is refused before its first delete.
func TestTeardownSparesWhatIsNoLongerOurs(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "network"})
	e.mustApply(t, sp)
	e.w.mu.Lock()
	for _, r := range e.w.resources {
		if r.Name == "b" {
			r.Key = "bulwark:other:01L:01X"
		}
	}
	e.w.mu.Unlock()
	_, _, d0 := e.w.Calls()
	r, err := e.teardown(sp)
	var ce *plan.ConflictError
	if !errors.As(err, &ce) || stack.ExitCode(r, err) != stack.ExitError || !strings.Contains(err.Error(), "what exists there now carries bulwark:other:01L:01X") {
		t.Fatalf("teardown: exit %d, %v", stack.ExitCode(r, err), err)
	}
	if strings.Contains(err.Error(), "bulwark import") {
		t.Errorf("a teardown conflict advises an import: %v", err)
	}
	if _, _, d1 := e.w.Calls(); d1 != d0 {
		t.Errorf("a refused teardown deleted %v", e.w.Deletes()[d0:])
	}
	// Forgotten, it is no longer this stack's business; the rest goes.
	if _, err := stack.StateForget(e.ctx, sp, e.opts(), "b"); err != nil {
		t.Fatal(err)
	}
	if r, err := e.teardown(sp); stack.ExitCode(r, err) != stack.ExitOK {
		t.Fatalf("teardown after forget: %v", err)
	}
	if e.w.ByName("b") == nil || e.w.ByName("a") != nil {
		t.Errorf("world after teardown: %v", e.w.Names())
	}
}

// A state command a crash interrupted is closed by resume (its one state
// write is atomic), and the stack is usable again.
func TestResumeClosesAnInterruptedStateCommand(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"})
	e.mustApply(t, sp)
	path := filepath.Join(stack.StackDir(e.stateDir, "s"), journal.FileName)
	j, err := journal.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(journal.Record{Op: "op_01INTERRUPTEDFORGET0000000", Kind: journal.KindOp, Type: stack.OpForget, Status: journal.OpRunning, Lineage: e.state(t, "s").Lineage}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	var u *stack.UnfinishedError
	if _, err := e.apply(sp); !errors.As(err, &u) {
		t.Fatalf("apply with an interrupted forget: %v", err)
	}
	r, err := e.resume(sp)
	if err != nil || r.Type != stack.OpForget || !strings.Contains(fmt.Sprint(r.Err), "run it again") {
		t.Fatalf("resume: %+v, %v", r, err)
	}
	e.mustApply(t, sp)
}

// state forget deletes nothing, at any level, and gives the resource up:
// though it carries this stack's key, an apply that names it again sees a
// conflict (import takes it back), not a crash to recover.
func TestForgetGivesTheResourceUp(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "db", typ: "dynamodb_table", prot: "protected"})
	e.mustApply(t, sp)
	id := e.state(t, "s").Resources["db"].ID
	_, _, d0 := e.w.Calls()
	if r, err := stack.StateForget(e.ctx, sp, e.opts(), "db"); err != nil || r.Err != nil {
		t.Fatalf("forget: %v %v", err, resErr(r))
	}
	if _, _, d1 := e.w.Calls(); d1 != d0 || e.w.ByName("db") == nil {
		t.Fatal("forget deleted something")
	}
	_, err := e.apply(sp)
	var ce *plan.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "was forgotten by this stack") {
		t.Fatalf("apply after forget: %v", err)
	}
	if r, err := stack.Import(e.ctx, sp, e.opts(), "db", id); err != nil || r.Err != nil {
		t.Fatalf("import: %v %v", err, resErr(r))
	}
	if r := e.mustApply(t, sp); r.Changed != 0 {
		t.Errorf("apply after import changed %d", r.Changed)
	}
	if st := e.state(t, "s"); !st.Resources["db"].Imported || len(st.Forgotten) != 0 {
		t.Errorf("after import: %+v, forgotten %v", st.Resources["db"], st.Forgotten)
	}
}

// A plan of a spec with import: calls nothing but Read (its providers are
// configured read-only); the apply imports through Import.
func TestPlanOfAnImportOnlyReads(t *testing.T) {
	e := newEnv(t)
	id := e.w.Put("network", "net", "")
	sp := parseSpec(t, strings.Replace(specYAML("s", res{name: "net", typ: "network"}), "    type: network\n", "    type: network\n    import: "+id+"\n", 1))
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil || pv.Err() != nil {
		t.Fatalf("plan: %v %v", err, pv.Err())
	}
	if c := pv.Changes[0]; c.Action != plan.Import || c.FoundID != id {
		t.Errorf("plan: %+v", c)
	}
	if n := e.w.imports(); n != 0 {
		t.Errorf("plan called Import %d times", n)
	}
	r := e.mustApply(t, sp)
	if r.Changed != 1 || e.w.imports() == 0 {
		t.Errorf("apply: %d changed, %d imports", r.Changed, e.w.imports())
	}
	if st := e.state(t, "s"); st.Resources["net"] == nil || !st.Resources["net"].Imported || st.Resources["net"].CreatedBy != "" {
		t.Errorf("recorded %+v", st.Resources["net"])
	}
}

// An import never takes a resource from the stack that made it: beta
// importing alpha's protected database (by its id, which anyone can read)
// is refused, by `bulwark import` and by `import:` in the spec alike, so
// beta's teardown cannot delete it. Naming the owner (--from) after alpha
// forgot it is the explicit way over.
func TestImportNeverTakesFromAnotherStack(t *testing.T) {
	e := newEnv(t)
	alpha := parseSpec(t, specYAML("alpha", res{name: "database", typ: "dynamodb_table", prot: "protected"}))
	beta := parseSpec(t, specYAML("beta", res{name: "database", typ: "dynamodb_table"}))
	e.mustApply(t, alpha)
	id := e.state(t, "alpha").Resources["database"].ID
	_, _, d0 := e.w.Calls()

	_, err := stack.Import(e.ctx, beta, e.opts(), "database", id)
	var ie *stack.ImportError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "belongs to stack alpha") || !strings.Contains(err.Error(), "--from alpha") {
		t.Fatalf("beta imports alpha's database: %v", err)
	}
	withImport := parseSpec(t, strings.Replace(specYAML("beta", res{name: "database", typ: "dynamodb_table"}), "    type: dynamodb_table\n", "    type: dynamodb_table\n    import: "+id+"\n", 1))
	pv, err := stack.Plan(e.ctx, withImport, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if c := pv.Changes[0]; c.Action != plan.Conflict || !strings.Contains(c.Reason, "belongs to stack alpha") {
		t.Errorf("plan of import: over alpha's database: %+v", c.Change)
	}
	var ce *plan.ConflictError
	if _, err := e.apply(withImport); !errors.As(err, &ce) {
		t.Errorf("apply of import: over alpha's database: %v", err)
	}
	if st := e.state(t, "beta"); len(st.Resources) != 0 {
		t.Fatalf("beta records %v", st.Names())
	}
	if _, err := e.teardown(beta); err != nil {
		t.Fatalf("beta teardown: %v", err)
	}
	if _, _, d1 := e.w.Calls(); d1 != d0 || e.w.ByName("database") == nil {
		t.Fatalf("alpha's database was deleted: %v", e.w.Deletes()[d0:])
	}

	// The explicit handover: alpha forgets it, beta names alpha.
	if r, err := stack.StateForget(e.ctx, alpha, e.opts(), "database"); err != nil || r.Err != nil {
		t.Fatalf("alpha forget: %v %v", err, resErr(r))
	}
	o := e.opts()
	o.ImportFrom = "alpha"
	if r, err := stack.Import(e.ctx, beta, o, "database", id); err != nil || r.Err != nil {
		t.Fatalf("import --from alpha: %v %v", err, resErr(r))
	}
	if st := e.state(t, "beta"); st.Resources["database"] == nil || !st.Resources["database"].Imported {
		t.Errorf("beta after import --from: %+v", st.Resources)
	}
}
