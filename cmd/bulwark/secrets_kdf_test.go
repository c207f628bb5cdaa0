package main

import (
	"bytes"
	"fmt"
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
	// The binaries first, under the test's own HOME: a go build under the
	// empty one below would compile everything again, in a cache of its own.
	e := newCrashEnv(t, "crash")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv(secrets.EnvKey, "")
	t.Setenv(secrets.EnvPassphrase, pass)
	spec := crashSpec("v1.yaml")
	e.must(0, "apply", "--yes", spec, "--secrets-provider", "passphrase")

	// Edited with its checksum made anew: only the KDF is wrong.
	path := filepath.Join(e.stateDir, "crash", "state.json")
	edited, err := editFileState(path, func(st map[string]any) error {
		cfg, _ := st["secrets"].(map[string]any)
		kdf, _ := cfg["kdf"].(map[string]any)
		if kdf == nil {
			return fmt.Errorf("the state records no KDF: %v", st["secrets"])
		}
		kdf["memory_kib"] = uint32(1<<32 - 1)
		return nil
	}, true)
	if err != nil {
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
