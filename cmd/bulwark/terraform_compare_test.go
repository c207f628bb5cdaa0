package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestTerraformSameResults applies one stack of the Terraform test providers
// (fwtest on terraform-plugin-framework, sdktest on terraform-plugin-sdk/v2)
// twice, from the same provider binaries: once with Terraform (HCL, a CLI
// configuration installing from a filesystem mirror, an offline init, apply
// -auto-approve, show -json) and once with bulwark (apply, state show
// --json), each against a world folder of its own. What the providers
// returned must be the same: every resource's attributes as each tool
// recorded them, and every object each world holds, apart from what is
// different by nature in two separate creates (inherentlyDifferent,
// worldInherentlyDifferent).
//
// It needs Terraform on PATH (1.11.4 on these machines) and skips, saying
// so, without it.
func TestTerraformSameResults(t *testing.T) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform is not on PATH: the comparison with Terraform needs it (1.11.4 runs offline from a filesystem mirror)")
	}
	mirror := buildTerraformMirror(t)
	bulwark := builtBulwark(t)
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Terraform.
	tfDir := filepath.Join(root, "terraform")
	tfWorld := filepath.Join(tfDir, "world")
	mustMkdir(t, tfDir)
	cliConfig := filepath.Join(root, "terraform.tfrc")
	writeFile(t, cliConfig, fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror))
	writeFile(t, filepath.Join(tfDir, "main.tf"), compareHCL(tfWorld))
	tfEnv := append(withoutTFEnv(os.Environ()),
		"TF_CLI_CONFIG_FILE="+cliConfig, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0",
		"BULWARK_TFTEST_WORLD="+tfWorld)
	runIn(ctx, t, tfDir, tfEnv, tf, "init", "-input=false", "-no-color")
	runIn(ctx, t, tfDir, tfEnv, tf, "apply", "-auto-approve", "-input=false", "-no-color")
	var shown struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address         string          `json:"address"`
					Mode            string          `json:"mode"`
					Values          map[string]any  `json:"values"`
					SensitiveValues json.RawMessage `json:"sensitive_values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	decodeJSON(t, "terraform show -json", runIn(ctx, t, tfDir, tfEnv, tf, "show", "-json", "-no-color"), &shown)
	tfAttrs := map[string]map[string]any{}
	tfSensitive := map[string][]string{}
	for _, r := range shown.Values.RootModule.Resources {
		if r.Mode != "managed" {
			continue
		}
		tfAttrs[r.Address] = r.Values
		var sv map[string]any
		if err := json.Unmarshal(r.SensitiveValues, &sv); err == nil {
			for k, v := range sv {
				if v == true {
					tfSensitive[r.Address] = append(tfSensitive[r.Address], k)
				}
			}
		}
	}

	// bulwark.
	bwDir := filepath.Join(root, "bulwark")
	bwWorld := filepath.Join(bwDir, "world")
	mustMkdir(t, bwDir)
	spec := filepath.Join(bwDir, "stack.yaml")
	writeFile(t, spec, compareSpec(bwWorld))
	bwEnv := append(os.Environ(), "BULWARK_PLUGIN_DIR="+mirror, "BULWARK_TFTEST_WORLD="+bwWorld)
	runIn(ctx, t, bwDir, bwEnv, bulwark, "apply", "--yes", spec)
	bwAttrs := map[string]map[string]any{}
	bwSensitive := map[string][]string{}
	for _, r := range compareResources {
		var shown struct {
			Resource struct {
				Type       string         `json:"type"`
				Attributes map[string]any `json:"attributes"`
				Sensitive  []string       `json:"sensitive"`
			} `json:"resource"`
		}
		decodeJSON(t, "bulwark state show "+r.name, runIn(ctx, t, bwDir, bwEnv, bulwark, "state", "show", spec, r.name, "--json"), &shown)
		addr := r.typ + "." + r.name
		bwAttrs[addr] = shown.Resource.Attributes
		bwSensitive[addr] = shown.Resource.Sensitive
	}

	// What each tool recorded.
	if len(tfAttrs) != len(compareResources) || len(bwAttrs) != len(compareResources) {
		t.Fatalf("terraform recorded %d resources, bulwark %d; want %d", len(tfAttrs), len(bwAttrs), len(compareResources))
	}
	for _, r := range compareResources {
		addr := r.typ + "." + r.name
		tfa, bwa := tfAttrs[addr], bwAttrs[addr]
		if tfa == nil || bwa == nil {
			t.Errorf("%s: terraform recorded %v, bulwark %v", addr, tfa != nil, bwa != nil)
			continue
		}
		// Sensitive attributes: the same ones, masked by bulwark's output
		// (their values are compared in the worlds below).
		slices.Sort(tfSensitive[addr])
		slices.Sort(bwSensitive[addr])
		if !slices.Equal(tfSensitive[addr], bwSensitive[addr]) {
			t.Errorf("%s: sensitive attributes: terraform %v, bulwark %v", addr, tfSensitive[addr], bwSensitive[addr])
		}
		for _, k := range bwSensitive[addr] {
			if bwa[k] != "(sensitive)" {
				t.Errorf("%s: bulwark's state show printed the sensitive %s as %v", addr, k, bwa[k])
			}
			delete(tfa, k)
			delete(bwa, k)
		}
		for _, k := range inherentlyDifferent[r.typ] {
			for tool, a := range map[string]map[string]any{"terraform": tfa, "bulwark": bwa} {
				if s, _ := a[k].(string); s == "" {
					t.Errorf("%s: %s recorded no %s", addr, tool, k)
				}
				delete(a, k)
			}
		}
		normaliseSets(tfa, setAttributes)
		normaliseSets(bwa, setAttributes)
		if !reflect.DeepEqual(tfa, bwa) {
			t.Errorf("%s: the attributes differ (ids, arns and sensitive values left out)\nterraform: %s\nbulwark:   %s", addr, mustJSON(tfa), mustJSON(bwa))
		}
	}

	// What each world holds.
	tfObjs, bwObjs := worldObjects(t, tfWorld), worldObjects(t, bwWorld)
	if len(tfObjs) != len(compareResources) {
		t.Errorf("terraform's world holds %d objects, want %d: %v", len(tfObjs), len(compareResources), keys(tfObjs))
	}
	for k, tfo := range tfObjs {
		bwo, ok := bwObjs[k]
		if !ok {
			t.Errorf("world object %s: terraform's world has it, bulwark's does not", k)
			continue
		}
		if !reflect.DeepEqual(tfo, bwo) {
			t.Errorf("world object %s differs (%s left out)\nterraform: %s\nbulwark:   %s", k, strings.Join(worldInherentlyDifferent, ", "), mustJSON(tfo), mustJSON(bwo))
		}
	}
	for k := range bwObjs {
		if _, ok := tfObjs[k]; !ok {
			t.Errorf("world object %s: bulwark's world has it, terraform's does not", k)
		}
	}
}

// inherentlyDifferent names, per resource type, the attributes two separate
// creates never share: the provider makes up a new id (and the arn derived
// from it) for each object. Each tool must still record them.
var inherentlyDifferent = map[string][]string{
	"fwtest_thing":  {"id", "arn"},
	"sdktest_thing": {"id", "arn"},
	"fwtest_item":   {"id"},
	"sdktest_item":  {"id"},
}

// worldInherentlyDifferent are the fields of a world object two separate
// creates never share: the id and arn, the token the framework provider
// rotates on every write (kept in its private state), and the wall-clock
// stamps.
var worldInherentlyDifferent = []string{"id", "arn", "token", "created", "updated"}

// setAttributes are the set-nested blocks of the things: a set has no order,
// so each tool may list its elements in its own.
var setAttributes = []string{"port", "ports"}

// compareResources are the stack's resources, the same in both tools.
var compareResources = []struct{ typ, name string }{
	{"fwtest_thing", "fwa"},
	{"fwtest_thing", "fwb"},
	{"fwtest_item", "fwi"},
	{"sdktest_thing", "sda"},
	{"sdktest_thing", "sdb"},
	{"sdktest_item", "sdi"},
}

// compareHCL is the stack as Terraform's configuration. fwtest's world is
// in its provider block, sdktest's comes from $BULWARK_TFTEST_WORLD.
func compareHCL(world string) string {
	return fmt.Sprintf(`terraform {
  required_providers {
    fwtest  = { source = "bulwark/fwtest", version = "~> 0.1" }
    sdktest = { source = "bulwark/sdktest", version = "~> 0.1" }
  }
}

provider "fwtest" {
  world = %q
}

provider "sdktest" {}

resource "fwtest_thing" "fwa" {
  name        = "alpha"
  size        = 3
  description = "first"
  secret      = "hunter2"
  tags        = { team = "core", env = "test" }
  endpoint    = { host = "example.org", port = 443 }
  listeners   = { http = { port = 80, protocol = "tcp" }, https = { port = 443 } }
  network {
    cidr   = "10.0.0.0/16"
    public = true
  }
  rule {
    name     = "r1"
    priority = 1
  }
  rule {
    name = "r2"
  }
  port {
    number   = 22
    protocol = "tcp"
  }
  port {
    number = 80
  }
}

resource "fwtest_thing" "fwb" {
  name = "bare"
}

resource "fwtest_item" "fwi" {
  name  = "item-one"
  value = "v1"
}

resource "sdktest_thing" "sda" {
  name        = "beta"
  size        = 7
  description = "second"
  secret      = "hunter3"
  tags        = { team = "edge" }
  network {
    cidr   = "10.1.0.0/16"
    public = false
  }
  rule {
    name     = "r1"
    priority = 5
  }
  rule {
    name = "r2"
  }
  port {
    number   = 443
    protocol = "tcp"
  }
  port {
    number = 8080
  }
}

resource "sdktest_thing" "sdb" {
  name = "plain"
}

resource "sdktest_item" "sdi" {
  name = "item-two"
}
`, world)
}

// compareSpec is the same stack as a bulwark spec.
func compareSpec(world string) string {
	return fmt.Sprintf(`version: 1
stack: compare
providers:
  fwtest: {source: bulwark/fwtest, version: "~> 0.1", config: {world: %q}}
  sdktest: {source: bulwark/sdktest, version: "~> 0.1"}
resources:
  - name: fwa
    type: fwtest_thing
    provider: fwtest
    config:
      name: alpha
      size: 3
      description: first
      secret: hunter2
      tags: {team: core, env: test}
      endpoint: {host: example.org, port: 443}
      listeners: {http: {port: 80, protocol: tcp}, https: {port: 443}}
      network: {cidr: 10.0.0.0/16, public: true}
      rule: [{name: r1, priority: 1}, {name: r2}]
      port: [{number: 22, protocol: tcp}, {number: 80}]
  - name: fwb
    type: fwtest_thing
    provider: fwtest
    config: {name: bare}
  - name: fwi
    type: fwtest_item
    provider: fwtest
    config: {name: item-one, value: v1}
  - name: sda
    type: sdktest_thing
    provider: sdktest
    config:
      name: beta
      size: 7
      description: second
      secret: hunter3
      tags: {team: edge}
      network: [{cidr: 10.1.0.0/16, public: false}]
      rule: [{name: r1, priority: 5}, {name: r2}]
      port: [{number: 443, protocol: tcp}, {number: 8080}]
  - name: sdb
    type: sdktest_thing
    provider: sdktest
    config: {name: plain}
  - name: sdi
    type: sdktest_item
    provider: sdktest
    config: {name: item-two}
`, world)
}

// worldObjects reads every object of a world folder (WORLD/TYPE/ID.json),
// keyed by TYPE/NAME (names are unique in the stack), without the fields of
// worldInherentlyDifferent and with set-valued fields sorted.
func worldObjects(t *testing.T, world string) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(world, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var o map[string]any
		decodeJSON(t, f, b, &o)
		if id, _ := o["id"].(string); id+".json" != filepath.Base(f) {
			t.Errorf("%s holds the object of id %q", f, id)
		}
		for _, k := range worldInherentlyDifferent {
			delete(o, k)
		}
		normaliseSets(o, setAttributes)
		key := filepath.Base(filepath.Dir(f)) + "/" + fmt.Sprint(o["name"])
		if _, dup := out[key]; dup {
			t.Errorf("%s: two objects named %v", world, o["name"])
		}
		out[key] = o
	}
	return out
}

// normaliseSets sorts, in place, the elements of each of attrs that holds a
// list, by their JSON.
func normaliseSets(m map[string]any, attrs []string) {
	for _, k := range attrs {
		l, ok := m[k].([]any)
		if !ok {
			continue
		}
		sort.SliceStable(l, func(i, j int) bool { return mustJSON(l[i]) < mustJSON(l[j]) })
	}
}

// withoutTFEnv is env without Terraform's own variables (TF_LOG,
// TF_PLUGIN_CACHE_DIR, TF_CLI_CONFIG_FILE, …) that the test's user may have
// set.
func withoutTFEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TF_") {
			out = append(out, kv)
		}
	}
	return out
}

// runIn runs name with args in dir and returns its stdout; a failure fails
// the test with the command's output.
func runIn(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout.Bytes(), lastLines(stderr.String(), 40))
	}
	return stdout.Bytes()
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func decodeJSON(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
