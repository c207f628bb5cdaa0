package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/secrets"
)

// Someone who can write a passphrase stack's state but not open it edits
// the key derivation it records to ask for 4 TiB, and makes the state's
// checksum anew. Every command that opens the stack refuses it, exit 1,
// naming the bound, rather than trying to allocate it and dying out of
// memory; nothing is written, and no passphrase is printed.
func TestOversizedKDFInTheStateIsRefused(t *testing.T) {
	const pass = "correct-horse-battery-kdf"
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv(secrets.EnvKey, "")
	t.Setenv(secrets.EnvPassphrase, pass)
	e := newCrashEnv(t, "crash")
	spec := crashSpec("v1.yaml")
	e.must(0, "apply", "--yes", spec, "--secrets-provider", "passphrase")

	path := filepath.Join(e.stateDir, "crash", "state.json")
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// state.json as the file backend writes it: the state and the sha256
	// of its bytes (script_state_test.go's editProtection edits it alike).
	var env struct {
		Checksum string          `json:"checksum"`
		State    json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(stored, &env); err != nil || env.Checksum == "" {
		t.Fatalf("state.json is not a checksummed state (%v): %.200s", err, stored)
	}
	dec := json.NewDecoder(bytes.NewReader(env.State))
	dec.UseNumber()
	var st map[string]any
	if err := dec.Decode(&st); err != nil {
		t.Fatal(err)
	}
	cfg, _ := st["secrets"].(map[string]any)
	kdf, _ := cfg["kdf"].(map[string]any)
	if kdf == nil {
		t.Fatalf("the state records no KDF: %v", st["secrets"])
	}
	kdf["memory_kib"] = uint32(1<<32 - 1)
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	edited, err := json.Marshal(map[string]any{"checksum": "sha256:" + hex.EncodeToString(sum[:]), "state": json.RawMessage(body)})
	if err != nil {
		t.Fatal(err)
	}
	edited = append(edited, '\n')
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"plan", spec}, {"apply", "--yes", spec}, {"teardown", spec, "--yes"}} {
		r := e.run("", args...)
		if r.killed || r.code != 1 || !strings.Contains(r.stderr, "beyond the 64 passes and 4096 MiB") {
			t.Errorf("want exit 1 naming the bound: %s", r)
		}
		if strings.Contains(r.stdout+r.stderr, pass) {
			t.Errorf("the passphrase is printed: %s", r)
		}
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, edited) {
		t.Fatalf("the state was written after the refusals (%v)", err)
	}
}
