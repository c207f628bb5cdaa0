package stack_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// secretChain writes a chain of n resources on the fake provider: r0's zone
// interpolates the sensitive variable pw; each next one's zone references
// the one before's id, and, when mix says so, pw too. Outputs expose the
// last id, pw itself (declared sensitive) and the last zone (derived from pw
// through pw, and never declared sensitive).
func secretChain(n int, mix []bool) string {
	var b strings.Builder
	b.WriteString("version: 1\nstack: s\nvariables:\n  pw: {type: string, sensitive: true}\n  size: {type: number, default: 1}\nproviders:\n  fake: {}\nresources:\n")
	for i := range n {
		zone := `"z-${var.pw}"`
		if i > 0 {
			zone = fmt.Sprintf(`"after-${r%d.id}"`, i-1)
			if mix[i] {
				zone = fmt.Sprintf(`"${var.pw}/${r%d.id}"`, i-1)
			}
		}
		fmt.Fprintf(&b, "  - name: r%d\n    type: generic\n    config: {zone: %s, size: \"${var.size}\"}\n", i, zone)
	}
	fmt.Fprintf(&b, "outputs:\n  last: {value: \"${r%d.id}\"}\n  pw: {value: \"${var.pw}\", sensitive: true}\n  first_zone: {value: \"${r0.zone}\"}\n", n-1)
	return b.String()
}

// TestPropertyNoSensitiveValueInClear: whatever the chain and the
// passwords, no password reaches in clear anything bulwark writes under
// the state folder, its events, its progress, its plan (text and JSON), its
// outputs or its errors, across a first apply, an update to another
// password, a failed run and a rollback to the first revision; and
// resolution is deterministic: the same inputs plan the same.
func TestPropertyNoSensitiveValueInClear(t *testing.T) {
	key, err := secrets.NewKey("test")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("RAPID_CHECKS") == "" && !flagSet("rapid.checks") {
		f := flag.Lookup("rapid.checks")
		old := f.Value.String()
		f.Value.Set("15") // each check is six operations
		defer f.Value.Set(old)
	}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(rt, "n")
		mix := rapid.SliceOfN(rapid.Bool(), n, n).Draw(rt, "mix")
		pw1 := "pw1-" + rapid.StringMatching(`[a-zA-Z0-9]{6,16}`).Draw(rt, "pw1")
		pw2 := "pw2-" + rapid.StringMatching(`[a-zA-Z0-9]{6,16}`).Draw(rt, "pw2")
		text := secretChain(n, mix)
		dir, err := os.MkdirTemp("", "bulwark-prop-secrets-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		e := &env{ctx: t.Context(), stateDir: dir, w: newFakeWorld(), out: &syncBuffer{}}
		var evs syncBuffer
		opts := func(mods ...opt) stack.Options {
			o := e.opts(mods...)
			o.Events = events.NewWriter(&evs, nil)
			o.Secrets = &secrets.Source{Env: key.Encode()}
			o.Redactor = secrets.NewRedactor()
			return o
		}
		var printed bytes.Buffer
		planOf := func(pw string) []byte {
			sp := expanded(t, text, map[string]any{"pw": pw})
			pv, err := stack.Plan(e.ctx, sp, opts())
			if err != nil {
				rt.Fatalf("plan: %v", err)
			}
			printed.Write(planShows(rt, pv))
			b, err := json.Marshal(pv)
			if err != nil {
				rt.Fatal(err)
			}
			printed.Write(b)
			return b
		}
		run := func(what string, f func() (*stack.Result, error)) *stack.Result {
			res, err := f()
			if err != nil {
				printed.WriteString(err.Error())
				return nil
			}
			if res.Err != nil {
				printed.WriteString(res.Err.Error())
			}
			b, _ := json.Marshal(res.Outputs)
			printed.Write(b)
			return res
		}
		if a, b := planOf(pw1), planOf(pw1); !bytes.Equal(a, b) {
			rt.Fatalf("the same inputs planned differently:\n%s\n%s", a, b)
		}
		sp1, sp2 := expanded(t, text, map[string]any{"pw": pw1}), expanded(t, text, map[string]any{"pw": pw2})
		run("apply", func() (*stack.Result, error) { return stack.Apply(e.ctx, sp1, opts()) })
		planOf(pw2)
		run("update", func() (*stack.Result, error) { return stack.Apply(e.ctx, sp2, opts()) })
		run("failed", func() (*stack.Result, error) {
			return stack.Apply(e.ctx, expanded(t, text, map[string]any{"pw": pw1, "size": 2.0}), opts(simulate(fmt.Sprintf("r%d", n-1))))
		})
		run("rollback", func() (*stack.Result, error) { return stack.Rollback(e.ctx, sp2, opts(), 1) })
		outs, err := inspect.Outputs(sp2, opts(), "")
		if err != nil {
			rt.Fatal(err)
		}
		b, _ := json.Marshal(outs)
		printed.Write(b)
		// Asked for by name, the sensitive output is the value revision 1
		// was applied with: the rollback re-applied it.
		one, err := inspect.Outputs(sp2, opts(), "pw")
		if err != nil || !reflect.DeepEqual(one[0].Value, pw1) {
			rt.Fatalf("output pw after rollback --to 1 = %v, %v; want revision 1's", one, err)
		}
		for _, pw := range []string{pw1, pw2} {
			for what, b := range map[string][]byte{"events": []byte(evs.String()), "progress": []byte(e.out.String()), "plans, outputs, errors": printed.Bytes()} {
				if bytes.Contains(b, []byte(pw)) {
					rt.Fatalf("%s hold %q in clear:\n%s", what, pw, b)
				}
			}
			err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if bytes.Contains(b, []byte(pw)) {
					return fmt.Errorf("%s holds %q in clear", path, pw)
				}
				return nil
			})
			if err != nil {
				rt.Fatal(err)
			}
		}
	})
}
