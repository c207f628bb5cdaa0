package stack_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// TestModuleInputFromResourceOrder: a module resource whose input names a
// resource of the caller (or another call's output) starts only once that
// resource is made, and is deleted before it; a module resource that uses
// no such input waits for nothing. The order is read from the journal.
func TestModuleInputFromResourceOrder(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"net/module.yaml": "resources:\n  - {name: vpc, type: network}\noutputs:\n  id: {value: \"${vpc.id}\"}\n",
		"app/module.yaml": `variables:
  vpc: {type: string}
  logs: {type: string}
resources:
  - {name: web, type: compute, config: {zone: "${var.vpc}"}}
  - {name: worker, type: compute, config: {zone: "w-${var.logs}"}}
  - {name: alone, type: compute}
`,
		"stack.yaml": `version: 1
stack: s
providers: {fake: {}}
modules:
  - {name: net, source: ./net}
  - {name: app, source: ./app, inputs: {vpc: "${module.net.id}", logs: "${logs.id}"}}
resources:
  - {name: logs, type: s3_bucket}
`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := spec.Load(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vals, _, err := resolve.Values(sp, resolve.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if sp, err = resolve.Expand(sp, vals); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.mustApply(t, sp)
	if w := e.w.ByName("app.web"); w == nil || w.Attrs["zone"] != e.w.ByName("net.vpc").ID {
		t.Fatalf("app.web = %+v", w)
	}
	if w := e.w.ByName("app.worker"); w == nil || w.Attrs["zone"] != "w-"+e.w.ByName("logs").ID {
		t.Fatalf("app.worker = %+v", w)
	}
	st := e.state(t, "s")
	for name, want := range map[string][]string{"app.web": {"net.vpc"}, "app.worker": {"logs"}, "app.alone": nil} {
		r, ok := st.Resources[name]
		if !ok {
			t.Fatalf("no %s in the state", name)
		}
		if !slices.Equal(r.DependsOn, want) {
			t.Errorf("%s depends on %v, want %v", name, r.DependsOn, want)
		}
	}
	// started and ended: the execute phase's records, by resource.
	order := func(action string) (started, ended map[string]int) {
		started, ended = map[string]int{}, map[string]int{}
		for i, r := range journalIn(t, stack.StackDir(e.stateDir, "s")) {
			if r.Kind != journal.KindStep || r.Action != action || r.Phase != "execute" {
				continue
			}
			switch r.Status {
			case journal.StepStarted:
				started[r.Resource] = i
			case journal.StepOK:
				ended[r.Resource] = i
			}
		}
		return started, ended
	}
	started, ended := order("create")
	for _, pair := range [][2]string{{"net.vpc", "app.web"}, {"logs", "app.worker"}} {
		before, after := pair[0], pair[1]
		if _, ok := ended[before]; !ok {
			t.Fatalf("no create of %s journaled", before)
		}
		if s, ok := started[after]; !ok || s < ended[before] {
			t.Errorf("create of %s started at record %d, before %s was made (record %d)", after, s, before, ended[before])
		}
	}
	if _, err := e.teardown(sp, func(o *stack.Options) { o.Confirm = func([]string) bool { return true } }); err != nil {
		t.Fatal(err)
	}
	// A delete's start may be journaled with its Check while its
	// dependent's Delete is still in flight (a teardown deletes an
	// ephemeral resource early: docs/operations.md, "teardown order");
	// its own Delete goes out only once that one has returned, so it
	// ends after it, in the journal and at the provider.
	_, ended = order("delete")
	deleted := names(e.w.Deletes())
	for _, pair := range [][2]string{{"app.web", "net.vpc"}, {"app.worker", "logs"}} {
		first, then := pair[0], pair[1]
		if e, ok := ended[then]; !ok || e < ended[first] {
			t.Errorf("delete of %s ended at record %d, before %s was deleted (record %d)", then, e, first, ended[first])
		}
		if i, j := slices.Index(deleted, first), slices.Index(deleted, then); i < 0 || j < i {
			t.Errorf("deletes %v: want %s before %s", deleted, first, then)
		}
	}
}
