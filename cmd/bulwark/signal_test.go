//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// chain is slowChain with no latency: the tests below keep a call in flight
// with a hold (mockHolds), not by hoping a sleep has not ended.
var chain = strings.ReplaceAll(slowChain, "LATENCY", "0")

// started is a bulwark command running with its output in files, so the
// test can poll what it prints while it runs.
type started struct {
	cmd            *exec.Cmd
	args           []string
	stdout, stderr string
	t0             time.Time
}

// start starts bulwark ARGS on e with the holds h, stdout and stderr in
// files.
func start(ctx context.Context, t *testing.T, e *crashEnv, h *mockHolds, args ...string) *started {
	t.Helper()
	return startEnv(ctx, t, e, []string{h.env()}, args...)
}

// startEnv starts bulwark ARGS on e with env added to its environment,
// stdout and stderr in files.
func startEnv(ctx context.Context, t *testing.T, e *crashEnv, env []string, args ...string) *started {
	t.Helper()
	cmd := e.command(ctx, "", args...)
	cmd.Env = append(cmd.Env, env...)
	dir := t.TempDir()
	s := &started{cmd: cmd, args: args, stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr")}
	for _, out := range []struct {
		path string
		w    *io.Writer
	}{{s.stdout, &cmd.Stdout}, {s.stderr, &cmd.Stderr}} {
		f, err := os.Create(out.path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		*out.w = f
	}
	s.t0 = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// wait waits for the command to end (it must exit, not be killed or hang).
func (s *started) wait(ctx context.Context, t *testing.T) crashRes {
	t.Helper()
	err := s.cmd.Wait()
	stdout, _ := os.ReadFile(s.stdout)
	stderr, _ := os.ReadFile(s.stderr)
	r := crashRes{args: s.args, stdout: string(stdout), stderr: string(stderr), took: time.Since(s.t0)}
	if ctx.Err() != nil {
		t.Fatalf("hung (killed after the test's timeout): %s", r)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%v: %s", err, r)
	}
	return r
}

// gracefulStop is what bulwark prints once a first interrupt has stopped
// new steps (cmd/bulwark/interrupts.go).
const gracefulStop = "no new step starts"

// stopGracefully sends the running apply sig, waits until bulwark says no
// new step starts, calls then (to let go of what the test holds), and
// waits for the apply to end interrupted and rolled back (exit 11).
func (s *started) stopGracefully(ctx context.Context, t *testing.T, sig os.Signal, then func()) crashRes {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	pollFile(t, s.stderr, gracefulStop, time.Minute)
	then()
	r := s.wait(ctx, t)
	if r.code != 11 || !strings.Contains(r.stdout, "Apply was interrupted and was rolled back") {
		t.Fatalf("want exit 11, interrupted and rolled back: %s", r)
	}
	return r
}

// SIGTERM lets the running provider call finish (no "context canceled"),
// starts no new step, reports the run as interrupted and rolls back what
// ran. a's Create is held in flight until bulwark has taken the SIGTERM,
// so b could only start if bulwark ignored it.
func TestSIGTERMFinishesRunningCallsThenRollsBack(t *testing.T) {
	e := newCrashEnv(t, "sig")
	spec := writeSpec(t, chain)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := holdCalls(t, "Create-a-1")
	cmd := start(ctx, t, e, h, "apply", "--yes", spec, "--parallelism", "1")
	h.begun("Create-a-1")
	r := cmd.stopGracefully(ctx, t, syscall.SIGTERM, func() { h.release("Create-a-1") })
	if strings.Contains(r.stdout+r.stderr, "context canceled") {
		t.Fatalf("a running call was cancelled: %s", r)
	}
	ev, _ := os.ReadFile(e.events)
	for _, want := range []string{
		`"resource":"a","type":"network","action":"create","status":"ok"`,
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

// A second interrupt while a compensation waits on a provider call stops
// waiting at once, says to run resume, and resume finishes the rollback.
// The compensating Delete is held open for as long as the test likes:
// bulwark ending while it is still held, with a still in the world, proves
// it did not wait for the call, whatever the machine's load.
func TestSecondInterruptStopsWaitingForCompensation(t *testing.T) {
	e := newCrashEnv(t, "sig")
	spec := writeSpec(t, chain)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := holdCalls(t, "Create-a-1", "Delete-a-1")
	cmd := start(ctx, t, e, h, "apply", "--yes", spec, "--parallelism", "1")
	h.begun("Create-a-1")
	if err := cmd.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	pollFile(t, cmd.stderr, gracefulStop, time.Minute)
	h.release("Create-a-1")
	// The rollback's Delete of a is in flight, and stays so.
	h.begun("Delete-a-1")
	if err := cmd.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	second := time.Now()
	r := cmd.wait(ctx, t)
	if r.code != 13 || !strings.Contains(r.stderr, "bulwark resume") {
		t.Fatalf("want exit 13 saying to run resume: %s", r)
	}
	// Not released, the Delete cannot have done its work: bulwark ended
	// without it, and not by giving up on a wind-down that waited for it.
	if w := e.mockWorld(); len(w) != 1 || w[0].Name != "a" {
		t.Errorf("world while the Delete of a is held: %+v, want a alone", w)
	}
	if strings.Contains(r.stderr, "still winding down") {
		t.Errorf("bulwark waited for the held call until its grace ran out: %s", r)
	}
	took := time.Since(second)
	if took >= interruptGrace {
		t.Errorf("bulwark took %v after the second interrupt: it waited for the call", took)
	}
	t.Logf("bulwark ended %v after the second interrupt, the Delete still held", took.Round(time.Millisecond))
	e.assertNothingLeft()
	h.release("Delete-a-1")
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

// killPlugin sends SIGKILL to the one plugin process of the running cmd.
func killPlugin(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	kids := children(cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("plugin processes %v, want one", kids)
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// A plugin killed while an update verifies its spec and plugins (its own
// first step) is reported as a failure before anything changed, not as a
// failure an on_failure policy kept back; killed during a resource's
// Verify, what was made is rolled back as the policy says. The call the
// kill must land in is held open until the plugin dies: update:verify's
// ValidateResource of a (the plan validated a first), b's Verify's Read
// (the plan read b first).
func TestPluginKilledDuringVerify(t *testing.T) {
	for _, tt := range []struct {
		name, hold, want string
		code             int
	}{
		{"update_verify", "ValidateResource-a-2", "Update failed at update:verify before changing anything: nothing to roll back", 1},
		{"resource_verify", "Read-b-2", "Update failed at b and was rolled back", 11},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newCrashEnv(t, "sig")
			e.must(0, "apply", "--yes", writeSpec(t, chain))
			spec := writeSpec(t, strings.ReplaceAll(chain, "depends_on: [a]", "depends_on: [a]\n    config: {size: 3}"))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			before, _ := os.ReadFile(e.events)
			h := holdCalls(t, tt.hold)
			cmd := start(ctx, t, e, h, "apply", "--yes", spec)
			h.begun(tt.hold)
			killPlugin(t, cmd.cmd)
			r := cmd.wait(ctx, t)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.want) || strings.Contains(r.stdout, "on_failure policy") {
				t.Fatalf("want exit %d and %q: %s", tt.code, tt.want, r)
			}
			if tt.name == "update_verify" {
				if ev, _ := os.ReadFile(e.events); bytes.Contains(ev[len(before):], []byte(`"resource":"b"`)) {
					t.Errorf("b was touched by an update that failed at its verify step:\n%s", ev)
				}
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
// and nothing is recorded that does not exist. The read-back (a's first
// Read: at --parallelism 1 the plan read the three in one ReadMany) is held
// open until the plugin dies; what started early on a meanwhile (b, c) is
// undone too.
func TestPluginKilledDuringReadBack(t *testing.T) {
	e := newCrashEnv(t, "sig")
	spec := writeSpec(t, chain)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := holdCalls(t, "Read-a-1")
	cmd := start(ctx, t, e, h, "apply", "--yes", spec, "--parallelism", "1")
	h.begun("Read-a-1")
	if w := e.mockWorld(); len(w) == 0 || w[0].Name != "a" {
		t.Fatalf("world during a's read-back: %+v, want a first (made, not yet answered)", w)
	}
	killPlugin(t, cmd.cmd)
	r := cmd.wait(ctx, t)
	if r.code != 11 || !strings.Contains(r.stdout, "rolled back") {
		t.Fatalf("want exit 11, the create of a rolled back: %s", r)
	}
	// b and c, ephemeral creates, may have started once a's Create
	// returned, while its Verify read was held (an early start): each that
	// was made is undone with it.
	ev, _ := os.ReadFile(e.events)
	for _, name := range []string{"a", "b", "c"} {
		made := regexp.MustCompile(`"resource":"` + name + `","type":"[a-z_]+","action":"create","status":"ok"`).Match(ev)
		undone := regexp.MustCompile(`"resource":"` + name + `","type":"[a-z_]+","action":"delete","status":"ok"[^\n]*"undo":true`).Match(ev)
		if made && !undone {
			t.Errorf("%s was created and not undone:\n%s", name, ev)
		}
	}
	if w := e.mockWorld(); len(w) != 0 {
		t.Errorf("world after the rollback: %+v", w)
	}
	e.assertNothingLeft()
}
