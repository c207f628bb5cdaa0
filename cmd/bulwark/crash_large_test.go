package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/sdk/hugeheap"
)

// TestCrashLargeStackWithPreparedHeaps kills bulwark (SIGKILL, from
// outside) in the middle of an apply, and then of a teardown, of a stack
// large enough that bulwark and the mock's plugin prepare their heaps for
// it (sdk/hugeheap): the plugin is seen running with the host's hint
// before each kill. Preparing a heap changes nothing of what is journaled
// or recorded: resume finishes each operation, every resource is made
// once and recorded with the id the world has, and the teardown leaves
// nothing behind.
func TestCrashLargeStackWithPreparedHeaps(t *testing.T) {
	// Independent of every other test and mostly waiting on processes: it
	// runs beside the others (docs/ci.md).
	t.Parallel()
	spec := crashSpec("large120.yaml")
	e := newCrashEnv(t, "crashlarge")

	// killWhen runs bulwark ARGS and kills it once its plugin runs with
	// the hint and ready says enough is done.
	killWhen := func(ready func() bool, args ...string) {
		t.Helper()
		hinted := false
		e.runKilledWhen(func() bool {
			hinted = hinted || e.pluginHinted()
			return hinted && ready()
		}, func() string { return fmt.Sprintf("plugin hinted: %v", hinted) }, args...)
		e.assertNothingLeft()
	}

	killWhen(func() bool { return len(e.mockWorld()) >= 30 }, "apply", "--yes", spec, "--parallelism", "10")
	before := e.mockWorld()
	if len(before) >= 120 {
		t.Fatalf("the apply made all %d before the kill", len(before))
	}
	e.must(0, "resume", spec)
	if last := e.checkSettled(spec); last != "succeeded" {
		t.Errorf("the resumed apply ended %q, want succeeded\n%s", last, e.history())
	}
	st, world := e.readState(), e.mockWorld()
	e.checkAgreement(st, world)
	if len(st.Resources) != 120 || len(world) != 120 {
		t.Fatalf("after resume: %d recorded, %d in the world; want 120 each\n%s", len(st.Resources), len(world), e.history())
	}
	now := map[string]string{}
	for _, w := range world {
		now[w.Name] = w.ID
	}
	for _, w := range before {
		if now[w.Name] != w.ID {
			t.Errorf("%s existed at the kill as %s; after resume it is %q (made twice?)", w.Name, w.ID, now[w.Name])
		}
	}
	e.must(0, "plan", spec, "--detailed-exitcode")

	killWhen(func() bool { return len(e.mockWorld()) <= 90 }, "teardown", "--yes", spec, "--parallelism", "10")
	if left := len(e.mockWorld()); left == 0 {
		t.Fatalf("the teardown deleted everything before the kill")
	}
	e.must(0, "resume", spec)
	e.checkSettled(spec)
	if st, world := e.readState(), e.mockWorld(); len(st.Resources) != 0 || len(world) != 0 {
		t.Errorf("after the resumed teardown: %d recorded, %d in the world; want none\n%s", len(st.Resources), len(world), e.history())
	}
	e.assertNothingLeft()
}

// pluginHinted reports whether a live process carrying the env's marker
// (its plugin) has the host's hint to prepare its heap in its environment.
func (e *crashEnv) pluginHinted() bool {
	marker := []byte(crashMarkerVar + "=" + e.marker)
	hint := []byte(hugeheap.EnvHint + "=1")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		kvs := bytes.Split(env, []byte{0})
		hasMarker, hasHint := false, false
		for _, kv := range kvs {
			hasMarker = hasMarker || bytes.Equal(kv, marker)
			hasHint = hasHint || bytes.Equal(kv, hint)
		}
		if hasMarker && hasHint {
			return true
		}
	}
	return false
}
