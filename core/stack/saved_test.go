package stack_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/planfile"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A saved plan applies exactly when nothing changed, and is refused, naming
// what changed and calling no Create, Update or Delete, when the state, the
// spec file or what a Read returns changed since it was made.
func TestApplyPlanRefusesWhatChanged(t *testing.T) {
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	withKey := func(o *stack.Options) { o.Secrets = &secrets.Source{Env: key.Encode()} }
	v1 := []res{{name: "a", typ: "network", size: 1}, {name: "b", typ: "compute", deps: []string{"a"}}}
	v2 := []res{{name: "a", typ: "network", size: 2}, {name: "b", typ: "compute", deps: []string{"a"}}}
	for _, tt := range []struct {
		name   string
		change func(e *env, specPath string)
		want   string // "" applies
	}{
		{"nothing", func(*env, string) {}, ""},
		// (A no-op apply writes nothing: the plan would still hold.)
		{"state written", func(e *env, _ string) {
			e.mustApply(t, mkSpec(t, append(v1[:2:2], res{name: "c", typ: "generic"})...), withKey)
		}, "the state was written (serial"},
		{"attribute drifted", func(e *env, _ string) { e.w.SetAttr("a", "size", 7.0) }, "a: what it reads changed (attribute size)"},
		{"resource gone", func(e *env, _ string) { e.w.Remove("b") }, "b: it no longer exists"},
		{"spec file edited", func(_ *env, p string) {
			if err := os.WriteFile(p, []byte(specYAML("s", v1...)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "the spec " + "SPEC" + " changed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.mustApply(t, mkSpec(t, v1...), withKey)
			specPath := filepath.Join(t.TempDir(), "stack.yaml")
			text := specYAML("s", v2...)
			if err := os.WriteFile(specPath, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			sp, err := spec.Parse(specPath, []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			planPath := filepath.Join(t.TempDir(), "p.plan")
			pv, err := stack.SavePlan(e.ctx, sp, e.opts(withKey), planPath, "test")
			if err != nil || !pv.HasChanges() {
				t.Fatalf("SavePlan: %v, changes %v", err, pv != nil && pv.HasChanges())
			}
			tt.change(e, specPath)
			creates, updates, deletes := e.w.Calls()
			p, err := stack.OpenPlan(planPath, e.opts(withKey))
			if err != nil {
				t.Fatal(err)
			}
			res, err := stack.ApplyPlan(e.ctx, p, e.opts(withKey))
			if tt.want == "" {
				if err != nil || res.Outcome != engine.Succeeded {
					t.Fatalf("apply: %v %v", err, resErr(res))
				}
				if got := e.w.ByName("a").Attrs["size"]; got != 2.0 {
					t.Errorf("a's size %v after the plan, want 2", got)
				}
				return
			}
			var pc *stack.PlanChangedError
			want := strings.ReplaceAll(tt.want, "SPEC", specPath)
			if !errors.As(err, &pc) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("err %v, want a *PlanChangedError saying %q", err, want)
			}
			if stack.ExitCode(nil, err) != stack.ExitError {
				t.Errorf("exit %d, want 1", stack.ExitCode(nil, err))
			}
			c2, u2, d2 := e.w.Calls()
			if c2 != creates || u2 != updates || d2 != deletes {
				t.Errorf("a refused plan called the provider: creates %d->%d, updates %d->%d, deletes %d->%d", creates, c2, updates, u2, deletes, d2)
			}
		})
	}
}

// Another key cannot open a saved plan; no key at all cannot make one.
func TestSavedPlanNeedsItsKey(t *testing.T) {
	e := newEnv(t)
	k1, _ := secrets.NewKey("one")
	k2, _ := secrets.NewKey("two")
	planPath := filepath.Join(t.TempDir(), "p.plan")
	sp := mkSpec(t, res{name: "a", typ: "network"})
	if _, err := stack.SavePlan(e.ctx, sp, e.opts(), planPath, "test"); !errors.Is(err, secrets.ErrNoKey) {
		t.Fatalf("SavePlan without a key: %v", err)
	}
	if _, err := stack.SavePlan(e.ctx, sp, e.opts(func(o *stack.Options) { o.Secrets = &secrets.Source{Env: k1.Encode()} }), planPath, "test"); err != nil {
		t.Fatal(err)
	}
	_, err := stack.OpenPlan(planPath, e.opts(func(o *stack.Options) { o.Secrets = &secrets.Source{Env: k2.Encode()} }))
	if !errors.Is(err, secrets.ErrCannotOpen) {
		t.Fatalf("OpenPlan with another key: %v", err)
	}
}

// Reality changing between the plan's check and a step (here: b vanishes
// while a is created) fails that step instead of running another plan than
// the one reviewed; what ran is rolled back as any failure is.
func TestApplyPlanStepRefusesAnotherDecision(t *testing.T) {
	key, _ := secrets.NewKey("test")
	withKey := func(o *stack.Options) { o.Secrets = &secrets.Source{Env: key.Encode()} }
	e := newEnv(t)
	e.mustApply(t, mkSpec(t, res{name: "b", typ: "compute"}), withKey)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}})
	planPath := filepath.Join(t.TempDir(), "p.plan")
	if _, err := stack.SavePlan(e.ctx, sp, e.opts(withKey), planPath, "test"); err != nil {
		t.Fatal(err)
	}
	e.w.OnCreate(func(name string) {
		if name == "a" {
			e.w.Remove("b")
		}
	})
	p, err := stack.OpenPlan(planPath, e.opts(withKey))
	if err != nil {
		t.Fatal(err)
	}
	res, err := stack.ApplyPlan(e.ctx, p, e.opts(withKey))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != engine.Compensated || !strings.Contains(resErr(res).Error(), "b: the saved plan decided update, but what its Read returns now makes it create") {
		t.Fatalf("outcome %v: %v", res.Outcome, resErr(res))
	}
	if e.w.ByName("a") != nil || e.w.ByName("b") != nil {
		t.Errorf("world after: %v", e.w.Names())
	}
}

// show FILE says which replaces the plan's --replace consented to: the
// consent travels with the plan, so its review must show it.
func TestPreviewOfCarriesReplaceConsent(t *testing.T) {
	f := &planfile.Plan{Stack: "s", Replace: []string{"db"}, Resources: []planfile.Resource{
		{Address: "db", Type: "dynamodb_table", Action: "replace", Protection: "durable"},
		{Address: "app", Type: "compute", Action: "replace", Protection: "ephemeral"},
	}}
	pv := stack.PreviewOf(f)
	if len(pv.Changes) != 2 {
		t.Fatalf("changes = %d, want 2", len(pv.Changes))
	}
	if !pv.Changes[0].Requested || pv.Changes[0].NeedsConsent() {
		t.Errorf("db: Requested = %v, NeedsConsent = %v; want the plan's consent", pv.Changes[0].Requested, pv.Changes[0].NeedsConsent())
	}
	if pv.Changes[1].Requested {
		t.Error("app: Requested, though the plan's --replace does not name it")
	}
}
