package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdMockWorldSetKey is `mock-world-set-key DIR NAME KEY`: behind every
// bulwark's back, as another tool or stack would, it gives the resources
// named NAME in the mock world folder DIR another idempotency key. It
// rewrites world.json whole (a new file renamed over it, which a running
// mock reloads at its next call); the world's log must hold no change of
// NAME (a finished run folds it).
func cmdMockWorldSetKey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mock-world-set-key DIR NAME KEY")
	}
	path := filepath.Join(ts.MkAbs(args[0]), "world.json")
	b, err := os.ReadFile(path)
	ts.Check(err)
	var world map[string]any
	ts.Check(json.Unmarshal(b, &world))
	rs, _ := world["resources"].([]any)
	n := 0
	for _, r := range rs {
		if m, ok := r.(map[string]any); ok && m["name"] == args[1] {
			m["idempotency_key"] = args[2]
			n++
		}
	}
	if n == 0 {
		ts.Fatalf("%s holds no resource named %s", path, args[1])
	}
	out, err := json.MarshalIndent(world, "", "  ")
	ts.Check(err)
	tmp := path + ".edit"
	ts.Check(os.WriteFile(tmp, out, 0o600))
	ts.Check(os.Rename(tmp, path))
}
