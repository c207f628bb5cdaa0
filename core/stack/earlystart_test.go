package stack_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// verifyHold is a fake world's hooks for the tests of an early start: it
// knows which Creates have been called, and holds the first Read of dep
// made after dep's Create (its Verify's) until every name in waitFor has
// had its Create called (or a deadline passes, which fails the test);
// that Read then finds dep drifted when drift is set.
type verifyHold struct {
	t       *testing.T
	e       *env
	dep     string
	waitFor []string
	drift   bool

	mu       sync.Mutex
	created  map[string]bool
	verified bool // dep's Verify read returned
	// createdBeforeVerify are the Creates called before dep's Verify
	// read returned.
	createdBeforeVerify []string
	arrived             chan struct{} // closed when every waitFor Create was called
}

func holdVerify(t *testing.T, e *env, dep string, drift bool, waitFor ...string) *verifyHold {
	h := &verifyHold{t: t, e: e, dep: dep, waitFor: waitFor, drift: drift, created: map[string]bool{}, arrived: make(chan struct{})}
	if len(waitFor) == 0 {
		close(h.arrived)
	}
	e.w.OnCreate(func(name string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.created[name] = true
		if !h.verified {
			h.createdBeforeVerify = append(h.createdBeforeVerify, name)
		}
		if len(h.waitFor) > 0 && !slices.ContainsFunc(h.waitFor, func(n string) bool { return !h.created[n] }) {
			h.waitFor = nil
			close(h.arrived)
		}
	})
	e.w.OnRead(func(name string) {
		h.mu.Lock()
		verify := name == h.dep && h.created[h.dep] && !h.verified
		h.mu.Unlock()
		if !verify {
			return
		}
		select {
		case <-h.arrived:
		case <-time.After(10 * time.Second):
			t.Errorf("%s's Verify read waited 10s for the Creates of %v: they wait for it", h.dep, waitFor)
		}
		if h.drift {
			e.w.SetAttr(h.dep, "size", 99) // Verify finds it differs from the spec
		}
		h.mu.Lock()
		h.verified = true
		h.mu.Unlock()
	})
	return h
}

// An ephemeral resource created on a dependency starts its Create while
// the dependency's Verify still reads: that read is held until the
// dependent's Create has been called.
func TestEphemeralDependentStartsBeforeItsDependencyIsVerified(t *testing.T) {
	e := newEnv(t)
	holdVerify(t, e, "net", false, "app")
	sp := mkSpec(t, res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", deps: []string{"net"}})
	e.mustApply(t, sp)
	if got := e.w.Names(); !slices.Equal(got, []string{"app", "net"}) {
		t.Errorf("world %v, want app and net", got)
	}
	if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
		t.Error(err)
	}
}

// A durable or protected resource is never created on a dependency that is
// not verified yet (a rollback would keep it), nor is one whose own policy
// is not compensate (its failure would not undo it), nor one depending on a
// resource whose failure rolls nothing back.
func TestOnlyAnEphemeralCompensatedDependentStartsEarly(t *testing.T) {
	for _, tc := range []struct {
		name string
		dep  res
		app  res
		// hold: eph, an ephemeral sibling, starts early, so net's Verify
		// read is held until eph's Create is called: app has then been
		// past its Check as long. Where net's failure rolls nothing back,
		// eph waits too, and nothing is held (the engine's tests hold that
		// case exactly).
		hold bool
	}{
		{"durable", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", prot: "durable"}, true},
		{"protected", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", prot: "protected"}, true},
		{"on_failure continue", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", onFailure: "continue"}, true},
		{"on_failure abort", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", onFailure: "abort"}, true},
		{"intervention", res{name: "net", typ: "network", size: 2}, res{name: "app", typ: "generic", intervention: true}, true},
		{"dependency continues", res{name: "net", typ: "network", size: 2, onFailure: "continue"}, res{name: "app", typ: "generic"}, false},
		{"dependency aborts", res{name: "net", typ: "network", size: 2, onFailure: "abort"}, res{name: "app", typ: "generic"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var h *verifyHold
			if tc.hold {
				h = holdVerify(t, e, "net", false, "eph")
			} else {
				h = holdVerify(t, e, "net", false)
			}
			app := tc.app
			app.deps = []string{"net"}
			e.mustApply(t, mkSpec(t, tc.dep, app, res{name: "eph", typ: "generic", deps: []string{"net"}}))
			h.mu.Lock()
			defer h.mu.Unlock()
			if slices.Contains(h.createdBeforeVerify, "app") || (!tc.hold && slices.Contains(h.createdBeforeVerify, "eph")) {
				t.Errorf("created before net was verified: %v", h.createdBeforeVerify)
			}
			if !h.created["app"] {
				t.Error("app was never created")
			}
		})
	}
}

// A dependency whose Verify fails rolls the run back: the ephemeral
// dependent that started early is deleted with it, and the durable and
// protected dependents, which waited for the Verify, were never created.
// Nothing is left in the world or the state.
func TestFailedVerifyLeavesNothingOfAnEarlyDependent(t *testing.T) {
	e := newEnv(t)
	h := holdVerify(t, e, "net", true, "eph")
	sp := mkSpec(t, res{name: "net", typ: "network", size: 2},
		res{name: "eph", typ: "generic", deps: []string{"net"}},
		res{name: "dur", typ: "generic", prot: "durable", deps: []string{"net"}},
		res{name: "prot", typ: "generic", prot: "protected", deps: []string{"net"}})
	r, err := e.apply(sp)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != engine.Compensated || stack.ExitCode(r, nil) != stack.ExitCompensated {
		t.Fatalf("outcome %v, exit %d (%v): want the apply rolled back", r.Outcome, stack.ExitCode(r, nil), r.Err)
	}
	if r.Err == nil || !strings.Contains(r.Err.Error(), "differ from the spec after create") {
		t.Errorf("error %v, want net's failed Verify", r.Err)
	}
	for _, c := range e.w.Creates() {
		if c.Name == "dur" || c.Name == "prot" {
			t.Errorf("%s (%s) was created on an unverified dependency", c.Name, c.Protection)
		}
	}
	h.mu.Lock()
	if !h.created["eph"] {
		t.Error("eph was never created: the test shows nothing")
	}
	h.mu.Unlock()
	if got := e.w.Names(); len(got) != 0 {
		t.Errorf("left in the world: %v", got)
	}
	if st := e.state(t, "s"); len(st.Resources) != 0 {
		t.Errorf("left in the state: %v", st.Names())
	}
	// eph is deleted before net, what it depends on.
	var deleted []string
	for _, d := range e.w.Deletes() {
		deleted = append(deleted, d.Name)
	}
	if ie, in := slices.Index(deleted, "eph"), slices.Index(deleted, "net"); ie < 0 || in < 0 || ie > in {
		t.Errorf("deletes %v: want eph, then net", deleted)
	}
}

// crashAt is the losing file backend that loses its lock (as a crash
// would leave it: nothing more written) right after the commit carrying a
// record at makes true.
type crashAt struct {
	*losingBackend
	at func(journal.Record) bool
}

func (b crashAt) Lock(ctx context.Context, h storage.Holder) (storage.Writer, error) {
	w, err := b.losingBackend.Lock(ctx, h)
	if err != nil {
		return nil, err
	}
	return crashWriter{Writer: w, b: b}, nil
}

type crashWriter struct {
	storage.Writer
	b crashAt
}

func (w crashWriter) Commit(ctx context.Context, c storage.Commit) (int64, error) {
	n, err := w.Writer.Commit(ctx, c)
	if err == nil && slices.ContainsFunc(c.Records, w.b.at) {
		w.b.lose()
	}
	return n, err
}

// A run stopped (its lock lost: what a crash leaves in the journal) with a
// dependency executed but not verified and its early dependent executed:
// resume runs the operation forward and converges, nothing made twice.
// Whether the dependency's Verify would have failed or not, what resume
// reads decides (a drifted dependency is updated back).
func TestResumeAfterAnEarlyDependentExecutedOnAnUnverifiedDependency(t *testing.T) {
	for _, drifted := range []bool{false, true} {
		t.Run(fmt.Sprintf("drifted=%v", drifted), func(t *testing.T) {
			e := newEnv(t)
			sp := mkSpec(t, res{name: "net", typ: "network", size: 2},
				res{name: "eph", typ: "generic", deps: []string{"net"}},
				res{name: "tail", typ: "generic", deps: []string{"eph"}})
			lb := &losingBackend{lost: make(chan struct{})}
			b := crashAt{losingBackend: lb, at: func(r journal.Record) bool {
				return r.Step == "eph" && r.Phase == "execute" && r.Status == journal.StepOK
			}}
			// net's Verify read is held until the run has stopped.
			var mu sync.Mutex
			netMade := false
			e.w.OnCreate(func(name string) {
				mu.Lock()
				defer mu.Unlock()
				netMade = netMade || name == "net"
			})
			e.w.OnRead(func(name string) {
				mu.Lock()
				held := name == "net" && netMade
				mu.Unlock()
				if !held {
					return
				}
				select {
				case <-lb.lost:
				case <-time.After(10 * time.Second):
					t.Error("the run was not stopped while net's Verify read")
				}
			})
			r, err := e.apply(sp, e.losing(lb), func(o *stack.Options) {
				inner := o.Open
				o.Open = func(ctx context.Context, url string, so storage.Options) (storage.Backend, error) {
					if _, err := inner(ctx, url, so); err != nil {
						return nil, err
					}
					return b, nil
				}
			})
			e.w.OnCreate(nil)
			e.w.OnRead(nil)
			if code := stack.ExitCode(r, err); code != stack.ExitLocked {
				t.Fatalf("exit %d, want %d (err %v, result %v)", code, stack.ExitLocked, err, resErr(r))
			}
			// What the journal holds: net executed, never verified; eph
			// executed.
			recs, _, jerr := filestore.New(stack.StackDir(e.stateDir, "s"), storage.Options{Stack: "s"}).Journal(e.ctx)
			if jerr != nil {
				t.Fatal(jerr)
			}
			has := func(step, phase, status string) bool {
				return slices.ContainsFunc(recs, func(r journal.Record) bool {
					return r.Step == step && r.Phase == phase && r.Status == status
				})
			}
			if !has("net", "execute", journal.StepOK) || has("net", "verify", journal.StepOK) || !has("eph", "execute", journal.StepOK) {
				t.Fatalf("the journal is not the case tested (net executed, not verified; eph executed):\n%v", recs)
			}
			if drifted {
				e.w.SetAttr("net", "size", 99)
			}
			rr, err := e.resume(sp)
			if code := stack.ExitCode(rr, err); code != stack.ExitOK {
				t.Fatalf("resume: exit %d, err %v, result %v", code, err, resErr(rr))
			}
			if got := e.w.Names(); !slices.Equal(got, []string{"eph", "net", "tail"}) {
				t.Errorf("world %v, want eph, net and tail", got)
			}
			made := map[string]int{}
			for _, c := range succeeded(e.w.Creates()) {
				made[c.Name]++
			}
			for _, n := range []string{"net", "eph", "tail"} {
				if made[n] != 1 {
					t.Errorf("%s made %d times, want once", n, made[n])
				}
			}
			if got := e.w.ByName("net"); got == nil || fmt.Sprint(got.Attrs["size"]) != "2" {
				t.Errorf("net after resume: %+v, want size 2", got)
			}
			if err := agree(e.state(t, "s"), e.w.Snapshot()); err != nil {
				t.Error(err)
			}
		})
	}
}
