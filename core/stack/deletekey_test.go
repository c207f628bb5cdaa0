package stack_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/stack"
)

// otherStacksKey is a key another stack issued.
const otherStacksKey = "bulwark:other:01JZZZZZZZZZZZZZZZZZZZZZZZ:01JZZZZZZZZZZZZZZZZZZZZZZZ"

// A provider whose Delete checks the key (Capabilities.DeleteChecksKey)
// is asked to delete only what carries the key the state records, and the
// teardown reads no resource between its ownership check and that
// resource's Delete: the Delete is the check. (Each is still read after
// its Delete, by its Verify.) Every Delete carries the record's key.
func TestTeardownOnAKeyCheckingDeleteReadsNothingBeforeIt(t *testing.T) {
	e := newEnv(t)
	e.w.ChecksKeys()
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}},
		res{name: "c", typ: "compute", deps: []string{"b"}}, res{name: "d", typ: "generic", prot: "durable", deps: []string{"c"}})
	e.mustApply(t, sp)
	keys := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		keys[n] = e.w.ByName(n).Key
	}
	var (
		mu           sync.Mutex
		deleted      = map[string]bool{}
		readsBefore  []string
		firstDeleted bool
	)
	e.w.OnRead(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		if firstDeleted && !deleted[name] {
			readsBefore = append(readsBefore, name)
		}
	})
	e.w.OnDelete(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		firstDeleted, deleted[name] = true, true
	})
	r, err := stack.Teardown(e.ctx, sp, e.opts())
	if code := stack.ExitCode(r, err); code != stack.ExitOK {
		t.Fatalf("teardown: exit %d: %v %v", code, err, resErr(r))
	}
	if len(readsBefore) > 0 {
		t.Errorf("resources read after the first Delete and before their own: %v; want none (each Delete checks the key itself)", readsBefore)
	}
	ds := e.w.Deletes()
	if len(ds) != 4 {
		t.Fatalf("%d Deletes, want 4: %+v", len(ds), ds)
	}
	for _, d := range ds {
		if d.ExpectedKey == "" || d.ExpectedKey != keys[d.Name] {
			t.Errorf("the Delete of %s expected key %q, want the recorded %q", d.Name, d.ExpectedKey, keys[d.Name])
		}
	}
	if got := len(e.w.Snapshot()); got != 0 {
		t.Errorf("%d resources left", got)
	}
}

// The attacker's window a read cannot close: the resource is taken over
// after anything bulwark could read and before its Delete lands (here, as
// the Delete arrives). A key-checking Delete refuses it, whatever the
// operation that deletes: a teardown, or an apply of a spec the resource
// is gone from. The other stack's resource is left as it is, the run
// fails naming it, and the state still records it (a `state forget` is
// the way out, as the error says).
func TestAKeyCheckingDeleteRefusesATakeoverAtTheLastMoment(t *testing.T) {
	for _, tc := range []struct {
		what string
		run  func(e *env) (*stack.Result, error)
	}{
		{"teardown", func(e *env) (*stack.Result, error) {
			return stack.Teardown(e.ctx, mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}}), e.opts())
		}},
		{"apply without it", func(e *env) (*stack.Result, error) {
			return stack.Apply(e.ctx, mkSpec(t, res{name: "b", typ: "compute"}), e.opts())
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			e := newEnv(t)
			e.w.ChecksKeys()
			e.mustApply(t, mkSpec(t, res{name: "a", typ: "network"}, res{name: "b", typ: "compute", deps: []string{"a"}}))
			e.w.OnDelete(func(name string) {
				if name == "a" {
					e.w.SetKey("a", otherStacksKey)
				}
			})
			r, err := tc.run(e)
			if code := stack.ExitCode(r, err); code == stack.ExitOK {
				t.Fatalf("%s succeeded though a belonged to another stack when its Delete landed", tc.what)
			}
			if a := e.w.ByName("a"); a == nil || a.Key != otherStacksKey {
				t.Fatalf("a, another stack's when its Delete landed, was deleted or changed: %+v", a)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if re := resErr(r); re != nil {
				msg += re.Error()
			}
			if !strings.Contains(msg, "it is not deleted") || !strings.Contains(msg, "state forget") {
				t.Errorf("the error does not say a was kept and what to do: %s", msg)
			}
			if _, ok := e.state(t, "s").Resources["a"]; !ok {
				t.Error("the state forgot a, which still exists")
			}
		})
	}
}
