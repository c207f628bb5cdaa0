//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun is one bulwark run on a pseudo terminal (its stdin, stdout and
// stderr): what it printed and its exit code.
type ptyRun struct {
	out  string
	code int
}

// onTerminal runs the real bulwark binary with args on a new pseudo
// terminal. When answer is not empty, it waits (with a deadline) for the
// question and types answer and Enter.
func onTerminal(t *testing.T, env []string, answer string, args ...string) ptyRun {
	t.Helper()
	cmd := exec.Command(builtBulwark(t), args...)
	cmd.Env = append(os.Environ(), env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return // EIO once the child has gone
			}
		}
	}()
	if answer != "" {
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			asked := strings.Contains(buf.String(), "Enter a value: ")
			mu.Unlock()
			if asked {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("bulwark %s never asked:\n%s", strings.Join(args, " "), buf.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := io.WriteString(f, answer+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	<-copied
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return ptyRun{out: strings.ReplaceAll(buf.String(), "\r\n", "\n"), code: code}
}

// TestConfirmOnATerminal: on a terminal apply and rollback show the plan and
// ask; anything but "yes" changes nothing and exits 1; "yes", --yes and
// --auto-approve go on; a saved plan is applied without a question; without
// a terminal nothing asks (the scripts run so).
func TestConfirmOnATerminal(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := write("v1.yaml", "version: 1\nstack: ask\nproviders:\n  mock: {config: {world: "+filepath.Join(dir, "world")+"}}\nresources:\n  - name: data\n    type: generic\n    protection: durable\n    config: {size: 1}\n")
	v2 := write("v2.yaml", strings.Replace(mustRead(t, v1), "size: 1", "size: 2", 1)+"  - name: extra\n    type: generic\n    protection: durable\n")
	base := []string{"--plugin-dir", buildPlugins(t), "--state-dir", filepath.Join(dir, "state"), "--events", filepath.Join(dir, "ev.jsonl")}
	env := []string{"NO_COLOR=1"}
	status := func() string {
		out, err := exec.Command(builtBulwark(t), append(base, "status", v1)...).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "0 resource(s)") {
			t.Fatalf("status: %v\n%s", err, out)
		}
		return string(out)
	}
	args := func(a ...string) []string { return append(append([]string{}, base...), a...) }

	for _, tt := range []struct {
		name, answer string
		args         []string
		code         int
		want         []string
		notWant      []string
		resources    string // what status says after
	}{
		{"no", "no", args("apply", v1), 1,
			[]string{"+   create     data (generic, durable)", "Only 'yes' will be accepted", "apply cancelled: nothing was changed"},
			[]string{"Apply complete"}, "0 resource(s)"},
		{"y is not yes", "y", args("apply", v1), 1, []string{"apply cancelled"}, nil, "0 resource(s)"},
		{"Ctrl-C at the question", "\x03", args("apply", v1), 1, []string{"apply cancelled: nothing was changed"}, []string{"exiting"}, "0 resource(s)"},
		{"yes", "yes", args("apply", v1), 0, []string{"+   create     data", "Enter a value: yes", "Apply complete: 1 changed"}, nil, "1 resource(s)"},
		{"--yes", "", args("apply", v2, "--yes"), 0, []string{"~   update     data", "+   create     extra", "Update complete: 2 changed"},
			[]string{"Only 'yes'"}, "2 resource(s)"},
		// rollback to revision 1 changes data back and keeps extra
		// (durable: the ladder's rollback column retains it): asked, and no
		// changes nothing.
		{"rollback no", "nope", args("rollback", v2), 1, []string{"=   retain     extra (generic, durable)", "Only 'yes'", "rollback cancelled: nothing was changed"},
			nil, "2 resource(s)"},
		{"rollback --auto-approve", "", args("rollback", v2, "--auto-approve"), 0, []string{"Rollback complete", "Kept, retained: extra"}, []string{"Only 'yes'"}, "2 resource(s)"},
		// stdout carries JSON alone: on a terminal apply --json cannot ask.
		{"--json", "", args("apply", v2, "--json"), 1, []string{"apply --json on a terminal needs --yes"}, []string{"Only 'yes'"}, "2 resource(s)"},
		// Nothing to change (extra is retained, kept): nothing to ask.
		{"no-op", "", args("apply", v1), 0, []string{"complete: 0 changed, 1 already in place"}, []string{"Only 'yes'"}, "2 resource(s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := onTerminal(t, env, tt.answer, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", r.code, tt.code, r.out)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.out, w) {
					t.Errorf("no %q in:\n%s", w, r.out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(r.out, w) {
					t.Errorf("%q in:\n%s", w, r.out)
				}
			}
			if s := status(); !strings.Contains(s, tt.resources) {
				t.Errorf("status after: want %s:\n%s", tt.resources, s)
			}
		})
	}

	// A saved plan was reviewed when it was made: applied without asking.
	planFile := filepath.Join(dir, "v2.plan")
	if out, err := exec.Command(builtBulwark(t), args("plan", v2, "--out", planFile)...).CombinedOutput(); err != nil {
		t.Fatalf("plan --out: %v\n%s", err, out)
	}
	r := onTerminal(t, env, "", args("apply", planFile)...)
	if r.code != 0 || strings.Contains(r.out, "Only 'yes'") || !strings.Contains(r.out, "Update complete") {
		t.Fatalf("apply of a saved plan on a terminal: exit %d\n%s", r.code, r.out)
	}

	// Without a terminal: no question; the plan printed, then refused
	// without --yes, nothing changed.
	history := func() string {
		h, err := exec.Command(builtBulwark(t), args("history", v2)...).CombinedOutput()
		if err != nil {
			t.Fatalf("history: %v\n%s", err, h)
		}
		return string(h)
	}
	hist := history()
	out, err := exec.Command(builtBulwark(t), args("rollback", v2)...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Contains(string(out), "Only 'yes'") || !strings.Contains(string(out), "=   retain     extra") ||
		!strings.Contains(string(out), "error asking for approval: no terminal to ask on; pass --yes (or --auto-approve) to roll back without asking") {
		t.Fatalf("rollback without a terminal, without --yes: %v\n%s", err, out)
	}
	if h := history(); h != hist {
		t.Fatalf("a refused rollback changed the history:\n%s\nwas:\n%s", h, hist)
	}
	// With --yes: no question, the plan printed first.
	out, err = exec.Command(builtBulwark(t), args("rollback", v2, "--yes")...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "Only 'yes'") || !strings.Contains(string(out), "=   retain     extra") {
		t.Fatalf("rollback without a terminal, with --yes: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ptyProc is a bulwark running on a pseudo terminal.
type ptyProc struct {
	cmd    *exec.Cmd
	f      *os.File
	mu     sync.Mutex
	buf    bytes.Buffer
	copied chan struct{}
}

func startOnTerminal(t *testing.T, env []string, args ...string) *ptyProc {
	t.Helper()
	p := &ptyProc{cmd: exec.Command(builtBulwark(t), args...), copied: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	f, err := pty.StartWithSize(p.cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	p.f = f
	go func() {
		defer close(p.copied)
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			p.mu.Lock()
			p.buf.Write(b[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { p.cmd.Process.Kill(); f.Close() })
	return p
}

func (p *ptyProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.ReplaceAll(p.buf.String(), "\r\n", "\n")
}

// waitFor polls the output for s, with a deadline.
func (p *ptyProc) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(p.output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("never printed %q:\n%s", s, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *ptyProc) wait(t *testing.T) int {
	t.Helper()
	err := p.cmd.Wait()
	<-p.copied
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestCtrlCOnATerminal types Ctrl-C at a terminal: the whole foreground
// process group gets SIGINT (bulwark and its plugins, unlike a kill of
// bulwark alone). Once: the run is reported as interrupted and rolled back,
// saying what the rollback did, never as a failed step. Twice, while the
// rollback waits on a provider call: it says to run resume, and resume
// finishes. The calls that must be in flight (a's Create at the first
// Ctrl-C, its compensating Delete at the second) are held by the mock
// until the test lets them go, so no machine is too slow or too fast for
// either.
func TestCtrlCOnATerminal(t *testing.T) {
	for _, twice := range []bool{false, true} {
		t.Run(map[bool]string{false: "once", true: "twice"}[twice], func(t *testing.T) {
			dir := t.TempDir()
			spec := filepath.Join(dir, "sig.yaml")
			if err := os.WriteFile(spec, []byte(chain), 0o600); err != nil {
				t.Fatal(err)
			}
			events := filepath.Join(dir, "ev.jsonl")
			base := []string{"--plugin-dir", buildPlugins(t), "--state-dir", filepath.Join(dir, "state"), "--events", events}
			held := []string{"Create-a-1"}
			if twice {
				held = append(held, "Delete-a-1")
			}
			h := holdCalls(t, held...)
			p := startOnTerminal(t, []string{"NO_COLOR=1", h.env()}, append(base, "apply", spec, "--yes", "--parallelism", "1")...)
			// a's Create is in flight, and stays so until released.
			h.begun("Create-a-1")
			p.f.Write([]byte{3}) // Ctrl-C
			p.waitFor(t, gracefulStop)
			h.release("Create-a-1")
			if twice {
				// The rollback's Delete of a is in flight, and stays so.
				h.begun("Delete-a-1")
				p.f.Write([]byte{3})
			}
			code := p.wait(t)
			out := p.output()
			if strings.Contains(out, "FAILED") || strings.Contains(out, "failed verify") {
				t.Errorf("an interrupt reported as a failure:\n%s", out)
			}
			world := filepath.Join(dir, "state", "sig", "providers", "mock")
			if !twice {
				if code != 11 || !strings.Contains(out, "Apply was interrupted and was rolled back (undone: a).") || !strings.Contains(out, "Not started: b, c.") {
					t.Fatalf("exit %d:\n%s", code, out)
				}
				if w := mockWorldAt(t, world); len(w) != 0 {
					t.Errorf("world after the rollback: %+v", w)
				}
				return
			}
			if code != 13 || !strings.Contains(out, "bulwark resume") || !strings.Contains(out, "its rollback was stopped before it finished (not yet undone: a)") ||
				!strings.Contains(out, "It is safe to stop here") {
				t.Fatalf("exit %d, want 13 saying to resume:\n%s", code, out)
			}
			// Still held, the Delete cannot have done its work: bulwark
			// ended without it.
			if w := mockWorldAt(t, world); len(w) != 1 || w[0].Name != "a" {
				t.Errorf("world while the Delete of a is held: %+v, want a alone", w)
			}
			h.release("Delete-a-1")
			r, err := exec.Command(builtBulwark(t), append(base, "resume", spec)...).CombinedOutput()
			// Issue 23 item 7: resume says the apply was interrupted
			// (not that it failed) and what its exit code 11 means.
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 11 || !strings.Contains(string(r), "was interrupted earlier; resume finished its rollback (undone: a)") ||
				!strings.Contains(string(r), "it was rolled back (exit 11)") || strings.Contains(string(r), "failed earlier") {
				t.Fatalf("resume: %v, want exit 11 saying the interrupted apply's rollback finished\n%s", err, r)
			}
			if w := mockWorldAt(t, world); len(w) != 0 {
				t.Errorf("world after resume: %+v", w)
			}
		})
	}
}

// TestPlanProgressOnATerminal: plan shows a live line while it reads, on a
// terminal only, in colour unless NO_COLOR; --json and a stdout that is not
// a terminal get nothing of it.
func TestPlanProgressOnATerminal(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "slow.yaml")
	os.WriteFile(spec, []byte(strings.ReplaceAll(slowChain, "LATENCY", "400")), 0o600)
	base := []string{"--plugin-dir", buildPlugins(t), "--state-dir", filepath.Join(dir, "state"), "plan", spec}
	for _, tt := range []struct {
		name    string
		env     []string
		extra   []string
		want    []string
		notWant []string
	}{
		{"colour", []string{"NO_COLOR="}, nil, []string{"\x1b[36m  … reading 0/3", "\x1b[32m+   create    \x1b[0m a (network, ephemeral)", "Plan: 3 to create"}, nil},
		{"NO_COLOR", []string{"NO_COLOR=1"}, nil, []string{"  … reading 0/3", "Plan: 3 to create"}, []string{"\x1b[36m", "\x1b[2m"}},
		{"--json", []string{"NO_COLOR="}, []string{"--json"}, []string{`"format_version"`}, []string{"reading", "\x1b["}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startOnTerminal(t, tt.env, append(base, tt.extra...)...)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d:\n%q", code, p.output())
			}
			out := p.output()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%q", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("%q in:\n%q", w, out)
				}
			}
		})
	}
	// Not a terminal: the plan alone.
	out, err := exec.Command(builtBulwark(t), base...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "reading") || strings.Contains(string(out), "\x1b[") {
		t.Fatalf("plan without a terminal: %v\n%q", err, out)
	}
}

// TestApprovalWithoutTerminal runs the real binary with standard input
// from /dev/null, as CI does: a run that would change anything is refused
// without --yes, and changes nothing (state, journal and the provider's
// world byte for byte); with --yes it goes on; a run that would change
// nothing needs no approval.
func TestApprovalWithoutTerminal(t *testing.T) {
	dir := t.TempDir()
	world := filepath.Join(dir, "world")
	v1 := filepath.Join(dir, "v1.yaml")
	v2 := filepath.Join(dir, "v2.yaml")
	spec := "version: 1\nstack: ci\nproviders:\n  mock: {config: {world: " + world + "}}\nresources:\n  - name: data\n    type: generic\n    protection: durable\n    config: {size: SIZE}\n"
	for p, size := range map[string]string{v1: "1", v2: "2"} {
		if err := os.WriteFile(p, []byte(strings.Replace(spec, "SIZE", size, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	base := []string{"--plugin-dir", buildPlugins(t), "--state-dir", state}
	run := func(a ...string) (string, string, int) {
		t.Helper()
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer devnull.Close()
		cmd := exec.Command(builtBulwark(t), append(append([]string{}, base...), a...)...)
		cmd.Stdin = devnull
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	// snapshot is every file under the state folder and the mock's world,
	// by path, with its bytes.
	snapshot := func() map[string]string {
		t.Helper()
		files := map[string]string{}
		for _, root := range []string{state, world} {
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				files[p] = string(b)
				return nil
			})
		}
		return files
	}
	unchanged := func(what string, before map[string]string) {
		t.Helper()
		after := snapshot()
		for p, b := range before {
			if a, ok := after[p]; !ok || a != b {
				t.Errorf("%s changed or removed %s", what, p)
			}
		}
		for p := range after {
			if _, ok := before[p]; !ok {
				t.Errorf("%s wrote %s", what, p)
			}
		}
	}
	const refusal = "error asking for approval: no terminal to ask on; pass --yes (or --auto-approve) to apply without asking"

	// A first apply, refused: nothing is created, not even the world.
	before := snapshot()
	out, errOut, code := run("apply", v1)
	if code != 1 || !strings.Contains(errOut, refusal) || !strings.Contains(out, "+   create     data") || strings.Contains(out, "Enter a value") {
		t.Fatalf("apply without a terminal, without --yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	unchanged("a refused first apply", before)

	// --yes (and --auto-approve) go on.
	if out, errOut, code := run("apply", v1, "--yes"); code != 0 || !strings.Contains(out, "complete: 1 changed") {
		t.Fatalf("apply --yes: exit %d\n%s\n%s", code, out, errOut)
	}

	// A run that would change nothing needs no approval.
	before = snapshot()
	if out, errOut, code := run("apply", v1); code != 0 || !strings.Contains(out, "0 changed") {
		t.Fatalf("no-op apply without --yes: exit %d\n%s\n%s", code, out, errOut)
	}

	// An update, refused: state, journal and world unchanged byte for byte.
	before = snapshot()
	out, errOut, code = run("apply", v2)
	if code != 1 || !strings.Contains(errOut, refusal) || !strings.Contains(out, "~   update     data") {
		t.Fatalf("update without --yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	unchanged("a refused update", before)

	// --json without --yes: refused the same way, a final failure line on
	// stdout, nothing changed.
	out, errOut, code = run("apply", v2, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || !strings.Contains(errOut, refusal) || !strings.Contains(lines[len(lines)-1], `"kind":"failure"`) || !strings.Contains(lines[len(lines)-1], "error asking for approval") {
		t.Fatalf("apply --json without --yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	unchanged("a refused apply --json", before)

	if out, errOut, code := run("apply", v2, "--auto-approve"); code != 0 || !strings.Contains(out, "complete: 1 changed") {
		t.Fatalf("apply --auto-approve: exit %d\n%s\n%s", code, out, errOut)
	}
}
