package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// TestHistoryPrintsRecordsInert: on a shared stack, history prints what
// other people's commands recorded, among it the file name of the spec they
// applied. A teammate's spec named to carry a terminal escape, a carriage
// return and a fake second line ("op_fake apply succeeded") is listed on
// one line with those written as escapes, by the text view; the record
// itself is not changed (history --json gives the name as it was), and
// the refused teardown of the protected resource leaves it in place.
func TestHistoryPrintsRecordsInert(t *testing.T) {
	t.Parallel()
	plugins := buildPlugins(t)
	bin := builtBulwark(t)
	work := t.TempDir()
	name := "shop\x1b[2K\rx\nop_fake apply succeeded.yaml"
	spec := "version: 1\nstack: shop\nproviders:\n  mock: {source: mock}\nresources:\n  - name: db\n    type: generic\n    protection: protected\n"
	if err := os.WriteFile(filepath.Join(work, name), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), secrets.EnvKey+"="+testSecretsKey, "XDG_CONFIG_HOME="+filepath.Join(work, ".config"), "BULWARK_PLUGIN_DIR="+plugins)
	run := func(wantExit int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		c := exec.Command(bin, args...)
		c.Env, c.Dir, c.Stdout, c.Stderr = env, work, &stdout, &stderr
		err := c.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if code != wantExit {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantExit, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	run(0, "apply", "--yes", name)
	run(3, "teardown", "--yes", name) // refused: db is protected

	out := run(0, "history", name)
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("history printed a control character:\n%q", out)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, "op_fake") {
			t.Errorf("a record added a line of its own to history: %q\n%s", line, out)
		}
	}
	if want := `shop\x1b[2K\rx\nop_fake apply succeeded.yaml`; !strings.Contains(out, want) {
		t.Errorf("history does not show the spec's name escaped (%s):\n%s", want, out)
	}

	var doc struct {
		Revisions []struct {
			File string `json:"file"`
		} `json:"revisions"`
	}
	if err := json.Unmarshal([]byte(run(0, "history", "--json", name)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Revisions) != 1 || doc.Revisions[0].File != name {
		t.Errorf("history --json revisions %+v, want one naming %q as it is", doc.Revisions, name)
	}
	if !strings.Contains(run(0, "state", "list", name), "db") {
		t.Error("the protected resource is gone")
	}
}
