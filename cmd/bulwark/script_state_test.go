package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"

	"github.com/rogpeppe/go-internal/testscript"
)

// state-protection FILE RESOURCE LEVEL rewrites the protection a state file
// records for RESOURCE (as a hand edit or an old bulwark would), keeping the
// file's checksum valid, so only the level is wrong.
func cmdStateProtection(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: state-protection FILE RESOURCE LEVEL")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	var env struct {
		State json.RawMessage `json:"state"`
	}
	ts.Check(json.Unmarshal(b, &env))
	dec := json.NewDecoder(bytes.NewReader(env.State))
	dec.UseNumber()
	var st map[string]any
	ts.Check(dec.Decode(&st))
	rs, _ := st["resources"].(map[string]any)
	r, ok := rs[args[1]].(map[string]any)
	if !ok {
		ts.Fatalf("%s records no resource %q", args[0], args[1])
	}
	r["protection"] = args[2]
	body, err := json.Marshal(st)
	ts.Check(err)
	sum := sha256.Sum256(body)
	out, err := json.Marshal(map[string]any{"checksum": "sha256:" + hex.EncodeToString(sum[:]), "state": json.RawMessage(body)})
	ts.Check(err)
	ts.Check(os.WriteFile(path, append(out, '\n'), 0o600))
}
