//go:build unix

package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// throttledHold: b takes the mock's one write token (rate_limit 0.5: a
// burst of 1, the next in 2 s); then a's Create is held in the mock (in
// flight, before it asks for a token) and c's is answered throttled, which
// lowers the plugin's calls at once to 1: the gate is full while a is
// held. d waits for e, on a mock of its own (m2, no quota), whose Create
// is held too: once the test lets e go, d's Create reaches the full gate
// having sent nothing.
const throttledHold = `version: 1
stack: sig
default_provider: mock
providers:
  mock:
    config: {rate_limit: 0.5}
  m2: {source: mock}
resources:
  - {name: b, type: network}
  - {name: a, type: network, depends_on: [b]}
  - {name: c, type: network, depends_on: [b]}
  - {name: e, type: network, provider: m2}
  - {name: d, type: network, depends_on: [b, e]}
`

// heldAtTheGate is throttledHold's apply run until d's Create waits at the
// full gate: a's Create is held in the mock (its hold file still there),
// c's backs off, e is made, d's start is durable.
type heldAtTheGate struct {
	ctx   context.Context // the test's, two minutes at most
	e     *crashEnv
	spec  string
	cmd   *started
	h     *mockHolds
	calls string // the mocks' call log
}

func holdAtTheGate(t *testing.T) *heldAtTheGate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	g := &heldAtTheGate{ctx: ctx, e: newCrashEnv(t, "sig"), spec: writeSpec(t, throttledHold),
		h: holdCalls(t, "Create-a-1", "Create-e-1"), calls: filepath.Join(t.TempDir(), "calls")}
	g.cmd = startEnv(ctx, t, g.e, []string{g.h.env(), "BULWARK_LOG=info", "BULWARK_MOCK_BATCH=off", "BULWARK_MOCK_CALLS=" + g.calls},
		"apply", "--yes", g.spec, "--parallelism", "4")
	g.h.begun("Create-a-1")
	g.h.begun("Create-e-1")
	// c was answered throttled: the gate is lowered to 1, and a holds it.
	pollFile(t, g.cmd.stderr, "provider throttled the call; backing off", time.Minute)
	g.h.release("Create-e-1")
	waitJournal(t, g.e, func(r journalRec) bool {
		return r.Step == "d" && r.Phase == "execute" && r.Status == "started"
	}, "d's execute started")
	return g
}

// dNeverSent fails the test if the mocks' call log has a Create of d.
func (g *heldAtTheGate) dNeverSent(t *testing.T, after string) {
	t.Helper()
	for _, c := range callLog(t, g.calls) {
		if c.call == "Create" && c.name == "d" {
			t.Fatalf("d's Create was sent %s", after)
		}
	}
}

// A first interrupt does not send what a throttled provider's gate holds
// back: d's Create, waiting at the full gate when SIGINT comes, is never
// sent (the mock's call log has no Create of d), and d's durable start
// ends "not_sent". What was sent keeps its course: a's held Create
// finishes once let go, c's throttled Create is retried until made, and
// the interrupted apply rolls back what it made (exit 11). Without the
// stop at the gate, d's Create would go out once a's is answered, after
// the interrupt.
func TestInterruptDoesNotSendWhatTheGateHolds(t *testing.T) {
	t.Parallel() // its own folders and holds; mostly waits on the quota
	g := holdAtTheGate(t)
	e := g.e
	r := g.cmd.stopGracefully(g.ctx, t, syscall.SIGINT, func() { g.h.release("Create-a-1") })
	g.dNeverSent(t, "after the interrupt:\n"+r.String())
	var notSent bool
	for _, rec := range e.journalRecords() {
		if rec.Step == "d" && rec.Phase == "execute" && rec.Status != "started" {
			if rec.Status != "not_sent" {
				t.Errorf("d's execute ended %q, want not_sent", rec.Status)
			}
			notSent = true
		}
	}
	if !notSent {
		t.Errorf("d's execute started has no end in the journal")
	}
	if w := e.mockWorld(); len(w) != 0 {
		t.Errorf("the mock's world after the rollback: %+v", w)
	}
	e.must(0, "resume", g.spec)
	e.assertNothingLeft()
}

// kill -9 right after the interrupt ended d unsent, with a's Create still
// held in the mock and c's backing off: resume takes d as never started
// (it looks for nothing under its key), resolves a's and c's Creates by
// their keys, and finishes the apply. Every resource then exists once, in
// the world of its own mock, as the state records it (d too: made by
// resume, never by the killed run).
func TestKillAfterAnUnsentStepResumes(t *testing.T) {
	t.Parallel() // its own folders and holds; mostly waits on the quota
	g := holdAtTheGate(t)
	e := g.e
	if err := g.cmd.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, e, func(r journalRec) bool {
		return r.Step == "d" && r.Phase == "execute" && r.Status == "not_sent"
	}, "d's execute not_sent")
	_ = g.cmd.cmd.Process.Kill()
	_ = g.cmd.cmd.Wait()
	g.dNeverSent(t, "before the kill")
	e.assertNothingLeft()
	g.h.release("Create-a-1")

	r := e.must(0, "resume", g.spec)
	if r2 := e.must(0, "resume", g.spec); !strings.Contains(r2.stdout, "nothing to resume") {
		t.Errorf("a second resume: %s", r2)
	}
	world := append(e.mockWorld(), mockWorldAt(t, filepath.Join(e.stateDir, e.stack, "providers", "m2"))...)
	st := e.readState()
	e.checkAgreement(st, world)
	if len(st.Resources) != 5 || len(world) != 5 {
		t.Errorf("after resume: %d recorded, %d in the worlds; want 5 each\n%s", len(st.Resources), len(world), r)
	}
	e.must(0, "plan", g.spec, "--detailed-exitcode")
	e.assertNothingLeft()
}

// waitJournal waits, with a deadline, until the stack's journal holds a
// complete record that match accepts.
func waitJournal(t *testing.T, e *crashEnv, match func(journalRec) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, r := range e.journalRecords() {
			if match(r) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal never held %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

type loggedCall struct{ call, name string }

// callLog reads the mock's call log (BULWARK_MOCK_CALLS): a line for each
// call it answered but Configure, TIME<TAB>CALL<TAB>N<TAB>NAME.
func callLog(t *testing.T, path string) []loggedCall {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []loggedCall
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) >= 4 {
			out = append(out, loggedCall{call: fields[1], name: fields[3]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
