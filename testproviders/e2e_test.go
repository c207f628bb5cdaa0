package testproviders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/testproviders/internal/world"
	"github.com/bulwark-iac/bulwark/testproviders/mirror"
)

// TestTerraform drives Terraform through each test provider's lifecycle,
// the providers installed from a filesystem mirror the test builds, and
// checks what the world folder holds after each step.
func TestTerraform(t *testing.T) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform is not on PATH: these tests drive Terraform (1.11.4) against the test providers; install it to run them")
	}
	ctx := testContext(t)
	dir, err := mirror.Build(ctx, filepath.Join(t.TempDir(), "mirror"))
	if err != nil {
		t.Fatal(err)
	}
	cliConfig := filepath.Join(t.TempDir(), "terraform.tfrc")
	if err := os.WriteFile(cliConfig, []byte(mirror.CLIConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range mirror.Providers() {
		t.Run(p.Type, func(t *testing.T) {
			t.Parallel()
			t.Run("lifecycle", func(t *testing.T) { lifecycle(t, newRig(t, tf, cliConfig, p)) })
			t.Run("upgrade", func(t *testing.T) { upgrade(t, newRig(t, tf, cliConfig, p)) })
		})
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-10*time.Second))
	}
	t.Cleanup(cancel)
	return ctx
}

// rig is one Terraform working folder and the world its provider writes.
type rig struct {
	t        *testing.T
	ctx      context.Context
	tf       string
	env      []string
	work     string
	p        mirror.Provider
	typ      string // the thing resource type
	world    *world.Store
	useEnv   bool // sdktest finds its world through the environment
	initDone bool
}

func newRig(t *testing.T, tf, cliConfig string, p mirror.Provider) *rig {
	root := t.TempDir()
	store, err := world.Open(filepath.Join(root, "world"))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, ctx: testContext(t), tf: tf, work: filepath.Join(root, "work"), p: p,
		typ: p.Type + "_thing", world: store, useEnv: p.Type == "sdktest"}
	if err := os.MkdirAll(r.work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TF_") && !strings.HasPrefix(kv, world.EnvDir+"=") {
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "TF_CLI_CONFIG_FILE="+cliConfig, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
		"TF_DATA_DIR="+filepath.Join(root, "tfdata"))
	if r.useEnv {
		r.env = append(r.env, world.EnvDir+"="+store.Dir)
	}
	return r
}

// run runs terraform with args in the working folder and returns its
// output and exit code.
func (r *rig) run(args ...string) (string, int) {
	r.t.Helper()
	cmd := exec.CommandContext(r.ctx, r.tf, append(args[:1:1], append([]string{"-no-color"}, args[1:]...)...)...)
	cmd.Dir = r.work
	cmd.Env = r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	r.t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out.String())
	return "", -1
}

// ok runs terraform and fails the test unless it exits 0.
func (r *rig) ok(args ...string) string {
	r.t.Helper()
	out, code := r.run(args...)
	if code != 0 {
		r.t.Fatalf("terraform %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// write replaces the configuration with the provider block and body.
func (r *rig) write(body string) {
	r.t.Helper()
	conf := fmt.Sprintf("terraform {\n  required_providers {\n    %s = { source = %q, version = %q }\n  }\n}\n\n",
		r.p.Type, r.p.ShortSource(), mirror.Version)
	if r.useEnv {
		conf += fmt.Sprintf("provider %q {\n  latency_ms = 1\n}\n\n", r.p.Type)
	} else {
		conf += fmt.Sprintf("provider %q {\n  world      = %q\n  latency_ms = 1\n  token      = \"not-a-real-token\"\n}\n\n", r.p.Type, r.world.Dir)
	}
	conf += strings.ReplaceAll(body, "TYPE", r.p.Type)
	if err := os.WriteFile(filepath.Join(r.work, "main.tf"), []byte(conf), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if !r.initDone {
		r.ok("init")
		r.initDone = true
	}
}

// apply applies and then checks that a second plan is empty.
func (r *rig) apply() string {
	r.t.Helper()
	out := r.ok("apply", "-auto-approve")
	r.noop()
	return out
}

func (r *rig) noop() {
	r.t.Helper()
	if out, code := r.run("plan", "-detailed-exitcode"); code != 0 {
		r.t.Fatalf("plan after apply: exit %d, want 0 (no changes)\n%s", code, out)
	}
}

// objects returns the world's things by name.
func (r *rig) objects() map[string]*world.Thing {
	r.t.Helper()
	all, err := r.world.List(r.typ)
	if err != nil {
		r.t.Fatal(err)
	}
	byName := map[string]*world.Thing{}
	for _, o := range all {
		if byName[o.Name] != nil {
			r.t.Fatalf("two objects named %s in the world", o.Name)
		}
		byName[o.Name] = o
	}
	return byName
}

// item returns the world's item the state records as TYPE_item.small.
func (r *rig) item() *world.Item {
	r.t.Helper()
	id, _ := r.state()[r.p.Type+"_item.small"].Attributes["id"].(string)
	it, err := r.world.GetItem(r.p.Type+"_item", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return it
}

// state reads terraform.tfstate: resource address -> its one instance.
func (r *rig) state() map[string]tfInstance {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.work, "terraform.tfstate"))
	if err != nil {
		r.t.Fatal(err)
	}
	var st struct {
		Resources []struct {
			Mode, Type, Name string
			Instances        []tfInstance
		}
	}
	if err := json.Unmarshal(data, &st); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]tfInstance{}
	for _, res := range st.Resources {
		addr := res.Type + "." + res.Name
		if res.Mode == "data" {
			addr = "data." + addr
		}
		if len(res.Instances) != 1 {
			r.t.Fatalf("%s: %d instances", addr, len(res.Instances))
		}
		out[addr] = res.Instances[0]
	}
	return out
}

type tfInstance struct {
	SchemaVersion int            `json:"schema_version"`
	Status        string         `json:"status"`
	Attributes    map[string]any `json:"attributes"`
	Private       string         `json:"private"`
}

func (r *rig) outputs() map[string]any {
	r.t.Helper()
	var raw map[string]struct{ Value any }
	if err := json.Unmarshal([]byte(r.ok("output", "-json")), &raw); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]any{}
	for k, v := range raw {
		out[k] = v.Value
	}
	return out
}

// mainBody is the managed thing and the data sources that read it. The
// framework provider's thing has nested attributes too.
func (r *rig) mainBody(name, extra string) string {
	nested := ""
	if r.p.Protocol == 6 {
		nested = `
  endpoint  = { host = "db.internal", port = 5432 }
  listeners = { web = { port = 443, protocol = "https" }, admin = { port = 8443 } }`
	}
	return fmt.Sprintf(`resource "TYPE_thing" "main" {
  name        = %[1]q
  secret      = "hunter2"
  tags        = { env = "test", team = "core" }
%[2]s%[3]s

  network {
    cidr   = "10.0.0.0/16"
    public = true
  }
  rule {
    name = "allow-ssh"
  }
  rule {
    name     = "allow-web"
    priority = 10
  }
  port {
    number = 22
  }
  port {
    number   = 443
    protocol = "tcp"
  }
}

resource "TYPE_item" "small" {
  name  = "small"
  value = %[1]q
}

data "TYPE_thing" "by_name" {
  name = TYPE_thing.main.name
}

data "TYPE_identity" "me" {}

output "found_id" {
  value = data.TYPE_thing.by_name.id
}

output "protocol" {
  value = data.TYPE_identity.me.protocol
}
`, name, extra, nested)
}

func lifecycle(t *testing.T, r *rig) {
	// Create: one object, everything the configuration said in it.
	r.write(r.mainBody("one", "  size        = 2\n  description = \"first\"\n"))
	out := r.apply()
	if strings.Contains(out, "hunter2") {
		t.Errorf("the sensitive secret shows in the apply output:\n%s", out)
	}
	objs := r.objects()
	one := objs["one"]
	if len(objs) != 1 || one == nil {
		t.Fatalf("world after create: %v, want one object named one", names(objs))
	}
	if one.Size != 2 || deref(one.Description) != "first" || deref(one.Secret) != "hunter2" || one.Revision != 1 ||
		len(one.Rules) != 2 || len(one.Ports) != 2 || one.Network == nil || deref(one.Network.CIDR) != "10.0.0.0/16" || one.Tags["team"] != "core" {
		t.Errorf("world object after create: %+v", one)
	}
	if r.p.Protocol == 6 && (one.Endpoint == nil || one.Endpoint.Host != "db.internal" || one.Listeners["web"].Port != 443) {
		t.Errorf("nested attributes after create: endpoint %+v listeners %+v", one.Endpoint, one.Listeners)
	}
	st := r.state()[r.typ+".main"]
	if st.Attributes["id"] != one.ID || st.Attributes["arn"] != one.ARN || !strings.HasPrefix(one.ARN, "arn:bulwark:"+r.p.Type+":") {
		t.Errorf("state id %v arn %v, world id %s arn %s", st.Attributes["id"], st.Attributes["arn"], one.ID, one.ARN)
	}
	if st.Private == "" {
		t.Error("no private state recorded")
	}
	outs := r.outputs()
	if outs["found_id"] != one.ID || outs["protocol"] != float64(r.p.Protocol) {
		t.Errorf("data sources: found_id %v protocol %v, want %s and %d", outs["found_id"], outs["protocol"], one.ID, r.p.Protocol)
	}

	item := r.item()
	if deref(item.Value) != "one" {
		t.Errorf("item after create: %+v", item)
	}

	// Update in place: same object, next revision; the deprecated
	// argument warns.
	r.write(r.mainBody("one", "  size        = 3\n  description = \"second\"\n  legacy_note = \"old\"\n"))
	out = r.apply()
	if !strings.Contains(strings.ToLower(out), "deprecated") {
		t.Errorf("no deprecation warning for legacy_note:\n%s", out)
	}
	objs = r.objects()
	if u := objs["one"]; len(objs) != 1 || u == nil || u.ID != one.ID || u.Size != 3 || deref(u.Description) != "second" || u.Revision != 2 {
		t.Fatalf("world after update: %v, want object %s at size 3, revision 2", dump(objs), one.ID)
	}

	// Replace: a new name is a new object; the old one is gone.
	r.write(r.mainBody("two", "  size        = 3\n"))
	r.apply()
	objs = r.objects()
	two := objs["two"]
	if len(objs) != 1 || two == nil || two.ID == one.ID || two.Revision != 1 {
		t.Fatalf("world after replace: %v, want one new object named two", dump(objs))
	}
	if it := r.item(); it.ID != item.ID || deref(it.Value) != "two" {
		t.Errorf("item after an update in place: %+v, want %s with value two", it, item.ID)
	}
	if got := r.outputs()["found_id"]; got != two.ID {
		t.Errorf("data source after replace: %v, want %s", got, two.ID)
	}

	// Import: an object made outside Terraform comes under management,
	// and then updates in place (the framework provider needs the token
	// its import put in the private state for that).
	desc, tok := "made by hand", "t-by-hand"
	if err := r.world.Put(&world.Thing{Type: r.typ, ID: "hand0001", ARN: world.ARN(r.p.Type, r.typ, "hand0001"),
		Name: "outside", Size: 5, Description: &desc, Revision: 7, Token: tok}); err != nil {
		t.Fatal(err)
	}
	imported := "\nresource \"TYPE_thing\" \"imported\" {\n  name        = \"outside\"\n  size        = SIZE\n  description = \"made by hand\"\n}\n"
	r.write(r.mainBody("two", "  size        = 3\n") + strings.ReplaceAll(imported, "SIZE", "5"))
	r.ok("import", r.typ+".imported", "hand0001")
	r.noop()
	r.write(r.mainBody("two", "  size        = 3\n") + strings.ReplaceAll(imported, "SIZE", "6"))
	r.apply()
	if h := r.objects()["outside"]; h == nil || h.ID != "hand0001" || h.Size != 6 || h.Revision != 8 {
		t.Fatalf("imported object after update: %+v", h)
	}

	// A create that fails after making the object: Terraform keeps it,
	// tainted, and the next apply replaces it.
	base := r.mainBody("two", "  size        = 3\n") + strings.ReplaceAll(imported, "SIZE", "6")
	r.write(base + "\nresource \"TYPE_thing\" \"bad\" {\n  name              = \"bad\"\n  fail_after_create = true\n}\n")
	if out, code := r.run("apply", "-auto-approve"); code == 0 || !strings.Contains(out, "fail_after_create") {
		t.Fatalf("apply of a failing create: exit %d\n%s", code, out)
	}
	bad := r.objects()["bad"]
	if bad == nil {
		t.Fatal("the failed create left no object in the world")
	}
	if st := r.state()[r.typ+".bad"]; st.Status != "tainted" || st.Attributes["id"] != bad.ID {
		t.Fatalf("state of the failed create: status %q id %v, want tainted %s", st.Status, st.Attributes["id"], bad.ID)
	}
	r.write(base + "\nresource \"TYPE_thing\" \"bad\" {\n  name = \"bad\"\n}\n")
	r.apply()
	objs = r.objects()
	if b := objs["bad"]; len(objs) != 3 || b == nil || b.ID == bad.ID {
		t.Fatalf("world after replacing the tainted object: %v", dump(objs))
	}

	// Destroy: nothing left.
	r.ok("destroy", "-auto-approve")
	if objs := r.objects(); len(objs) != 0 {
		t.Fatalf("world after destroy: %v", dump(objs))
	}
	if _, err := r.world.GetItem(r.p.Type+"_item", item.ID); !errors.Is(err, world.ErrNotFound) {
		t.Fatalf("item after destroy: %v", err)
	}
}

// upgrade shows the state upgrade from schema version 0 (label, a string
// size) to 1 (description, a number): a plan without refresh, so without
// the provider's Read, finds nothing to change.
func upgrade(t *testing.T, r *rig) {
	label := "from v0"
	if err := r.world.Put(&world.Thing{Type: r.typ, ID: "old00001", ARN: world.ARN(r.p.Type, r.typ, "old00001"),
		Name: "old", Size: 4, Description: &label, Revision: 1}); err != nil {
		t.Fatal(err)
	}
	r.write("resource \"TYPE_thing\" \"old\" {\n  name        = \"old\"\n  size        = 4\n  description = \"from v0\"\n}\n")
	attrs := map[string]any{"id": "old00001", "name": "old", "label": "from v0", "size": "4", "secret": nil, "tags": nil}
	state := map[string]any{
		"version": 4, "terraform_version": "1.11.4", "serial": 1, "lineage": "0b1e6ed4-0000-4000-8000-000000000001",
		"outputs": map[string]any{},
		"resources": []any{map[string]any{
			"mode": "managed", "type": r.typ, "name": "old",
			"provider": fmt.Sprintf("provider[%q]", r.p.Source()),
			"instances": []any{map[string]any{
				"schema_version": 0, "attributes": attrs,
				// secret was sensitive in version 0 too: without the mark
				// Terraform would plan a change of sensitivity.
				"sensitive_attributes": []any{[]any{map[string]any{"type": "get_attr", "value": "secret"}}},
			}},
		}},
	}
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.work, "terraform.tfstate"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := r.run("plan", "-refresh=false", "-detailed-exitcode"); code != 0 {
		t.Fatalf("plan over a version 0 state: exit %d, want 0 (no changes)\n%s", code, out)
	}
	r.ok("apply", "-refresh-only", "-auto-approve")
	st := r.state()[r.typ+".old"]
	if st.SchemaVersion != 1 || st.Attributes["description"] != "from v0" || st.Attributes["size"] != float64(4) || st.Attributes["label"] != nil {
		t.Fatalf("state after the upgrade: version %d attributes %v", st.SchemaVersion, st.Attributes)
	}
	r.noop()
}

func names(m map[string]*world.Thing) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

func dump(m map[string]*world.Thing) string {
	data, _ := json.Marshal(m)
	return string(data)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
