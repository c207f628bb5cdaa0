package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// The tests of this file feed bulwark what a teammate, a provider or a
// hand in the backend wrote, carrying a terminal escape, a carriage return,
// a bell, a C1 control and a fake line of their own ("op_fake apply
// succeeded"), and check that every text view prints it inert
// (core/printable) while the records and --json keep it as it is.

// hostile is a stack folder of its own and the real binary, with the
// mock and local plugins and a secrets key, for the tests that feed
// bulwark records and values a teammate, a provider or a hand wrote.
type hostile struct {
	t    *testing.T
	bin  string
	work string
	env  []string
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	plugins := buildPlugins(t)
	work := t.TempDir()
	return &hostile{t: t, bin: builtBulwark(t), work: work,
		env: append(os.Environ(), secrets.EnvKey+"="+testSecretsKey, "XDG_CONFIG_HOME="+filepath.Join(work, ".config"), "BULWARK_PLUGIN_DIR="+plugins)}
}

// write writes a file of the work folder.
func (h *hostile) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.work, name), []byte(content), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// run runs bulwark in the work folder and fails the test unless it exits
// wantExit.
func (h *hostile) run(wantExit int, args ...string) (stdout, stderr string) {
	h.t.Helper()
	var o, e bytes.Buffer
	c := exec.Command(h.bin, args...)
	c.Env, c.Dir, c.Stdout, c.Stderr = h.env, h.work, &o, &e
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("%v: %v", args, err)
	}
	if code != wantExit {
		h.t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantExit, o.String(), e.String())
	}
	return o.String(), e.String()
}

// lock takes stack's lock in the work folder's file backend, as a holder
// named op on another host; the test's end releases it, if the test has
// not.
func (h *hostile) lock(stack, op string) storage.Writer {
	h.t.Helper()
	ctx := context.Background()
	b, err := backends.Open(ctx, "file://"+filepath.Join(h.work, ".bulwark"), storage.Options{Stack: stack})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { b.Close() })
	w, err := b.Lock(ctx, storage.Holder{Op: op, PID: os.Getpid(), Host: "elsewhere", Since: time.Now()})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { w.Release(ctx) })
	return w
}

// put commits rs to stack's state through the backend under a lock taken
// for op, as a hand (or another tool) would, and releases it.
func (h *hostile) put(stack, op string, rs ...*state.Resource) {
	h.t.Helper()
	ctx := context.Background()
	w := h.lock(stack, op)
	if _, err := w.Commit(ctx, storage.Commit{Change: storage.Change{Put: rs}}); err != nil {
		h.t.Fatal(err)
	}
	w.Release(ctx)
}

// runAny runs bulwark in the work folder, whatever its exit code.
func (h *hostile) runAny(args ...string) (stdout, stderr string) {
	h.t.Helper()
	var o, e bytes.Buffer
	c := exec.Command(h.bin, args...)
	c.Env, c.Dir, c.Stdout, c.Stderr = h.env, h.work, &o, &e
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			h.t.Fatalf("%v: %v", args, err)
		}
	}
	return o.String(), e.String()
}

// inert fails the test when out holds a control character other than a
// newline, or a line starting with "op_fake" (the line the hostile values
// try to add).
func (h *hostile) inert(what, out string) {
	h.t.Helper()
	if strings.ContainsAny(out, "\x1b\r\x07\u009b") {
		h.t.Errorf("%s printed a control character:\n%q", what, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "op_fake") {
			h.t.Errorf("%s: a record added a line of its own: %q\n%s", what, line, out)
		}
	}
}

// TestHistoryPrintsRecordsInert: on a shared stack, history prints what
// other people's commands recorded, among it the file name of the spec they
// applied. A teammate's spec named to carry a terminal escape, a carriage
// return and a fake second line is listed on one line with those written
// as escapes, by the text view; the record itself is not changed (history
// --json gives the name as it was), and the refused teardown of the
// protected resource leaves it in place.
func TestHistoryPrintsRecordsInert(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	name := "shop\x1b[2K\rx\nop_fake apply succeeded.yaml"
	h.write(name, "version: 1\nstack: shop\nproviders:\n  mock: {source: mock}\nresources:\n  - name: db\n    type: generic\n    protection: protected\n")
	h.run(0, "apply", "--yes", name)
	h.run(3, "teardown", "--yes", name) // refused: db is protected

	out, _ := h.run(0, "history", name)
	h.inert("history", out)
	if want := `shop\x1b[2K\rx\nop_fake apply succeeded.yaml`; !strings.Contains(out, want) {
		t.Errorf("history does not show the spec's name escaped (%s):\n%s", want, out)
	}

	var doc struct {
		Revisions []struct {
			File string `json:"file"`
		} `json:"revisions"`
	}
	out, _ = h.run(0, "history", "--json", name)
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Revisions) != 1 || doc.Revisions[0].File != name {
		t.Errorf("history --json revisions %+v, want one naming %q as it is", doc.Revisions, name)
	}
	if out, _ := h.run(0, "state", "list", name); !strings.Contains(out, "db") {
		t.Error("the protected resource is gone")
	}
}

// TestLockHolderPrintedInert: the lock's holder record is written by
// whoever holds the lock, on a shared stack a teammate's machine, or by
// hand. A record whose operation, host and user carry a terminal escape,
// a carriage return and a fake line of their own is named, by the apply
// and teardown it refuses, by status and by plan's note, on one line with
// those written as escapes; the stack's protected resource stays, and
// status --json gives the record as it is.
func TestLockHolderPrintedInert(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.write("shop.yaml", "version: 1\nstack: shop\nproviders:\n  mock: {source: mock}\nresources:\n  - name: db\n    type: generic\n    protection: protected\n")
	h.run(0, "apply", "--yes", "shop.yaml")

	// Hold the lock, then make its record hostile, as a holder that
	// writes its own (or a hand in the state folder) would.
	ctx := context.Background()
	w := h.lock("shop", "op_holder")
	evil := "x\x1b[2K\r\nop_fake apply succeeded\x07"
	bad := storage.Holder{Op: "op_" + evil, PID: os.Getpid(), Host: "host" + evil, User: "user" + evil, Since: time.Now()}
	rec, _ := json.Marshal(bad)
	// In place: the record's file keeps the holder's own lock on it.
	if err := os.WriteFile(filepath.Join(h.work, ".bulwark", "shop", "lock"), append(rec, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}

	_, stderr := h.run(4, "apply", "--yes", "shop.yaml")
	h.inert("the refused apply", stderr)
	if want := `on hostx\x1b[2K\r\nop_fake apply succeeded\a`; !strings.Contains(stderr, "locked by") || !strings.Contains(stderr, want) {
		t.Errorf("the refused apply does not name the holder escaped (%s):\n%s", want, stderr)
	}
	_, stderr = h.run(4, "teardown", "--yes", "shop.yaml")
	h.inert("the refused teardown", stderr)
	stdout, stderr := h.run(0, "status", "shop.yaml")
	h.inert("status", stdout+stderr)
	if !strings.Contains(stdout, "locked by") {
		t.Errorf("status does not name the lock's holder:\n%s", stdout)
	}
	stdout, stderr = h.run(0, "plan", "shop.yaml")
	h.inert("plan", stdout+stderr)

	var doc struct {
		Lock *storage.Holder `json:"lock"`
	}
	stdout, _ = h.run(0, "status", "--json", "shop.yaml")
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	if doc.Lock == nil || doc.Lock.Host != bad.Host || doc.Lock.User != bad.User || doc.Lock.Op != bad.Op {
		t.Errorf("status --json lock %+v, want the record as it is (%+v)", doc.Lock, bad)
	}
	w.Release(ctx)
	if stdout, _ = h.run(0, "state", "list", "shop.yaml"); !strings.Contains(stdout, "db") {
		t.Error("the protected resource is gone")
	}
}

// TestStateShowPrintsInert: a resource's config and attributes, in the
// state a teammate's apply wrote, are printed by state show, state list,
// a plan's diff and the outputs' listing on one line each, their control
// characters written as escapes (JSON's quoting leaves DEL and the C1
// controls); state show --json gives them as they are.
func TestStateShowPrintsInert(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	spec := "version: 1\nstack: shop\nproviders:\n  mock: {source: mock}\nresources:\n  - name: db\n    type: network\n    config:\n      zone: \"x\\e[2K\\r\\nop_fake apply succeeded\\x9b\"\noutputs:\n  zone: {value: \"${db.zone}\"}\n"
	h.write("shop.yaml", spec)
	h.run(0, "apply", "--yes", "shop.yaml")
	// The same stack with the zone changed: plan shows the value before
	// (the state's) and after.
	h.write("shop2.yaml", strings.Replace(spec, `zone: "x`, `zone: "y`, 1))
	for _, args := range [][]string{{"state", "show", "shop.yaml", "db"}, {"state", "list", "shop.yaml"}, {"status", "shop.yaml"}, {"plan", "shop2.yaml"}, {"output", "shop.yaml"}} {
		stdout, stderr := h.run(0, args...)
		h.inert(strings.Join(args, " "), stdout+stderr)
	}
	var doc struct {
		Resource struct {
			Config map[string]any `json:"config"`
		} `json:"resource"`
	}
	out, _ := h.run(0, "state", "show", "--json", "shop.yaml", "db")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("state show --json: %v\n%s", err, out)
	}
	if got := doc.Resource.Config["zone"]; got != "x\x1b[2K\r\nop_fake apply succeeded\u009b" {
		t.Errorf("state show --json config.zone = %q, want the value as it is", got)
	}
}

// TestErrorsPrintedInert: an error quotes what it read (here a spec's file
// name, in the operating system's own message); bulwark prints it with its
// control characters written as escapes, newlines apart (a message may
// have several lines: printable.Text).
func TestErrorsPrintedInert(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	_, stderr := h.run(1, "plan", "x\x1b[2K\r\nop_fake apply succeeded\u009b.yaml")
	if strings.ContainsAny(stderr, "\x1b\r\u009b") {
		t.Errorf("the error was printed with its control characters:\n%q", stderr)
	}
	if !strings.Contains(stderr, `x\x1b[2K\r`) || !strings.Contains(stderr, `op_fake apply succeeded\u009b.yaml`) {
		t.Errorf("the error does not name the file escaped:\n%s", stderr)
	}
}

// TestStateNamesPrintedInert: a resource name, type and id in the state
// are a teammate's, or a hand's in the backend, as much as a spec's. One
// the spec no longer has, protected, with control characters in its name
// and id: the plan that would delete it, the teardown it refuses and the
// listings name it on one line with those written as escapes, and it stays.
func TestStateNamesPrintedInert(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.write("shop.yaml", "version: 1\nstack: shop\nproviders:\n  mock: {source: mock}\nresources:\n  - name: db\n    type: generic\n")
	h.run(0, "apply", "--yes", "shop.yaml")

	evil := "x\x1b[2K\r\nop_fake apply succeeded\u009b\"\\"
	r := &state.Resource{Name: "vault" + evil, Type: "generic" + evil, Provider: "mock", Source: "mock", ID: "id" + evil, Protection: protection.Protected}
	h.put("shop", "op_hand", r)

	stdout, stderr := h.run(3, "--events", "plan.events", "plan", "shop.yaml") // refused: it would drop a protected record
	h.inert("plan", stdout+stderr)
	if !strings.Contains(stdout+stderr, `vaultx\x1b[2K\r\nop_fake apply succeeded\u009b`) {
		t.Errorf("plan does not name the state's resource escaped:\n%s%s", stdout, stderr)
	}
	stdout, stderr = h.run(3, "--events", "teardown.events", "teardown", "--yes", "shop.yaml") // refused: the resource is protected
	h.inert("the refused teardown", stdout+stderr)
	for _, args := range [][]string{{"status", "shop.yaml"}, {"state", "list", "shop.yaml"}, {"graph", "shop.yaml"}} {
		stdout, stderr := h.run(0, args...)
		h.inert(strings.Join(args, " "), stdout+stderr)
	}
	// The graph of a saved plan draws the state's resources the spec
	// lacks: named inside DOT's quotes, escaped for it too. A plan that
	// would drop a protected record is refused, so the record is made
	// durable first: its plan is "already gone", and saved.
	durable := *r
	durable.Protection = protection.Durable
	h.put("shop", "op_hand2", &durable)
	h.run(0, "--events", "plan.events", "plan", "shop.yaml", "--out", "p.plan")
	stdout, stderr = h.run(0, "graph", "shop.yaml", "--plan", "p.plan")
	h.inert("graph --plan", stdout+stderr)
	if want := `[label="vaultx\\x1b[2K\\r\\nop_fake apply succeeded\\u009b\"\\\ngeneric`; !strings.Contains(stdout, want) {
		t.Errorf("graph --plan does not label the state's resource escaped (%s):\n%s", want, stdout)
	}
	if stdout, _ := h.run(0, "state", "list", "--json", "shop.yaml"); !strings.Contains(stdout, `vaultx\u001b[2K\r\nop_fake`) {
		t.Errorf("state list --json does not give the name as it is:\n%s", stdout)
	}
}
