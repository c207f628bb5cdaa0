//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pollFile waits, with a deadline, until the file holds substr.
func pollFile(t *testing.T, path, substr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(substr)) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("%s never held %q within %v:\n%s", path, substr, within, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const slowChain = `version: 1
stack: sig
providers:
  mock:
    config: {latency_ms: LATENCY}
resources:
  - name: a
    type: network
  - name: b
    type: compute
    depends_on: [a]
  - name: c
    type: load_balancer
    depends_on: [b]
`

// aStarted is the journal's "execute started" of slowChain's a: its Create
// goes once the record is durable.
const aStarted = `"status":"started","step":"a","resource":"a","action":"create","phase":"execute"`

// SIGTERM lets the running provider call finish (no "context canceled"),
// starts no new step, reports the run as interrupted and rolls back what
// ran.
func TestSIGTERMFinishesRunningCallsThenRollsBack(t *testing.T) {
	e := newCrashEnv(t, "sig")
	spec := writeSpec(t, strings.ReplaceAll(slowChain, "LATENCY", "400"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"apply", "--yes", spec, "--parallelism", "1"}
	cmd := e.command(ctx, "", args...)
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// a's Create is running (400ms, and as long again for its read-back,
	// which Verify compares).
	pollFile(t, filepath.Join(e.stateDir, "sig", "journal.jsonl"), aStarted, time.Minute)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := e.wait(ctx, cmd, args, t0)
	if r.code != 11 || !strings.Contains(r.stdout, "Apply was interrupted and was rolled back") {
		t.Fatalf("want exit 11, interrupted and rolled back: %s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "context canceled") {
		t.Fatalf("a running call was cancelled: %s", r)
	}
	ev, _ := os.ReadFile(e.events)
	for _, want := range []string{
		`"resource":"a","type":"network","action":"verify","status":"ok"`,
		`"resource":"a","type":"network","action":"delete","status":"ok"`,
	} {
		if !bytes.Contains(ev, []byte(want)) {
			t.Errorf("events lack %s:\n%s", want, ev)
		}
	}
	if bytes.Contains(ev, []byte(`"resource":"b"`)) {
		t.Errorf("b started after the SIGTERM:\n%s", ev)
	}
	if w := e.mockWorld(); len(w) != 0 {
		t.Errorf("world after the rollback: %+v", w)
	}
	e.must(0, "resume", spec)
	e.assertNothingLeft()
}

// A second interrupt while a compensation waits on a slow provider call
// stops waiting at once, says to run resume, and resume finishes the
// rollback.
func TestSecondInterruptStopsWaitingForCompensation(t *testing.T) {
	e := newCrashEnv(t, "sig")
	const latency = 3 * time.Second
	spec := writeSpec(t, strings.ReplaceAll(slowChain, "LATENCY", "3000"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"apply", "--yes", spec, "--parallelism", "1"}
	cmd := e.command(ctx, "", args...)
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(e.stateDir, "sig", "journal.jsonl")
	pollFile(t, journal, `"status":"started","step":"a"`, time.Minute)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The rollback's Delete of a is in flight (3s).
	pollFile(t, journal, `"phase":"compensate"`, time.Minute)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	second := time.Now()
	r := e.wait(ctx, cmd, args, t0)
	if took := time.Since(second); took > latency*2/3 {
		t.Errorf("bulwark took %v after the second interrupt: it waited for the call", took)
	}
	if r.code != 13 || !strings.Contains(r.stderr, "bulwark resume") {
		t.Fatalf("want exit 13 saying to run resume: %s", r)
	}
	e.assertNothingLeft()
	r1 := e.run("", "resume", spec)
	if r1.code != 11 {
		t.Fatalf("resume: want 11: %s", r1)
	}
	if w := e.mockWorld(); len(w) != 0 {
		t.Errorf("world after resume: %+v", w)
	}
}

// The interrupt ladder, in-process: a mutating command's first interrupt
// only stops new steps, the second cancels, the third exits; a read-only
// command's first cancels and the second exits.
func TestInterruptLadder(t *testing.T) {
	for _, graceful := range []bool{true, false} {
		t.Run(map[bool]string{true: "mutating", false: "read-only"}[graceful], func(t *testing.T) {
			var stderr bytes.Buffer
			c := &cli{stderr: &stderr, stop: make(chan struct{})}
			if graceful {
				c.mutating("stack.yaml")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sigs, done := make(chan os.Signal), make(chan struct{})
			exited := make(chan int, 1)
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				c.interrupts(sigs, done, cancel, func(code int) { exited <- code })
			}()
			sigs <- syscall.SIGTERM
			if graceful {
				select {
				case <-c.stop:
				case <-time.After(10 * time.Second):
					t.Fatal("the first interrupt did not stop new steps")
				}
				if ctx.Err() != nil {
					t.Fatal("the first interrupt of a mutating command cancelled the running calls")
				}
				sigs <- os.Interrupt
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("not cancelled")
			}
			sigs <- os.Interrupt
			select {
			case code := <-exited:
				if code == 0 {
					t.Fatal("exit 0 after interrupts")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the last interrupt did not exit")
			}
			<-ended
			if graceful && !strings.Contains(stderr.String(), "bulwark resume stack.yaml") {
				t.Errorf("stderr does not say to run resume: %s", stderr.String())
			}
		})
	}
}

// children lists the child processes of pid.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// A plugin killed while an update verifies its spec and plugins (its own
// first step) is reported as a failure before anything changed, not as a
// failure an on_failure policy kept back; killed during a resource's
// Verify, what was made is rolled back as the policy says.
func TestPluginKilledDuringVerify(t *testing.T) {
	for _, tt := range []struct {
		name, wait, want string
		code             int
	}{
		{"update_verify", `"status":"started","step":"update:verify"`, "Update failed at update:verify before changing anything: nothing to roll back", 1},
		{"resource_verify", `"resource":"b","type":"compute","action":"update","status":"ok"`, "Update failed at b and was rolled back", 11},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newCrashEnv(t, "sig")
			e.must(0, "apply", "--yes", writeSpec(t, strings.ReplaceAll(slowChain, "LATENCY", "0")))
			spec := writeSpec(t, strings.ReplaceAll(strings.ReplaceAll(slowChain, "LATENCY", "800"), "depends_on: [a]", "depends_on: [a]\n    config: {size: 3}"))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := []string{"apply", "--yes", spec}
			cmd := e.command(ctx, "", args...)
			out := filepath.Join(t.TempDir(), "stdout")
			f, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdout, cmd.Stderr = f, new(bytes.Buffer)
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The update's verify step has started (its ValidateResource
			// calls take 800ms each), or b's Verify has.
			watch := e.events
			if strings.Contains(tt.wait, "update:verify") {
				watch = filepath.Join(e.stateDir, "sig", "journal.jsonl")
			}
			pollFile(t, watch, tt.wait, time.Minute)
			kids := children(cmd.Process.Pid)
			if len(kids) != 1 {
				t.Fatalf("plugin processes %v, want one", kids)
			}
			if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			stdout, _ := os.ReadFile(out)
			r := crashRes{args: args, code: code, stdout: string(stdout), stderr: cmd.Stderr.(*bytes.Buffer).String(), took: time.Since(t0)}
			if r.code != tt.code || !strings.Contains(r.stdout, tt.want) || strings.Contains(r.stdout, "on_failure policy") {
				t.Fatalf("want exit %d and %q: %s", tt.code, tt.want, r)
			}
			e.assertNothingLeft()
		})
	}
}

// A plugin killed with SIGKILL in the middle of a Create's read-back, after
// the resource exists in its world and before the Create answered: the
// Create's outcome is unknown to bulwark, as for a plugin killed in the
// middle of any Create. The apply's rollback finds what was made by its
// idempotency key in a fresh plugin and deletes it; nothing is left behind,
// and nothing is recorded that does not exist.
func TestPluginKilledDuringReadBack(t *testing.T) {
	e := newCrashEnv(t, "sig")
	spec := writeSpec(t, strings.ReplaceAll(slowChain, "LATENCY", "800"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"apply", "--yes", spec, "--parallelism", "1"}
	cmd := e.command(ctx, "", args...)
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// a is in the mock's world (its Create slept 800ms, then made it): the
	// read-back, 800ms more, is running.
	pollFile(t, filepath.Join(e.stateDir, "sig", "providers", "mock", "world.log"), `"name":"a"`, time.Minute)
	kids := children(cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("plugin processes %v, want one", kids)
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := e.wait(ctx, cmd, args, t0)
	if r.code != 11 || !strings.Contains(r.stdout, "rolled back") {
		t.Fatalf("want exit 11, the create of a rolled back: %s", r)
	}
	ev, _ := os.ReadFile(e.events)
	if bytes.Contains(ev, []byte(`"resource":"b"`)) {
		t.Errorf("b started after a's Create died:\n%s", ev)
	}
	e.assertNothingLeft()
}
