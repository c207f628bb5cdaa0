package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk"
	"github.com/bulwark-iac/bulwark/sdk/providertest"
)

var conformance = providertest.Config{Resources: []providertest.Resource{
	{Type: "greeting", Name: "world",
		Config: map[string]any{"text": "hello, world"},
		Update: map[string]any{"text": "hello, world", "shout": true}},
	{Type: "greeting", Name: "quiet", Config: map[string]any{"text": "psst", "shout": false}},
}}

func newHello(*testing.T) sdk.Provider { return &hello{} }

// The provider behind the SDK's gRPC server, as sdk.Serve serves it.
func TestConformance(t *testing.T) {
	providertest.RunGRPC(t, newHello, conformance)
}

const spec = `version: 1
stack: hello
providers:
  hello: {}
resources:
  - name: world
    type: greeting
    config:
      text: hello, world
  - name: loud
    type: greeting
    depends_on: [world]
    config:
      text: hello again
      shout: true
`

// The plugin built on its own (GOWORK=off, as out of tree), then used by
// the real bulwark CLI: apply, status, a re-apply that changes nothing,
// teardown.
func TestWithBulwark(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := t.TempDir()
	build := func(dir string, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(goBin, append([]string{"build", "-o"}, args...)...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	noWork := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "GOWORK=") })
	build(filepath.Dir(file), append(noWork, "GOWORK=off"), filepath.Join(bin, "bulwark-provider-hello"), ".")
	build(root, noWork, filepath.Join(bin, "bulwark"), "./cmd/bulwark") // the repository's workspace

	t.Run("conformance of the executable", func(t *testing.T) {
		providertest.RunExecutable(t, filepath.Join(bin, "bulwark-provider-hello"), conformance)
	})

	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "spec.yaml"), []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(work, "state")
	home := t.TempDir() // bulwark keeps its secrets key under the user's config folder: not the real one
	bulwark := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "bulwark"), append([]string{"--plugin-dir", bin, "--state-dir", state}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Dir, cmd.Stdout, cmd.Stderr = work, &stdout, &stderr
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
		if err := cmd.Run(); err != nil {
			t.Fatalf("bulwark %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, &stdout, &stderr)
		}
		return stdout.String()
	}
	greetings := func() map[string]sdk.Attributes {
		t.Helper()
		w := map[string]sdk.Attributes{}
		b, err := os.ReadFile(filepath.Join(state, "hello", "providers", "hello", "greetings.json"))
		if err != nil || json.Unmarshal(b, &w) != nil {
			t.Fatalf("the provider's world: %v %s", err, b)
		}
		return w
	}

	if out := bulwark("apply", "--yes", "spec.yaml"); !strings.Contains(out, "2 changed") {
		t.Fatalf("first apply: %s", out)
	}
	var status struct {
		Resources []struct{ Name, Type, Provider, ID string }
	}
	if err := json.Unmarshal([]byte(bulwark("status", "spec.yaml", "--json")), &status); err != nil {
		t.Fatal(err)
	}
	w := greetings()
	if len(status.Resources) != 2 || len(w) != 2 {
		t.Fatalf("status lists %+v; the provider holds %v", status.Resources, w)
	}
	for _, r := range status.Resources {
		if r.Type != "greeting" || r.Provider != "hello" || r.ID == "" || w[r.Name]["id"] != r.ID {
			t.Errorf("status: %+v; the provider holds %v", r, w[r.Name])
		}
	}
	if w["loud"]["shout"] != true || w["world"]["text"] != "hello, world" {
		t.Errorf("the provider holds %v", w)
	}
	if out := bulwark("apply", "--yes", "spec.yaml"); !strings.Contains(out, "0 changed") {
		t.Fatalf("re-apply is not a no-op: %s", out)
	}
	bulwark("teardown", "spec.yaml", "--yes")
	if w := greetings(); len(w) != 0 {
		t.Fatalf("after teardown the provider still holds %v", w)
	}
}
