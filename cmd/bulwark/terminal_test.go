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
	bin := builtBulwark(t)
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
		cmdline := strings.Join([]string{bin, "--state-dir", stateDir, "--plugin-dir", plugins, "--events", filepath.Join(dir, "ev.jsonl"), "apply", specPath, "--yes"}, " ")
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

// TestTeardownAsksOnATerminal: on a terminal, teardown asks first; anything
// but "yes" cancels it and deletes nothing, "yes" goes on.
func TestTeardownAsksOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed")
	}
	plugins := buildPlugins(t)
	bin := builtBulwark(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "ask.yaml")
	os.WriteFile(specPath, []byte(`version: 1
stack: ask
providers:
  mock: {}
resources:
  - name: a
    type: generic
`), 0o600)
	base := []string{bin, "--state-dir", filepath.Join(dir, "state"), "--plugin-dir", plugins, "--events", filepath.Join(dir, "ev.jsonl")}
	if out, err := exec.Command(base[0], append(base[1:], "apply", "--yes", specPath)...).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	teardown := func(answer string) (string, error) {
		c := exec.Command(scriptBin, "-qec", strings.Join(append(base, "teardown", specPath), " "), "/dev/null")
		c.Stdin = strings.NewReader(answer + "\n")
		out, err := c.CombinedOutput()
		return string(out), err
	}
	out, err := teardown("no")
	if err == nil || !strings.Contains(out, "Type yes to go on") || !strings.Contains(out, "teardown cancelled: nothing was deleted") {
		t.Fatalf("answer no: err %v\n%s", err, out)
	}
	status := func() string {
		out, err := exec.Command(base[0], append(base[1:], "status", specPath)...).CombinedOutput()
		if err != nil {
			t.Fatalf("status: %v\n%s", err, out)
		}
		return string(out)
	}
	if !strings.Contains(status(), "1 resource(s)") {
		t.Fatalf("a cancelled teardown deleted something:\n%s", status())
	}
	if out, err := teardown("yes"); err != nil || !strings.Contains(out, "Teardown complete") {
		t.Fatalf("answer yes: err %v\n%s", err, out)
	}
	if !strings.Contains(status(), "0 resource(s)") {
		t.Fatalf("teardown confirmed with yes left resources:\n%s", status())
	}
}

// TestTerminalEventsNeverInterleave: on a terminal the lifecycle events do
// not go to stderr, so no JSON line breaks up the live progress line; a
// stderr that is not a terminal (a file, a pipe) gets them as before, and
// so does --events FILE.
func TestTerminalEventsNeverInterleave(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed")
	}
	plugins := buildPlugins(t)
	bin := builtBulwark(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "ev.yaml")
	os.WriteFile(specPath, []byte(`version: 1
stack: ev
providers:
  mock:
    config: {latency_ms: 300}
resources:
  - name: slow
    type: generic
`), 0o600)
	onTerminal := func(shellCmd string) string {
		c := exec.Command(scriptBin, "-qec", shellCmd, "/dev/null")
		c.Env = append(os.Environ(), "NO_COLOR=1")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", shellCmd, err, out)
		}
		return string(out)
	}
	base := bin + " --plugin-dir " + plugins + " --state-dir "
	hasEvents := func(s string) bool { return strings.Contains(s, `"action":"create"`) }

	// stdout and stderr on the terminal: progress, and no event.
	out := onTerminal(base + filepath.Join(dir, "s1") + " apply " + specPath + " --yes")
	if !strings.Contains(out, "running: slow") || !strings.Contains(out, "Apply complete") {
		t.Errorf("no progress on a terminal:\n%q", out)
	}
	if strings.Contains(out, `{"ts"`) {
		t.Errorf("events on a terminal:\n%q", out)
	}

	// stderr to a file, stdout on the terminal: the events go to the file,
	// none to the screen.
	logFile := filepath.Join(dir, "stderr.log")
	out = onTerminal(base + filepath.Join(dir, "s2") + " apply " + specPath + " --yes 2>" + logFile)
	if strings.Contains(out, `{"ts"`) || !strings.Contains(out, "running: slow") {
		t.Errorf("stderr redirected: the terminal shows\n%q", out)
	}
	if b, _ := os.ReadFile(logFile); !hasEvents(string(b)) {
		t.Errorf("stderr redirected to a file got no events:\n%s", b)
	}

	// --events FILE on a terminal: the file has them.
	evFile := filepath.Join(dir, "ev.jsonl")
	out = onTerminal(bin + " --plugin-dir " + plugins + " --events " + evFile + " --state-dir " + filepath.Join(dir, "s3") + " apply " + specPath + " --yes")
	if b, _ := os.ReadFile(evFile); strings.Contains(out, `{"ts"`) || !hasEvents(string(b)) {
		t.Errorf("--events on a terminal: screen %q, file %s", out, b)
	}

	// No terminal at all: stderr gets them, as the contract says.
	c := exec.Command(bin, "--plugin-dir", plugins, "--state-dir", filepath.Join(dir, "s4"), "apply", "--yes", specPath)
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Run(); err != nil || !hasEvents(stderr.String()) {
		t.Errorf("not on a terminal: err %v, stderr %q", err, stderr.String())
	}
}
