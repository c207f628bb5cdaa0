package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTerminalProgressAndNoColor runs the real binary under a pseudo
// terminal (util-linux script(1)): apply shows what is running and for how
// long, in colour; NO_COLOR turns the colours off but keeps the progress.
func TestTerminalProgressAndNoColor(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed")
	}
	plugins := buildPlugins(t)
	bin := filepath.Join(t.TempDir(), "bulwark")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build bulwark: %v\n%s", err, out)
	}
	dir := t.TempDir()
	specPath := filepath.Join(dir, "tty.yaml")
	os.WriteFile(specPath, []byte(`version: 1
stack: tty
providers:
  mock:
    config: {latency_ms: 300}
resources:
  - name: slow
    type: generic
`), 0o600)
	run := func(stateDir string, env ...string) string {
		cmdline := strings.Join([]string{bin, "--state-dir", stateDir, "--plugin-dir", plugins, "--events", filepath.Join(dir, "ev.jsonl"), "apply", specPath}, " ")
		c := exec.Command(scriptBin, "-qec", cmdline, "/dev/null")
		c.Env = append(os.Environ(), env...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmdline, err, out)
		}
		return string(out)
	}
	colored := run(filepath.Join(dir, "s1"), "NO_COLOR=")
	if !strings.Contains(colored, "running: slow") {
		t.Errorf("no live progress line on a terminal:\n%q", colored)
	}
	if !strings.Contains(colored, "\x1b[32m+\x1b[0m slow") {
		t.Errorf("no colour on a terminal:\n%q", colored)
	}
	plain := run(filepath.Join(dir, "s2"), "NO_COLOR=1")
	if !strings.Contains(plain, "running: slow") {
		t.Errorf("NO_COLOR removed the progress line:\n%q", plain)
	}
	if strings.Contains(plain, "\x1b[32m") || strings.Contains(plain, "\x1b[2m") {
		t.Errorf("colours despite NO_COLOR:\n%q", plain)
	}
}
