package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSystemdUnitStopsOnIntervention keeps the shipped unit honest: it runs
// bulwark apply and never restarts after exit 12.
func TestSystemdUnitStopsOnIntervention(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples", "systemd")
	b, err := os.ReadFile(filepath.Join(dir, "bulwark-apply.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			unit[k] = v
		}
	}
	if got := unit["RestartPreventExitStatus"]; got != "12" {
		t.Errorf("RestartPreventExitStatus = %q, want 12", got)
	}
	if exec := unit["ExecStart"]; !strings.Contains(exec, "bulwark") || !strings.Contains(exec, " apply ") {
		t.Errorf("ExecStart = %q does not run bulwark apply", exec)
	}
	// Under ProtectSystem=strict no config folder is writable: the key
	// must be given, not created.
	if exec := unit["ExecStart"]; !strings.Contains(exec, "--secrets-key-file ${CREDENTIALS_DIRECTORY}/") || !strings.HasPrefix(unit["LoadCredential"], "secrets.key:") {
		t.Errorf("the unit does not hand bulwark its secrets key (LoadCredential %q, ExecStart %q)", unit["LoadCredential"], exec)
	}
	if strings.Contains(unit["SuccessExitStatus"], "12") {
		t.Error("exit 12 must not count as success")
	}
	if _, err := os.Stat(filepath.Join(dir, "bulwark-apply.timer")); err != nil {
		t.Error(err)
	}
}
