package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// tfCrashN is how many resources the Terraform crash stack has: things and
// items, each item depending on a thing.
const tfCrashN = 16

// newTFCrashEnv is a crash env whose stack runs on fwtest, a provider built
// for Terraform (terraform-plugin-framework, protocol 6), found in the test
// mirror, every API call of it taking latency_ms so that a kill lands in the
// middle of one. It returns the env and its spec's path.
func newTFCrashEnv(t *testing.T, latencyMS int) (*crashEnv, string) {
	t.Helper()
	e := newCrashEnv(t, "crashtf")
	e.plugins = buildTerraformMirror(t)
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nstack: crashtf\nproviders:\n  fw:\n    source: bulwark/fwtest\n    version: \"~> 0.1\"\n    config: {world: %q, latency_ms: %d}\nresources:\n", filepath.Join(dir, "world"), latencyMS)
	for i := range tfCrashN / 2 {
		fmt.Fprintf(&b, "  - name: t%02d\n    type: fwtest_thing\n    config: {name: t%02d, size: %d, secret: s3cret-%02d}\n", i, i, i+1, i)
		fmt.Fprintf(&b, "  - name: i%02d\n    type: fwtest_item\n    config: {name: i%02d, value: \"${t%02d.id}\"}\n", i, i, i)
	}
	spec := filepath.Join(dir, "tf.yaml")
	if err := os.WriteFile(spec, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, spec
}

// tfWorld reads the fwtest world next to spec: every object, whole (the
// provider writes each by a rename).
func tfWorld(t crashT, spec string) []worldRes {
	t.Helper()
	root := filepath.Join(filepath.Dir(spec), "world")
	var out []worldRes
	for _, typ := range []string{"fwtest_thing", "fwtest_item"} {
		files, err := os.ReadDir(filepath.Join(root, typ))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") {
				continue // a temporary file a killed call left
			}
			b, err := os.ReadFile(filepath.Join(root, typ, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			var w worldRes
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatalf("world %s/%s: %v\n%s", typ, f.Name(), err, b)
			}
			out = append(out, w)
		}
	}
	return out
}

// tfCrashKills is how many moments TestCrashTerraformAtRandomMoments kills
// at by default: three, each a fresh stack of tfCrashN resources, the
// moment drawn anew each run from the base seed (six before: half the
// draws per run for half the time; BULWARK_CRASH_FULL=1 kills at six).
const tfCrashKills = 3

// unknownCreateLine is a resource an exit-12 resume names ("  NAME: a
// create of TYPE, ...").
var unknownCreateLine = regexp.MustCompile(`(?m)^  (\S+): a create (?:\(the new resource of a replace\) )?of (\S+), provider`)

// TestCrashTerraformAtRandomMoments kills (SIGKILL, from outside) an apply
// of 16 resources of a provider built for Terraform, every call of it
// taking 40 ms, at random moments. Such a provider takes no idempotency key,
// so after resume either everything settles, or resume exits 12 naming the
// creates whose outcome is unknown, and then the documented way out (look
// for each: import what exists, resume --not-created what does not, then
// resume) settles it. Either way the world agrees with the state, each
// resource is made once, and nothing that existed at the kill is lost or
// made again. It kills at tfCrashKills moments drawn from the logged base
// seed (each run draws others), at twice as many with BULWARK_CRASH_FULL=1.
func TestCrashTerraformAtRandomMoments(t *testing.T) {
	const latency = 40
	base := crashBaseSeed(t)
	ref, refSpec := newTFCrashEnv(t, latency)
	full := ref.must(0, "apply", "--yes", refSpec, "--parallelism", "4").took
	if st := ref.readState(); len(st.Resources) != tfCrashN {
		t.Fatalf("the uninterrupted apply recorded %d resources, want %d", len(st.Resources), tfCrashN)
	}
	ref.checkAgreement(ref.readState(), tfWorld(t, refSpec))
	t.Logf("uninterrupted apply: %v", full.Round(time.Millisecond))
	stopped, kills := 0, tfCrashKills
	if crashFull() {
		kills *= 2
	}
	for i := range kills {
		seed := base + int64(i)
		// The first fifth is mostly the provider's start and the plan,
		// and the reference run, the first, paid for the cold start of
		// the binaries: kill in between, where resources are being made.
		delay := full/5 + time.Duration(mrand.New(mrand.NewSource(seed)).Int63n(int64(full*3/5)))
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			e, spec := newTFCrashEnv(t, latency)
			r := e.runKilledAfter(delay, "apply", "--yes", spec, "--parallelism", "4")
			if !r.killed && r.code != 0 {
				t.Fatalf("apply (not killed): %s", r)
			}
			e.assertNothingLeft()
			atKill := tfWorld(t, spec)
			r1 := e.run("", "resume", spec)
			how := resumeLine(r1.stdout)
			switch {
			case r1.killed:
				t.Fatalf("resume: %s", r1)
			case r1.code == 12:
				stopped++
				how = e.settleUnknown(t, spec, r1)
			case r1.code != 0:
				t.Fatalf("killed after %v: resume: %s\n%s", delay, r1, e.history())
			}
			if strings.Contains(r1.stdout, "nothing to resume") && len(e.readState().Resources) == 0 {
				// Killed before the operation began: nothing may have
				// been made; the apply is run again.
				if len(atKill) != 0 {
					t.Fatalf("killed after %v, before the operation began: %d in the world\n%s", delay, len(atKill), e.history())
				}
				e.must(0, "apply", "--yes", spec, "--parallelism", "4")
			}
			if r2 := e.run("", "resume", spec); r2.code != 0 || !strings.Contains(r2.stdout, "nothing to resume") {
				t.Errorf("a second resume: want exit 0, nothing to resume: %s", r2)
			}
			e.checkSettled(spec)
			st, world := e.readState(), tfWorld(t, spec)
			e.checkAgreement(st, world)
			if len(st.Resources) != tfCrashN || len(world) != tfCrashN {
				t.Fatalf("killed after %v: %d recorded and %d in the world, want %d of each\n%s", delay, len(st.Resources), len(world), tfCrashN, e.history())
			}
			now := map[string]string{}
			for _, w := range world {
				now[w.Type+"/"+w.Name] = w.ID
			}
			for _, w := range atKill {
				if got := now[w.Type+"/"+w.Name]; got != w.ID {
					t.Errorf("%s %s existed at the kill as %s; now it is %q (lost, or made twice)", w.Type, w.Name, w.ID, got)
				}
			}
			e.must(0, "plan", spec, "--detailed-exitcode")
			e.assertNothingLeft()
			t.Logf("killed after %v (killed %v): %d in the world at the kill; %s", delay.Round(time.Millisecond), r.killed, len(atKill), how)
		})
	}
	t.Logf("%d of %d resumes stopped at an unknown create (exit 12) and were settled by a person's way out", stopped, kills)
}

// settleUnknown does what the message of an exit-12 resume (r) tells a
// person: look for each create it names; import what exists, say
// --not-created of what does not; then resume. It returns what it did.
func (e *crashEnv) settleUnknown(t *testing.T, spec string, r crashRes) string {
	t.Helper()
	for _, want := range []string{"whose provider takes no idempotency key", "bulwark import " + spec + " ", "bulwark resume " + spec + " --not-created "} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("resume exit 12 does not say %q: %s", want, r)
		}
	}
	if strings.Contains(r.stderr, "s3cret-") {
		t.Errorf("resume exit 12 shows a sensitive value: %s", r)
	}
	named := unknownCreateLine.FindAllStringSubmatch(r.stderr, -1)
	if len(named) == 0 {
		t.Fatalf("resume exit 12 names no resource: %s", r)
	}
	st := e.readState()
	recorded := map[string]bool{}
	for _, rr := range st.Resources {
		recorded[rr.ID] = true
	}
	var notCreated, did []string
	for _, m := range named {
		name, typ := m[1], m[2]
		// Looking for it: an object of its type and name that no state
		// records.
		var found []string
		for _, w := range tfWorld(t, spec) {
			if w.Type == typ && w.Name == name && !recorded[w.ID] {
				found = append(found, w.ID)
			}
		}
		switch len(found) {
		case 0:
			notCreated = append(notCreated, "--not-created", name)
			did = append(did, name+": none made")
		case 1:
			e.must(0, "import", spec, name, found[0])
			did = append(did, name+": imported "+found[0])
		default:
			t.Fatalf("%s %s exists %d times at the kill: %v\n%s", typ, name, len(found), found, e.history())
		}
	}
	sort.Strings(did)
	e.must(0, append([]string{"resume", spec}, notCreated...)...)
	return "resume exit 12, then " + strings.Join(did, ", ")
}
