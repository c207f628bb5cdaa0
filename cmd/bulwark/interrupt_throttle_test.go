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
	e := newCrashEnv(t, "sig")
	spec := writeSpec(t, throttledHold)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := holdCalls(t, "Create-a-1", "Create-e-1")
	calls := filepath.Join(t.TempDir(), "calls")
	cmd := startEnv(ctx, t, e, []string{h.env(), "BULWARK_LOG=info", "BULWARK_MOCK_BATCH=off", "BULWARK_MOCK_CALLS=" + calls},
		"apply", "--yes", spec, "--parallelism", "4")
	h.begun("Create-a-1")
	h.begun("Create-e-1")
	// c was answered throttled: the gate is lowered to 1, and a holds it.
	pollFile(t, cmd.stderr, "provider throttled the call; backing off", time.Minute)
	h.release("Create-e-1")
	waitJournal(t, e, func(r journalRec) bool {
		return r.Step == "d" && r.Phase == "execute" && r.Status == "started"
	}, "d's execute started")
	r := cmd.stopGracefully(ctx, t, syscall.SIGINT, func() { h.release("Create-a-1") })
	for _, c := range callLog(t, calls) {
		if c.call == "Create" && c.name == "d" {
			t.Fatalf("d's Create was sent after the interrupt:\n%s", r)
		}
	}
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
	e.must(0, "resume", spec)
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
