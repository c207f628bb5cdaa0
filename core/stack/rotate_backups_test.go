package stack_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

var sealedRE = regexp.MustCompile(`sealed:v1:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+`)

// sealedIn lists every sealed value in the files under dir, by file
// (relative), the journal's segments included: once a rotation ended, no
// record of a finished operation stays whole (docs/secrets.md).
func sealedIn(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range sealedRE.FindAll(b, -1) {
			out[rel] = append(out[rel], string(m))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkSealedUnder fails unless every sealed value under dir opens with
// key and none with old, and the backups and revisions hold some.
func checkSealedUnder(t *testing.T, dir, stackName string, key, old *secrets.Key) {
	t.Helper()
	box, oldBox := key.Box(secrets.StackContext(stackName)), old.Box(secrets.StackContext(stackName))
	n, backups, revisions := 0, 0, 0
	for file, vals := range sealedIn(t, dir) {
		for _, v := range vals {
			n++
			if _, err := oldBox.Open(v); err == nil {
				t.Errorf("%s: a value opens under the old key", file)
			}
			if _, err := box.Open(v); err != nil {
				t.Errorf("%s: a value does not open under the new key: %v", file, err)
			}
		}
		switch {
		case strings.HasPrefix(file, "backups"):
			backups += len(vals)
		case strings.HasPrefix(file, "revisions"):
			revisions += len(vals)
		}
	}
	if n == 0 || backups == 0 || revisions == 0 {
		t.Fatalf("checked %d sealed values (%d in backups, %d in revisions): the check is vacuous", n, backups, revisions)
	}
}

// A rotation re-seals the backups taken before it (and the revisions and
// the state): no byte of the stack's folder opens under the old key, every
// sealed value opens under the new one, the backups read back whole with
// the new key alone, and a rollback to a revision from before the rotation
// works.
func TestRotateReSealsBackups(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	oldKey, _ := secrets.NewKey("old")
	newKey, _ := secrets.NewKey("new")
	with := func(src *secrets.Source) stack.Options {
		o := e.opts()
		o.Starter = ss.starter()
		o.Secrets = src
		return o
	}
	sp := func(secret string) *spec.Spec { return parseSpec(t, secretSpec(secret)) }
	oldSrc := func() *secrets.Source { return &secrets.Source{Env: oldKey.Encode()} }
	e.mustApply(t, sp(fakeSecret), func(o *stack.Options) { *o = with(oldSrc()) })
	e.mustApply(t, sp("second-secret-value-77"), func(o *stack.Options) { *o = with(oldSrc()) })
	dir := stack.StackDir(e.stateDir, "s")
	before, err := os.ReadDir(filepath.Join(dir, "backups"))
	if err != nil || len(before) == 0 {
		t.Fatalf("no backup before the rotation: %v", err)
	}

	// The journal holds values sealed under the old key before (what
	// the applies committed): the scan after the rotation is not vacuous.
	oldBox := oldKey.Box(secrets.StackContext("s"))
	inJournal := 0
	for file, vals := range sealedIn(t, dir) {
		for _, v := range vals {
			if _, err := oldBox.Open(v); err == nil && strings.HasPrefix(file, "journal") {
				inJournal++
			}
		}
	}
	if inJournal == 0 {
		t.Fatal("the journal holds no value sealed under the old key before the rotation: the check after it is vacuous")
	}

	res, err := stack.RotateSecrets(e.ctx, sp("second-secret-value-77"), with(&secrets.Source{Env: oldKey.Encode(), NewKey: newKey.Encode()}))
	if err != nil || stack.ExitCode(res, nil) != stack.ExitOK {
		t.Fatalf("rotate: %v %v", err, resErr(res))
	}
	checkSealedUnder(t, dir, "s", newKey, oldKey)
	// History still lists every operation (the two applies and the
	// rotation), each now its summary line alone.
	recs, err := stack.ReadJournalKinds(sp("second-secret-value-77"), with(&secrets.Source{Env: newKey.Encode()}))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range recs {
		if r.Kind == journal.KindState {
			continue
		}
		if r.Kind != journal.KindSummary {
			t.Errorf("a %s record of %s stays whole after the rotation", r.Kind, r.Op)
			continue
		}
		ops = append(ops, r.Type+"/"+r.Status)
	}
	if len(ops) != 3 || ops[2] != stack.OpRotate+"/"+journal.OpSucceeded {
		t.Errorf("history after the rotation: %v, want the two applies and the rotation", ops)
	}

	// Every backup reads back with the new key alone, and records the
	// new provider.
	src := &secrets.Source{Env: newKey.Encode()}
	be := filestore.New(dir, storage.Options{Stack: "s", Sealing: state.Sealing{Sealer: stack.StateSealer(e.ctx, src, "s")}})
	list, err := be.Backups(e.ctx)
	if err != nil || len(list) != len(before) {
		t.Fatalf("backups after the rotation: %v %v (before: %d)", list, err, len(before))
	}
	for _, b := range list {
		bst, err := be.Backup(e.ctx, b.Name)
		if err != nil {
			t.Fatalf("backup %s with the new key: %v", b.Name, err)
		}
		if bst.Secrets == nil || bst.Secrets.KeyID != newKey.ID() {
			t.Fatalf("backup %s records provider %+v, not the new key's", b.Name, bst.Secrets)
		}
	}
	be.Close()

	// The journal's records of the operations before the rotation keep
	// their old sealing (docs/secrets.md says why): nothing opens them,
	// so the state loads whole with the new key alone.
	if _, err := stack.LoadOpened(sp("second-secret-value-77"), with(&secrets.Source{Env: newKey.Encode()})); err != nil {
		t.Fatalf("load with the new key alone: %v", err)
	}

	// A revision from before the rotation: rollback with the new key.
	res, err = stack.Rollback(e.ctx, sp("second-secret-value-77"), with(&secrets.Source{Env: newKey.Encode()}), 1)
	if code := stack.ExitCode(res, err); err != nil || code != stack.ExitOK {
		t.Fatalf("rollback --to 1 after the rotation: exit %d %v %v", code, err, resErr(res))
	}
	pv, err := stack.Plan(e.ctx, sp(fakeSecret), with(&secrets.Source{Env: newKey.Encode()}))
	if err != nil || pv.HasChanges() {
		t.Fatalf("plan after the rollback: %v %+v", err, pv)
	}
	checkSealedUnder(t, dir, "s", newKey, oldKey)
}

// failingBackend is a file backend whose writer fails to replace a backup
// after failAfter successful replacements.
type failingBackend struct {
	storage.Backend
	failAfter int32
	done      atomic.Int32
}

func (b *failingBackend) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	w, err := b.Backend.Lock(ctx, h)
	if err != nil {
		return nil, err
	}
	return &failingWriter{Writer: w, b: b}, nil
}

type failingWriter struct {
	storage.Writer
	b *failingBackend
}

var errInjected = errors.New("injected write failure")

func (w *failingWriter) ReplaceBackup(ctx context.Context, name string, st *state.State) error {
	if w.b.done.Load() >= w.b.failAfter {
		return fmt.Errorf("backup %s: %w", name, errInjected)
	}
	w.b.done.Add(1)
	return w.Writer.(storage.BackupReplacer).ReplaceBackup(ctx, name, st)
}

// A rotation whose write fails midway (no crash): it says so, both keys
// are needed until it ends (each alone is refused), nothing is lost, and
// `secrets rotate` run again finishes it.
func TestRotateFailsMidwayThenFinishes(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	oldKey, _ := secrets.NewKey("old")
	newKey, _ := secrets.NewKey("new")
	dir := stack.StackDir(e.stateDir, "s")
	var fb *failingBackend
	with := func(src *secrets.Source, failing bool) stack.Options {
		o := e.opts()
		o.Starter = ss.starter()
		o.Secrets = src
		if failing {
			o.StateURL = "failing://"
			o.Open = func(ctx context.Context, _ string, so storage.Options) (storage.Backend, error) {
				fb = &failingBackend{Backend: filestore.New(dir, so), failAfter: 1}
				return fb, nil
			}
		}
		return o
	}
	sp := func(secret string) *spec.Spec { return parseSpec(t, secretSpec(secret)) }
	for _, s := range []string{fakeSecret, "second-secret-value-77", "third-secret-value-88"} {
		e.mustApply(t, sp(s), func(o *stack.Options) { *o = with(&secrets.Source{Env: oldKey.Encode()}, false) })
	}
	if bs, _ := os.ReadDir(filepath.Join(dir, "backups")); len(bs) < 2 {
		t.Fatalf("want 2 backups or more, have %d", len(bs))
	}
	cur := sp("third-secret-value-88")
	both := &secrets.Source{Env: oldKey.Encode(), NewKey: newKey.Encode()}

	res, err := stack.RotateSecrets(e.ctx, cur, with(both, true))
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if stack.ExitCode(res, nil) == stack.ExitOK || !errors.Is(res.Err, errInjected) {
		t.Fatalf("rotate with a failing write: exit %d, %v", stack.ExitCode(res, nil), res.Err)
	}
	if fb.done.Load() != 1 {
		t.Fatalf("%d backups replaced before the failure, want 1", fb.done.Load())
	}
	if msg := res.Err.Error(); !strings.Contains(msg, "secrets rotate") || !strings.Contains(msg, "both credentials") {
		t.Fatalf("the failure does not say how to finish: %v", msg)
	}
	// Each key alone is refused until the rotation ends.
	if _, err := stack.Plan(e.ctx, cur, with(&secrets.Source{Env: oldKey.Encode()}, false)); err == nil || !strings.Contains(err.Error(), "unfinished") {
		t.Fatalf("the old key alone, mid-rotation: %v", err)
	}
	if pv, err := stack.Plan(e.ctx, cur, with(&secrets.Source{Env: newKey.Encode()}, false)); err == nil {
		t.Fatalf("the new key alone opened a stack mid-rotation (plan error %v, changes %v)", pv.Err(), pv.HasChanges())
	}
	// Both open it: the values are all there.
	if pv, err := stack.Plan(e.ctx, cur, with(both, false)); err != nil || pv.HasChanges() {
		t.Fatalf("plan with both keys mid-rotation: %v %+v", err, pv)
	}

	res, err = stack.RotateSecrets(e.ctx, cur, with(both, false))
	if err != nil || stack.ExitCode(res, nil) != stack.ExitOK {
		t.Fatalf("rotate again: %v %v", err, resErr(res))
	}
	checkSealedUnder(t, dir, "s", newKey, oldKey)
	if _, err := stack.Plan(e.ctx, cur, with(&secrets.Source{Env: oldKey.Encode()}, false)); !errors.Is(err, secrets.ErrWrongKey) {
		t.Fatalf("the old key after the rotation: %v", err)
	}
	if pv, err := stack.Plan(e.ctx, cur, with(&secrets.Source{Env: newKey.Encode()}, false)); err != nil || pv.HasChanges() {
		t.Fatalf("plan with the new key: %v %+v", err, pv)
	}
}

// A saved plan of a stack's first apply made with --secrets-provider
// passphrase is sealed under the passphrase's key (no key file exists, or
// is needed), records the provider it chose, opens with the passphrase
// alone (a wrong one is refused), and applying it makes that provider the
// stack's.
func TestSavedFirstPlanSealedUnderPassphrase(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	const pass = "plan-passphrase-5"
	with := func(src *secrets.Source) stack.Options {
		o := e.opts()
		o.Starter = ss.starter()
		o.Secrets = src
		return o
	}
	sp := parseSpec(t, secretSpec(fakeSecret))
	planPath := filepath.Join(t.TempDir(), "first.plan")
	if _, err := stack.SavePlan(e.ctx, sp, with(&secrets.Source{Provider: secrets.ProviderPassphrase, Passphrase: pass, KDF: testKDF()}), planPath, "test"); err != nil {
		t.Fatalf("plan --out of a first apply with the passphrase provider: %v", err)
	}
	raw, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), pass) || strings.Contains(string(raw), fakeSecret) {
		t.Fatal("the plan file holds the passphrase or a secret in clear")
	}
	if _, err := stack.OpenPlan(planPath, with(&secrets.Source{Passphrase: "not-the-passphrase"})); !errors.Is(err, secrets.ErrWrongKey) {
		t.Fatalf("a wrong passphrase opened the plan: %v", err)
	}
	p, err := stack.OpenPlan(planPath, with(&secrets.Source{Passphrase: pass}))
	if err != nil {
		t.Fatalf("open the plan with the passphrase: %v", err)
	}
	chose := p.File.Secrets
	if chose.Name() != secrets.ProviderPassphrase || chose.KeyID == "" || !strings.Contains(p.File.Spec.Text, ":"+chose.KeyID+":") {
		t.Fatalf("the plan records provider %+v; its spec is sealed as %.40s", chose, p.File.Spec.Text)
	}
	res, err := stack.ApplyPlan(e.ctx, p, with(&secrets.Source{Passphrase: pass}))
	if code := stack.ExitCode(res, err); err != nil || code != stack.ExitOK {
		t.Fatalf("apply the plan: exit %d %v %v", code, err, resErr(res))
	}
	st, err := stack.LoadState(sp, with(&secrets.Source{}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Secrets.Name() != secrets.ProviderPassphrase || st.Secrets.KeyID != chose.KeyID {
		t.Fatalf("the stack records %+v, not the plan's provider %+v", st.Secrets, chose)
	}
	if pv, err := stack.Plan(e.ctx, sp, with(&secrets.Source{Passphrase: pass})); err != nil || pv.HasChanges() {
		t.Fatalf("plan after: %v %+v", err, pv)
	}
}

// A rotation killed between its end record and the compaction after it
// leaves the journal's older records whole, sealed under the retired key:
// the next command that takes the lock compacts them at its first
// checkpoint, before it writes. (The rotation's records are written by
// hand here: the kill falls between two writes of one command.)
func TestRotateCompactionFinishedByTheNextCommand(t *testing.T) {
	e := newEnv(t)
	ss := &secretStarter{w: e.w, leak: map[string]bool{}}
	key, _ := secrets.NewKey("k")
	o := e.opts()
	o.Starter = ss.starter()
	o.Secrets = &secrets.Source{Env: key.Encode()}
	with := func(p *stack.Options) { *p = o }
	sp := parseSpec(t, secretSpec(fakeSecret))
	e.mustApply(t, sp, with)
	e.mustApply(t, parseSpec(t, secretSpec("second-secret-value-77")), with)
	dir := stack.StackDir(e.stateDir, "s")
	inJournal := func() int {
		n := 0
		for file, vals := range sealedIn(t, dir) {
			if strings.HasPrefix(file, "journal") {
				n += len(vals)
			}
		}
		return n
	}
	if inJournal() == 0 {
		t.Fatal("the journal holds no sealed value: the check is vacuous")
	}
	j, err := journal.Open(filepath.Join(dir, journal.FileName), nil)
	if err != nil {
		t.Fatal(err)
	}
	rot := journal.NewOpID()
	for _, r := range []journal.Record{
		{Op: rot, Kind: journal.KindOp, Type: stack.OpRotate, Status: journal.OpRunning},
		{Op: rot, Kind: journal.KindOp, Type: stack.OpRotate, Status: journal.OpSucceeded},
	} {
		if _, err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	e.mustApply(t, parseSpec(t, secretSpec("second-secret-value-77")), with)
	recs, err := stack.ReadJournalKinds(sp, o)
	if err != nil {
		t.Fatal(err)
	}
	summaries, whole := 0, map[string]bool{}
	for _, r := range recs {
		switch {
		case r.Kind == journal.KindSummary:
			summaries++
		case r.Kind != journal.KindState:
			whole[r.Op] = true
		}
	}
	// The two applies and the rotation are summaries; the apply after
	// it (which wrote nothing but its own records) alone may be whole.
	if summaries != 3 || len(whole) > 1 {
		t.Errorf("after the next command: %d summaries, %d operations whole; want 3 and at most 1", summaries, len(whole))
	}
	if n := inJournal(); n != 0 {
		t.Errorf("the journal still holds %d sealed value(s) from before the rotation", n)
	}
}
