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
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// TestLockHolderPrintedInert: the lock's holder record is written by
// whoever holds the lock, on a shared stack a teammate's machine, or by
// hand. A record whose operation, host and user carry a terminal escape,
// a carriage return and a fake line of their own is named, by the apply
// it refuses, by status and by plan's note, on one line with those written
// as escapes; the stack's protected resource stays, and status --json
// gives the record as it is.
func TestLockHolderPrintedInert(t *testing.T) {
	t.Parallel()
	plugins := buildPlugins(t)
	bin := builtBulwark(t)
	work := t.TempDir()
	spec := "version: 1\nstack: shop\nproviders:\n  mock: {source: mock}\nresources:\n  - name: db\n    type: generic\n    protection: protected\n"
	if err := os.WriteFile(filepath.Join(work, "shop.yaml"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), secrets.EnvKey+"="+testSecretsKey, "XDG_CONFIG_HOME="+filepath.Join(work, ".config"), "BULWARK_PLUGIN_DIR="+plugins)
	run := func(wantExit int, args ...string) (stdout, stderr string) {
		t.Helper()
		var o, e bytes.Buffer
		c := exec.Command(bin, args...)
		c.Env, c.Dir, c.Stdout, c.Stderr = env, work, &o, &e
		err := c.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if code != wantExit {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantExit, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	run(0, "apply", "--yes", "shop.yaml")

	// Hold the lock, then make its record hostile, as a holder that
	// writes its own (or a hand in the state folder) would.
	ctx := context.Background()
	b, err := backends.Open(ctx, "file://"+filepath.Join(work, ".bulwark"), storage.Options{Stack: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w, err := b.Lock(ctx, storage.Holder{Op: "op_holder", PID: os.Getpid(), Host: "elsewhere", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	evil := "x\x1b[2K\r\nop_fake apply succeeded\x07"
	hostile := storage.Holder{Op: "op_" + evil, PID: os.Getpid(), Host: "host" + evil, User: "user" + evil, Since: time.Now()}
	rec, _ := json.Marshal(hostile)
	// In place: the record's file keeps the holder's own lock on it.
	if err := os.WriteFile(filepath.Join(work, ".bulwark", "shop", "lock"), append(rec, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}

	inert := func(what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\r\x07") {
			t.Errorf("%s printed a control character:\n%q", what, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "op_fake") {
				t.Errorf("the lock's record added a line of its own to %s: %q\n%s", what, line, out)
			}
		}
	}
	_, stderr := run(4, "apply", "--yes", "shop.yaml")
	inert("the refused apply", stderr)
	if want := `on hostx\x1b[2K\r\nop_fake apply succeeded\a`; !strings.Contains(stderr, "locked by") || !strings.Contains(stderr, want) {
		t.Errorf("the refused apply does not name the holder escaped (%s):\n%s", want, stderr)
	}
	_, stderr = run(4, "teardown", "--yes", "shop.yaml")
	inert("the refused teardown", stderr)
	stdout, stderr := run(0, "status", "shop.yaml")
	inert("status", stdout+stderr)
	if !strings.Contains(stdout, "locked by") {
		t.Errorf("status does not name the lock's holder:\n%s", stdout)
	}
	stdout, stderr = run(0, "plan", "shop.yaml")
	inert("plan", stdout+stderr)

	var doc struct {
		Lock *storage.Holder `json:"lock"`
	}
	stdout, _ = run(0, "status", "--json", "shop.yaml")
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	if doc.Lock == nil || doc.Lock.Host != hostile.Host || doc.Lock.User != hostile.User || doc.Lock.Op != hostile.Op {
		t.Errorf("status --json lock %+v, want the record as it is (%+v)", doc.Lock, hostile)
	}
	w.Release(ctx)
	stdout, _ = run(0, "state", "list", "shop.yaml")
	if !strings.Contains(stdout, "db") {
		t.Error("the protected resource is gone")
	}
}

// TestStateShowPrintsInert: a resource's config and attributes, in the
// state a teammate's apply wrote, are printed by state show, state list,
// a plan's diff and the outputs' listing on one line each, their control characters written as
// escapes (JSON's quoting leaves DEL and the C1 controls); state show
// --json gives them as they are.
func TestStateShowPrintsInert(t *testing.T) {
	t.Parallel()
	plugins := buildPlugins(t)
	bin := builtBulwark(t)
	work := t.TempDir()
	spec := "version: 1\nstack: shop\nproviders:\n  mock: {source: mock}\nresources:\n  - name: db\n    type: network\n    config:\n      zone: \"x\\e[2K\\r\\nop_fake apply succeeded\\x9b\"\noutputs:\n  zone: {value: \"${db.zone}\"}\n"
	if err := os.WriteFile(filepath.Join(work, "shop.yaml"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), secrets.EnvKey+"="+testSecretsKey, "XDG_CONFIG_HOME="+filepath.Join(work, ".config"), "BULWARK_PLUGIN_DIR="+plugins)
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env, c.Dir = env, work
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("apply", "--yes", "shop.yaml")
	// The same stack with the zone changed: plan shows the value before
	// (the state's) and after.
	if err := os.WriteFile(filepath.Join(work, "shop2.yaml"), []byte(strings.Replace(spec, `zone: "x`, `zone: "y`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"state", "show", "shop.yaml", "db"}, {"state", "list", "shop.yaml"}, {"status", "shop.yaml"}, {"plan", "shop2.yaml"}, {"output", "shop.yaml"}} {
		out := run(args...)
		if strings.ContainsAny(out, "\x1b\r\u009b") {
			t.Errorf("%v printed a control character:\n%q", args, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "op_fake") {
				t.Errorf("a value added a line of its own to %v: %q", args, line)
			}
		}
	}
	var doc struct {
		Resource struct {
			Config map[string]any `json:"config"`
		} `json:"resource"`
	}
	out := run("state", "show", "--json", "shop.yaml", "db")
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
	bin := builtBulwark(t)
	work := t.TempDir()
	c := exec.Command(bin, "plan", "x\x1b[2K\r\nop_fake apply succeeded\u009b.yaml")
	c.Dir = work
	c.Env = append(os.Environ(), secrets.EnvKey+"="+testSecretsKey, "XDG_CONFIG_HOME="+filepath.Join(work, ".config"))
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("plan of a missing spec: %v, want an exit code\n%s", err, out)
	}
	if strings.ContainsAny(string(out), "\x1b\r\u009b") {
		t.Errorf("the error was printed with its control characters:\n%q", out)
	}
	if !strings.Contains(string(out), `x\x1b[2K\r`) || !strings.Contains(string(out), `op_fake apply succeeded\u009b.yaml`) {
		t.Errorf("the error does not name the file escaped:\n%s", out)
	}
}
