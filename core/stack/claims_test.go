package stack_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore/lock"
)

func importFrom(owner string) opt { return func(o *stack.Options) { o.ImportFrom = owner } }

// One resource, made by hand, imported by two stacks (or twice by one,
// under two names): the first import stamps its claim on it through the
// provider, so every later one meets a foreign key and is refused before
// anything is recorded; nothing is ever deleted.
func TestImportClaimsTheResource(t *testing.T) {
	e := newEnv(t)
	id := e.w.Put("s3_bucket", "precious", "")
	impa := parseSpec(t, specYAML("impa", res{name: "precious", typ: "s3_bucket", prot: "protected"}))
	impb := parseSpec(t, specYAML("impb", res{name: "precious", typ: "s3_bucket"}))
	if r, err := stack.Import(e.ctx, impa, e.opts(), "precious", id); err != nil || r.Err != nil {
		t.Fatalf("impa import: %v %v", err, resErr(r))
	}
	rec := e.state(t, "impa").Resources["precious"]
	if got := e.w.ByName("precious").Key; got == "" || got != rec.IdempotencyKey || !strings.HasPrefix(got, "bulwark:impa:") {
		t.Fatalf("the resource carries %q, impa records %q: want impa's claim on both", got, rec.IdempotencyKey)
	}
	for _, tt := range []struct {
		name string
		sp   string
		addr string
		from string
		want string
	}{
		{"another stack", "impb", "precious", "", "belongs to stack impa"},
		{"another stack, --from the owner that still holds it", "impb", "precious", "impa", "still holds its claim"},
		{"another stack, --from a stack that never had it", "impb", "precious", "nobody", "belongs to stack impa"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := stack.Import(e.ctx, impb, e.opts(importFrom(tt.from)), tt.addr, id)
			var ie *stack.ImportError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("import: %v, want an ImportError saying %q", err, tt.want)
			}
			if st := e.state(t, "impb"); len(st.Resources) != 0 {
				t.Errorf("impb records %v", st.Names())
			}
		})
	}
	// The same stack under another name: the state's own check.
	two := parseSpec(t, specYAML("impa", res{name: "precious", typ: "s3_bucket", prot: "protected"}, res{name: "again", typ: "s3_bucket"}))
	if _, err := stack.Import(e.ctx, two, e.opts(), "again", id); err == nil || !strings.Contains(err.Error(), "records it already") {
		t.Errorf("second import into impa: %v", err)
	}
	// impb's teardown and apply never touch it.
	if _, err := e.teardown(impb); err != nil {
		t.Fatalf("impb teardown: %v", err)
	}
	if len(e.w.Deletes()) != 0 || e.w.ByName("precious") == nil {
		t.Fatalf("deleted: %+v", e.w.Deletes())
	}
}

// import --from OWNER takes only what OWNER released: while alpha records
// (and protects) vault, beta's import --from alpha is refused; alpha's
// forget releases the claim through the provider; then beta takes it, and
// alpha's plan shows it as no longer alpha's.
func TestImportFromTakesOnlyWhatTheOwnerReleased(t *testing.T) {
	e := newEnv(t)
	alpha := parseSpec(t, specYAML("alpha", res{name: "vault", typ: "s3_bucket", prot: "protected"}))
	beta := parseSpec(t, specYAML("beta", res{name: "vault", typ: "s3_bucket"}))
	e.mustApply(t, alpha)
	id := e.state(t, "alpha").Resources["vault"].ID
	_, err := stack.Import(e.ctx, beta, e.opts(importFrom("alpha")), "vault", id)
	if err == nil || !strings.Contains(err.Error(), "stack alpha (lineage") || !strings.Contains(err.Error(), "still holds its claim") {
		t.Fatalf("import --from alpha while alpha holds it: %v", err)
	}
	if r, err := stack.StateForget(e.ctx, alpha, e.opts(), "vault"); err != nil || r.Err != nil {
		t.Fatalf("forget: %v %v", err, resErr(r))
	}
	if k, ok := providers.ReleasedFrom(e.w.ByName("vault").Key); !ok || !strings.HasPrefix(k, "bulwark:alpha:") {
		t.Fatalf("after forget the resource carries %q: want alpha's claim released", e.w.ByName("vault").Key)
	}
	if _, err := stack.Import(e.ctx, beta, e.opts(importFrom("gamma")), "vault", id); err == nil || !strings.Contains(err.Error(), "released by stack alpha, not by stack gamma") {
		t.Fatalf("import --from gamma of what alpha released: %v", err)
	}
	if r, err := stack.Import(e.ctx, beta, e.opts(importFrom("alpha")), "vault", id); err != nil || r.Err != nil {
		t.Fatalf("import --from alpha after alpha forgot it: %v %v", err, resErr(r))
	}
	if k := e.w.ByName("vault").Key; !strings.HasPrefix(k, "bulwark:beta:") || k != e.state(t, "beta").Resources["vault"].IdempotencyKey {
		t.Fatalf("vault carries %q", k)
	}
	// alpha no longer lists it, and its apply sees beta's resource.
	if st := e.state(t, "alpha"); len(st.Resources) != 0 {
		t.Fatalf("alpha still records %v", st.Names())
	}
	_, err = e.apply(alpha)
	var ce *plan.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "belongs to stack beta") {
		t.Fatalf("alpha apply: %v", err)
	}
	// Neither can import it back from the other without a release.
	if _, err := stack.Import(e.ctx, alpha, e.opts(), "vault", id); err == nil || !strings.Contains(err.Error(), "belongs to stack beta") {
		t.Fatalf("alpha import back: %v", err)
	}
}

// A provider that cannot release (one that predates claims): forget still
// forgets and deletes nothing, and says the claim is kept, so no other
// stack can take the resource over; that stack is refused.
func TestForgetWithAProviderThatCannotRelease(t *testing.T) {
	e := newEnv(t)
	alpha := parseSpec(t, specYAML("alpha", res{name: "vault", typ: "s3_bucket"}))
	beta := parseSpec(t, specYAML("beta", res{name: "vault", typ: "s3_bucket"}))
	e.mustApply(t, alpha)
	id := e.state(t, "alpha").Resources["vault"].ID
	e.w.mu.Lock()
	e.w.noRelease = true
	e.w.mu.Unlock()
	if r, err := stack.StateForget(e.ctx, alpha, e.opts(), "vault"); err != nil || r.Err != nil {
		t.Fatalf("forget: %v %v", err, resErr(r))
	}
	if !strings.Contains(e.out.String(), "claim of stack alpha on vault") || !strings.Contains(e.out.String(), "cannot release claims") {
		t.Errorf("forget does not say the claim is kept:\n%s", e.out)
	}
	if _, err := stack.Import(e.ctx, beta, e.opts(importFrom("alpha")), "vault", id); err == nil || !strings.Contains(err.Error(), "still holds its claim") {
		t.Fatalf("import --from alpha of what alpha could not release: %v", err)
	}
	// alpha itself may take it back.
	if r, err := stack.Import(e.ctx, alpha, e.opts(), "vault", id); err != nil || r.Err != nil {
		t.Fatalf("alpha import back: %v %v", err, resErr(r))
	}
	if len(e.w.Deletes()) != 0 {
		t.Fatalf("deleted: %+v", e.w.Deletes())
	}
}

// An import whose claim was stamped but whose record a crash lost: the
// resource carries this stack's key, recorded nowhere; the import run
// again takes it over that key (the provider is told it may), not a
// conflict with itself.
func TestImportAgainAfterALostRecord(t *testing.T) {
	e := newEnv(t)
	sp := parseSpec(t, specYAML("s", res{name: "net", typ: "network"}))
	e.mustApply(t, sp)
	rec := e.state(t, "s").Resources["net"]
	e.w.SetKey("net", plan.Identity{Stack: "s", Lineage: e.state(t, "s").Lineage}.Key("op_LOSTIMPORT"))
	if r, err := stack.StateForget(e.ctx, sp, e.opts(), "net"); err != nil || r.Err != nil {
		t.Fatalf("forget: %v %v", err, resErr(r))
	}
	// The forget's release met a key that is not the record's: kept.
	if r, err := stack.Import(e.ctx, sp, e.opts(), "net", rec.ID); err != nil || r.Err != nil {
		t.Fatalf("import: %v %v", err, resErr(r))
	}
	if got := e.state(t, "s").Resources["net"].IdempotencyKey; got != e.w.ByName("net").Key || strings.HasSuffix(got, "op_LOSTIMPORT") {
		t.Errorf("record %q, world %q", got, e.w.ByName("net").Key)
	}
}

// Deleted and made again out of band at the recorded id (a bucket of the
// same name, carrying no key): the plan shows the conflict the teardown
// then meets, never "no change", and the teardown deletes nothing.
func TestPlanShowsWhatWasMadeAgainAtTheRecordedID(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "bucket", typ: "s3_bucket", prot: "durable"})
	e.mustApply(t, sp)
	e.w.SetKey("bucket", "")
	pv, err := stack.Plan(e.ctx, sp, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if c := pv.Changes[0]; c.Action != plan.Conflict || !strings.Contains(c.Reason, "carries no key") {
		t.Fatalf("plan: %s %q", c.Action, c.Reason)
	}
	var ce *plan.ConflictError
	if _, err := e.apply(sp); !errors.As(err, &ce) {
		t.Fatalf("apply: %v", err)
	}
	if _, err := e.teardown(sp); !errors.As(err, &ce) {
		t.Fatalf("teardown: %v", err)
	}
	if len(e.w.Deletes()) != 0 || e.w.ByName("bucket") == nil {
		t.Fatalf("deleted: %+v", e.w.Deletes())
	}
}

// An import whose record a crash lost, the resource claimed under this
// stack's import key: the next apply recovers it as imported (its claim
// says so), not as created, and a failed apply's rollback keeps it.
func TestLostImportIsRecoveredAsImported(t *testing.T) {
	e := newEnv(t)
	id := e.w.Put("s3_bucket", "precious", "")
	// app depends on precious, so precious's step (its recovery) has run
	// before app's failure stops the apply: without the edge the two race,
	// and a precious not yet recovered stays unrecorded (still never
	// deleted) until the next apply.
	sp := parseSpec(t, specYAML("s", res{name: "precious", typ: "s3_bucket"}, res{name: "app", typ: "compute", deps: []string{"precious"}}))
	if r, err := stack.Import(e.ctx, sp, e.opts(), "precious", id); err != nil || r.Err != nil {
		t.Fatalf("import: %v %v", err, resErr(r))
	}
	if k := e.w.ByName("precious").Key; !plan.IsClaim(k) {
		t.Fatalf("the import stamped %q, not an import claim", k)
	}
	s, err := state.Open(stack.StackDir(e.stateDir, "s"), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Mutate(func(st *state.State) error { delete(st.Resources, "precious"); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(sp, simulate("app")); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(e.w.Deletes()) != 0 || e.w.ByName("precious") == nil {
		t.Fatalf("the rollback deleted: %+v", e.w.Deletes())
	}
	if rec := e.state(t, "s").Resources["precious"]; rec == nil || !rec.Imported {
		t.Fatalf("recovered as %+v, want imported", rec)
	}
}

// A keyless provider (one built for Terraform) stamps no claim: the other
// stacks on the same backend are its claims registry. An id another stack
// records is refused (ClaimedElsewhereError, nothing recorded, nothing
// deleted); a stack whose state cannot be read refuses the import too
// rather than let it through unchecked; once the owner forgets it, it may
// move, and then the first stack is the one refused.
func TestImportOfAKeylessProviderIsCheckedAgainstTheOtherStacks(t *testing.T) {
	e := newEnv(t)
	e.w.keyless = true
	one := parseSpec(t, specYAML("one", res{name: "net", typ: "network"}))
	two := parseSpec(t, specYAML("two", res{name: "taken", typ: "network"}))
	e.mustApply(t, one)
	id := e.state(t, "one").Resources["net"].ID

	_, err := stack.Import(e.ctx, two, e.opts(), "taken", id)
	var ce *stack.ClaimedElsewhereError
	if !errors.As(err, &ce) || ce.Stack != "one" || ce.As != "net" || ce.Type != "network" || ce.ID != id {
		t.Fatalf("import into two: %v, want a ClaimedElsewhereError naming one's net", err)
	}
	if !strings.Contains(err.Error(), "bulwark state forget") {
		t.Errorf("the error does not say how to move it: %v", err)
	}
	if st := e.state(t, "two"); len(st.Resources) != 0 {
		t.Fatalf("two records %v", st.Names())
	}

	// A stack whose state cannot be read (listed before one): refused,
	// naming it.
	bad := filepath.Join(stack.StackDir(e.stateDir, "broken"), state.FileName)
	if err := os.MkdirAll(filepath.Dir(bad), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = stack.Import(e.ctx, two, e.opts(), "taken", id)
	var se *stack.ClaimScanError
	if !errors.As(err, &se) || se.Stack != "broken" {
		t.Fatalf("import with an unreadable stack beside: %v, want a ClaimScanError naming it", err)
	}
	if err := os.RemoveAll(filepath.Dir(bad)); err != nil {
		t.Fatal(err)
	}

	// Given up by one, it may move.
	if r, err := stack.StateForget(e.ctx, one, e.opts(), "net"); err != nil || r.Err != nil {
		t.Fatalf("forget: %v %v", err, resErr(r))
	}
	if r, err := stack.Import(e.ctx, two, e.opts(), "taken", id); err != nil || r.Err != nil {
		t.Fatalf("import after one forgot it: %v %v", err, resErr(r))
	}
	if _, err := stack.Import(e.ctx, one, e.opts(), "net", id); !errors.As(err, &ce) || ce.Stack != "two" {
		t.Fatalf("import back into one: %v, want refused naming two", err)
	}
	if len(e.w.Deletes()) != 0 {
		t.Fatalf("deleted: %+v", e.w.Deletes())
	}
}

// On the file backend the check and the record of a keyless import are
// one critical section across the stacks of the state folder (the claims
// lock, .claims): while another import holds it, an import waits (here
// until its context ends, recording nothing), and goes through once it is
// released.
func TestImportOfAKeylessProviderWaitsForTheClaimsLock(t *testing.T) {
	e := newEnv(t)
	e.w.keyless = true
	id := e.w.Put("network", "made-by-hand", "")
	two := parseSpec(t, specYAML("two", res{name: "taken", typ: "network"}))
	dir := filepath.Join(e.stateDir, ".claims")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := lock.Acquire(dir, storage.Holder{Op: "op_other", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := stack.Import(ctx, two, e.opts(), "taken", id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("import while the claims lock is held: %v, want it to wait until its context ends", err)
	}
	if st := e.state(t, "two"); len(st.Resources) != 0 {
		t.Fatalf("two records %v", st.Names())
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if r, err := stack.Import(e.ctx, two, e.opts(), "taken", id); err != nil || r.Err != nil {
		t.Fatalf("import once released: %v %v", err, resErr(r))
	}
}

// Stacks importing one id of a keyless provider at the same moment, by
// `bulwark import` and by a spec's `import:` during an apply: the check and
// the record are one critical section across the state folder (its claims
// lock), so exactly one stack records it and every other is refused with a
// ClaimedElsewhereError naming the winner. Each Import call yields a while
// (the window in which a check without the lock let both through).
func TestKeylessImportsRacingForOneIDHaveOneWinner(t *testing.T) {
	for _, how := range []string{"import", "apply"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			e.w.keyless = true
			id := e.w.Put("network", "made-by-hand", "")
			e.w.OnImport(func(string) {
				for range 2000 {
					runtime.Gosched()
				}
			})
			const n = 4
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				name := fmt.Sprintf("racer%d", i)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if how == "import" {
						sp := parseSpec(t, specYAML(name, res{name: "net", typ: "network"}))
						r, err := stack.Import(e.ctx, sp, e.opts(), "net", id)
						if err == nil && r.Err != nil {
							err = r.Err
						}
						errs[i] = err
						return
					}
					sp := parseSpec(t, fmt.Sprintf("version: 1\nstack: %s\nproviders: {fake: {}}\nresources:\n  - {name: net, type: network, import: %s}\n", name, id))
					r, err := stack.Apply(e.ctx, sp, e.opts())
					if err == nil && r.Err != nil {
						err = r.Err
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			winners := 0
			for i, err := range errs {
				name := fmt.Sprintf("racer%d", i)
				st := e.state(t, name)
				if err == nil {
					winners++
					if st.Resources["net"] == nil || st.Resources["net"].ID != id {
						t.Errorf("%s won but records %v", name, st.Names())
					}
					continue
				}
				var ce *stack.ClaimedElsewhereError
				if !errors.As(err, &ce) || ce.ID != id {
					t.Errorf("%s: %v, want a ClaimedElsewhereError", name, err)
				}
				if st.Resources["net"] != nil {
					t.Errorf("%s was refused but records net", name)
				}
			}
			if winners != 1 {
				t.Fatalf("%d stacks recorded %s, want exactly 1: %v", winners, id, errs)
			}
			if len(e.w.Deletes()) != 0 {
				t.Errorf("deleted: %+v", e.w.Deletes())
			}
		})
	}
}

// The claims lock cannot be bypassed by what is planted in the state
// folder: a .claims that is a link to a folder of the attacker's (where a
// lock of their own would decide nothing), or a file, is refused and the
// import records nothing; a lock record planted in .claims saying its holder
// is gone or that it was released does not free a lock another import holds
// (the kernel's lock on the folder decides, not the record); and a remote
// backend that keeps no claims lock refuses the import rather than check
// without one.
func TestClaimsLockCannotBeBypassed(t *testing.T) {
	newTwo := func(t *testing.T) (*env, *spec.Spec, string) {
		e := newEnv(t)
		e.w.keyless = true
		id := e.w.Put("network", "made-by-hand", "")
		return e, parseSpec(t, specYAML("two", res{name: "taken", typ: "network"})), id
	}
	t.Run("link", func(t *testing.T) {
		e, two, id := newTwo(t)
		elsewhere := t.TempDir()
		if err := os.MkdirAll(e.stateDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, filepath.Join(e.stateDir, ".claims")); err != nil {
			t.Fatal(err)
		}
		if _, err := stack.Import(e.ctx, two, e.opts(), "taken", id); err == nil || !strings.Contains(err.Error(), "claims lock") {
			t.Fatalf("import through a planted link: %v, want refused", err)
		}
		if st := e.state(t, "two"); len(st.Resources) != 0 {
			t.Fatalf("two records %v", st.Names())
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
			t.Errorf("the link was followed: %v", entries)
		}
	})
	t.Run("file", func(t *testing.T) {
		e, two, id := newTwo(t)
		if err := os.MkdirAll(e.stateDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.stateDir, ".claims"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := stack.Import(e.ctx, two, e.opts(), "taken", id); err == nil || !strings.Contains(err.Error(), "claims lock") {
			t.Fatalf("import with .claims a file: %v, want refused", err)
		}
		if st := e.state(t, "two"); len(st.Resources) != 0 {
			t.Fatalf("two records %v", st.Names())
		}
	})
	t.Run("planted record", func(t *testing.T) {
		e, two, id := newTwo(t)
		dir := filepath.Join(e.stateDir, ".claims")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		held, err := lock.Acquire(dir, storage.Holder{Op: "op_other", PID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release()
		// What a forger writes over the holder's record: a dead pid, and
		// nothing at all.
		for _, body := range []string{`{"op":"op_gone","pid":999999999,"host":"nowhere"}`, ``} {
			if err := os.WriteFile(filepath.Join(dir, lock.FileName), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
			_, err := stack.Import(ctx, two, e.opts(), "taken", id)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("import with a forged record %q: %v, want it to wait for the holder", body, err)
			}
		}
		if st := e.state(t, "two"); len(st.Resources) != 0 {
			t.Fatalf("two records %v", st.Names())
		}
	})
	t.Run("remote backend without one", func(t *testing.T) {
		e, two, id := newTwo(t)
		b := &losingBackend{lost: make(chan struct{})}
		_, err := stack.Import(e.ctx, two, e.opts(e.losing(b)), "taken", id)
		if err == nil || !strings.Contains(err.Error(), "keeps none") {
			t.Fatalf("import on a backend without a claims lock: %v, want refused", err)
		}
	})
}

// The other stacks are read a few at a time, and the import is refused
// as reading them in order refuses it: naming the first stack, in order,
// that records the id, or that cannot be read, whatever the reads'
// timing. Here a, c and e record the id (c and e as a copied state
// would), b and d other things.
func TestImportOfAKeylessProviderNamesTheFirstStackInOrder(t *testing.T) {
	e := newEnv(t)
	e.w.keyless = true
	e.mustApply(t, parseSpec(t, specYAML("a", res{name: "net", typ: "network"})))
	e.mustApply(t, parseSpec(t, specYAML("b", res{name: "other-b", typ: "network"})))
	e.mustApply(t, parseSpec(t, specYAML("d", res{name: "other-d", typ: "network"})))
	rec := *e.state(t, "a").Resources["net"]
	for _, name := range []string{"c", "e"} {
		copied := rec
		copied.Name = "copy-in-" + name
		o := e.opts()
		be, err := o.Backend(e.ctx, name, state.Sealing{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := be.Lock(e.ctx, storage.Holder{Op: "op_01TESTCOPIEDSTATE0000000000"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(e.ctx, storage.Commit{Change: storage.Change{Put: []*state.Resource{&copied}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Release(e.ctx); err != nil {
			t.Fatal(err)
		}
		be.Close()
	}
	z := parseSpec(t, specYAML("z", res{name: "taken", typ: "network"}))
	refusedBy := func() string {
		t.Helper()
		_, err := stack.Import(e.ctx, z, e.opts(), "taken", rec.ID)
		var ce *stack.ClaimedElsewhereError
		if !errors.As(err, &ce) {
			t.Fatalf("import into z: %v, want a ClaimedElsewhereError", err)
		}
		return ce.Stack + "/" + ce.As
	}
	for range 10 {
		if got := refusedBy(); got != "a/net" {
			t.Fatalf("refused by %s, want a/net (the first in order)", got)
		}
	}
	if r, err := stack.StateForget(e.ctx, parseSpec(t, specYAML("a", res{name: "net", typ: "network"})), e.opts(), "net"); err != nil || r.Err != nil {
		t.Fatalf("forget: %v %v", err, resErr(r))
	}
	for range 10 {
		if got := refusedBy(); got != "c/copy-in-c" {
			t.Fatalf("refused by %s, want c/copy-in-c (the first in order once a forgot it)", got)
		}
	}
	if st := e.state(t, "z"); len(st.Resources) != 0 {
		t.Fatalf("z records %v", st.Names())
	}
}
