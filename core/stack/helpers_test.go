package stack_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// res is one resource of a spec the tests write as YAML.
type res struct {
	name         string
	typ          string
	prot         string // "" leaves protection out (ephemeral)
	deps         []string
	size         any    // nil leaves size out
	zone         string // "" leaves zone out
	onFailure    string
	intervention bool
}

// specYAML writes a spec of stack name on the single provider "fake".
func specYAML(stackName string, rs ...res) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nstack: %s\nproviders:\n  fake: {}\n", stackName)
	if len(rs) == 0 {
		b.WriteString("resources: []\n")
		return b.String()
	}
	b.WriteString("resources:\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "  - name: %s\n    type: %s\n", r.name, r.typ)
		if r.prot != "" {
			fmt.Fprintf(&b, "    protection: %s\n", r.prot)
		}
		if len(r.deps) > 0 {
			fmt.Fprintf(&b, "    depends_on: [%s]\n", strings.Join(r.deps, ", "))
		}
		var cfg []string
		if r.size != nil {
			cfg = append(cfg, fmt.Sprintf("size: %v", r.size))
		}
		if r.zone != "" {
			cfg = append(cfg, "zone: "+r.zone)
		}
		if len(cfg) > 0 {
			fmt.Fprintf(&b, "    config: {%s}\n", strings.Join(cfg, ", "))
		}
		if r.onFailure != "" {
			fmt.Fprintf(&b, "    on_failure: %s\n", r.onFailure)
		}
		if r.intervention {
			b.WriteString("    intervention: true\n")
		}
	}
	return b.String()
}

// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

func parseSpec(t fataler, text string) *spec.Spec {
	sp, err := spec.Parse("stack.yaml", []byte(text))
	if err != nil {
		t.Fatalf("spec does not parse: %v\n%s", err, text)
	}
	return sp
}

// mkSpec parses the spec of rs on stack "s".
func mkSpec(t fataler, rs ...res) *spec.Spec {
	return parseSpec(t, specYAML("s", rs...))
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// env is one stack's state folder and one fake world, shared by every run.
type env struct {
	ctx      context.Context
	stateDir string
	w        *fakeWorld
	out      *syncBuffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{ctx: t.Context(), stateDir: t.TempDir(), w: newFakeWorld(), out: &syncBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("output of the operations:\n%s", e.out)
		}
	})
	return e
}

type opt func(*stack.Options)

func simulate(name string) opt { return func(o *stack.Options) { o.SimulateFailure = name } }

// replacing names resources the run replaces (--replace).
func replacing(names ...string) opt { return func(o *stack.Options) { o.Replace = names } }

func parallelism(n int) opt { return func(o *stack.Options) { o.Parallelism = n } }

func (e *env) opts(mods ...opt) stack.Options {
	o := stack.Options{StorageOptions: stack.StorageOptions{StateDir: e.stateDir}, OutputOptions: stack.OutputOptions{Reporter: recorder{e.out}}, TestHooks: stack.TestHooks{Starter: e.w.Starter()}}
	for _, m := range mods {
		m(&o)
	}
	return o
}

func (e *env) apply(sp *spec.Spec, mods ...opt) (*stack.Result, error) {
	return stack.Apply(e.ctx, sp, e.opts(mods...))
}

func (e *env) teardown(sp *spec.Spec, mods ...opt) (*stack.Result, error) {
	return stack.Teardown(e.ctx, sp, e.opts(mods...))
}

func (e *env) resume(sp *spec.Spec, mods ...opt) (*stack.Result, error) {
	return stack.Resume(e.ctx, sp, e.opts(mods...))
}

// state loads stack s's state (empty when there is none yet).
func (e *env) state(t fataler, stackName string) *state.State {
	st, err := state.Load(filepath.Join(stack.StackDir(e.stateDir, stackName), state.FileName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &state.State{Resources: map[string]*state.Resource{}}
		}
		t.Fatalf("load state: %v", err)
	}
	return st
}

// mustApply applies sp and fails unless it succeeded with exit 0.
func (e *env) mustApply(t *testing.T, sp *spec.Spec, mods ...opt) *stack.Result {
	t.Helper()
	r, err := e.apply(sp, mods...)
	if code := stack.ExitCode(r, err); err != nil || code != stack.ExitOK {
		t.Fatalf("apply: exit %d, err %v, result err %v", code, err, resErr(r))
	}
	return r
}

func resErr(r *stack.Result) error {
	if r == nil {
		return nil
	}
	return r.Err
}

// agree reports how the state and the world disagree: every recorded
// resource must exist in the world under its id, name and type, and every
// resource in the world must be recorded.
func agree(st *state.State, world map[string]fakeResource) error {
	var problems []string
	ids := map[string]bool{}
	for _, n := range st.Names() {
		r := st.Resources[n]
		ids[r.ID] = true
		w, ok := world[r.ID]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is recorded (id %s) but does not exist", n, r.ID))
		case w.Name != r.Address() || w.Type != r.Type:
			problems = append(problems, fmt.Sprintf("%s is recorded as %s %s but id %s is %s %s", n, r.Type, n, r.ID, w.Type, w.Name))
		}
	}
	for id, w := range world {
		if !ids[id] {
			problems = append(problems, fmt.Sprintf("%s %s (id %s) exists but is not recorded", w.Type, w.Name, id))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("state and world disagree:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// resourcesOf keeps the ids of resource steps: an update's own steps
// ("update:verify", ...) have a colon, which resource names cannot.
func resourcesOf(ids []string) []string {
	out := []string{}
	for _, id := range ids {
		if !strings.Contains(id, ":") {
			out = append(out, id)
		}
	}
	return out
}

// sorted returns a sorted copy.
func sorted(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	if c == nil {
		c = []string{}
	}
	return c
}

// dependentsFirst checks that, in order, every resource comes before each
// resource it depends on (transitively) according to deps.
func dependentsFirst(order []string, deps map[string][]string) error {
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	var reach func(n string, seen map[string]bool)
	reach = func(n string, seen map[string]bool) {
		for _, d := range deps[n] {
			if !seen[d] {
				seen[d] = true
				reach(d, seen)
			}
		}
	}
	for _, a := range order {
		seen := map[string]bool{}
		reach(a, seen)
		for b := range seen {
			if pb, ok := pos[b]; ok && pb < pos[a] {
				return fmt.Errorf("%s was deleted before %s, which depends on it (order %v)", b, a, order)
			}
		}
	}
	return nil
}

// depsOf returns the depends_on of each resource of rs.
func depsOf(rs ...res) map[string][]string {
	out := map[string][]string{}
	for _, r := range rs {
		out[r.name] = r.deps
	}
	return out
}
