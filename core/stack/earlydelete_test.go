package stack_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/stack"
)

// teardownWatch follows a teardown on the fake: which Deletes were sent,
// and the reads of a resource after its Delete (its Verify's), each of
// which may be held by a hook until something else has happened.
type teardownWatch struct {
	mu       sync.Mutex
	deleted  map[string]bool          // its Delete was sent
	sent     map[string]chan struct{} // closed as its Delete is sent
	verified map[string]bool          // its Verify's read has returned
	// holdVerify holds the Verify read of a name until the channel is
	// closed (or the deadline passes, which fails the test).
	holdVerify map[string]<-chan struct{}
	// onDelete is called as each Delete is sent, with what it knows then.
	onDelete func(name string)
}

func watchTeardown(t *testing.T, e *env, names ...string) *teardownWatch {
	tw := &teardownWatch{deleted: map[string]bool{}, sent: map[string]chan struct{}{}, verified: map[string]bool{}, holdVerify: map[string]<-chan struct{}{}}
	for _, n := range names {
		tw.sent[n] = make(chan struct{})
	}
	e.w.OnDelete(func(name string) {
		tw.mu.Lock()
		tw.deleted[name] = true
		if ch := tw.sent[name]; ch != nil {
			close(ch)
			tw.sent[name] = nil
		}
		f := tw.onDelete
		tw.mu.Unlock()
		if f != nil {
			f(name)
		}
	})
	e.w.OnRead(func(name string) {
		tw.mu.Lock()
		after := tw.deleted[name]
		hold := tw.holdVerify[name]
		tw.mu.Unlock()
		if !after {
			return // the ownership check's read, or the Check's
		}
		if hold != nil {
			select {
			case <-hold:
			case <-time.After(20 * time.Second):
				t.Errorf("gave up holding the Verify of %s", name)
			}
		}
		// The read returns right after this hook; what is asked of
		// "verified" is that the engine could have heard it, which it
		// cannot before this.
		tw.mu.Lock()
		tw.verified[name] = true
		tw.mu.Unlock()
	})
	return tw
}

func (tw *teardownWatch) wasVerified(name string) bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.verified[name]
}

// A teardown deletes an ephemeral resource as soon as its dependent's
// Delete has returned, while that dependent's Verify still reads: here the
// Verify of app is held until net's Delete is sent (waiting for app to be
// verified gone first, it never would be: the test fails at the deadline).
func TestTeardownDeletesAnEphemeralOnceItsDependentsDeleteReturns(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "net", typ: "network"}, res{name: "app", typ: "network", deps: []string{"net"}})
	e.mustApply(t, sp)
	tw := watchTeardown(t, e, "net", "app")
	tw.holdVerify["app"] = tw.sent["net"]
	r, err := e.teardown(sp)
	if code := stack.ExitCode(r, err); code != stack.ExitOK {
		t.Fatalf("teardown: exit %d, %v, %v", code, err, resErr(r))
	}
	if got := names(e.w.Deletes()); !slices.Equal(got, []string{"app", "net"}) {
		t.Errorf("deletes %v, want app then net", got)
	}
	if left := e.state(t, "s").Names(); len(left) != 0 {
		t.Errorf("state still records %v", left)
	}
	if left := e.w.Names(); len(left) != 0 {
		t.Errorf("world still holds %v", left)
	}
}

// A durable resource is deleted only once everything that depends on it,
// directly or through ephemeral resources deleted early, is verified gone:
// top's Verify is held until mid (ephemeral) has been deleted early; db
// (durable, below mid) must not be deleted before both are verified.
func TestTeardownDurableWaitsForEverythingAboveVerifiedGone(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t,
		res{name: "db", typ: "network", prot: "durable"},
		res{name: "mid", typ: "network", deps: []string{"db"}},
		res{name: "top", typ: "network", deps: []string{"mid"}})
	e.mustApply(t, sp)
	tw := watchTeardown(t, e, "db", "mid", "top")
	tw.holdVerify["top"] = tw.sent["mid"]
	tw.onDelete = func(name string) {
		if name == "db" && (!tw.wasVerified("top") || !tw.wasVerified("mid")) {
			t.Errorf("db (durable) deleted before top and mid were verified gone (top %v, mid %v)", tw.wasVerified("top"), tw.wasVerified("mid"))
		}
	}
	r, err := e.teardown(sp)
	if code := stack.ExitCode(r, err); code != stack.ExitOK {
		t.Fatalf("teardown: exit %d, %v, %v", code, err, resErr(r))
	}
	if got := names(e.w.Deletes()); !slices.Equal(got, []string{"top", "mid", "db"}) {
		t.Errorf("deletes %v, want top, mid, db", got)
	}
}

// A dependent whose Delete answers ok but leaves it in place fails its
// Verify: the teardown halts and fails (exit 1). The ephemeral resource
// below it, deleted early (its Delete is sent before the failure is
// known: top's Verify is held until it is), is gone and forgotten; the
// durable resource below that is neither deleted nor forgotten; top, still
// there, is recorded again. A teardown once the fault is gone finishes.
func TestTeardownHaltsWhenADependentIsStillThereAfterItsDelete(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t,
		res{name: "db", typ: "network", prot: "durable"},
		res{name: "mid", typ: "network", deps: []string{"db"}},
		res{name: "top", typ: "network", deps: []string{"mid"}},
		res{name: "side", typ: "network", deps: []string{"db"}})
	e.mustApply(t, sp)
	before := e.state(t, "s")
	e.w.KeepDeletes("top")
	tw := watchTeardown(t, e, "db", "mid", "top", "side")
	tw.holdVerify["top"] = tw.sent["mid"]
	r, err := e.teardown(sp, parallelism(4))
	if code := stack.ExitCode(r, err); code != stack.ExitError {
		t.Fatalf("teardown: exit %d (%v, %v), want %d", code, err, resErr(r), stack.ExitError)
	}
	if e.w.ByName("db") == nil {
		t.Fatal("db (durable) was deleted though top, above it, is still there")
	}
	for _, d := range e.w.Deletes() {
		if d.Name == "db" {
			t.Errorf("a Delete of db was sent: %+v", d)
		}
	}
	if e.w.ByName("top") == nil || e.w.ByName("mid") != nil {
		t.Errorf("world holds %v, want top kept and mid deleted early", e.w.Names())
	}
	st := e.state(t, "s")
	for _, name := range []string{"db", "top"} {
		got, was := st.Resources[name], before.Resources[name]
		if got == nil {
			t.Errorf("the state forgot %s, which still exists", name)
			continue
		}
		if got.ID != was.ID {
			t.Errorf("%s recorded as %s, was %s", name, got.ID, was.ID)
		}
	}
	if st.Resources["mid"] != nil {
		t.Errorf("the state still records mid, deleted and verified gone")
	}

	// The next teardown finds top and db recorded, mid gone: top must
	// still go, verified gone, before db's Delete (the state's records no
	// longer link them; the spec does, through mid). top's Verify read is
	// held for a while, or until db's Delete is sent, which must not be.
	e.w.ClearFaults()
	var (
		mu         sync.Mutex
		topDeleted bool
		dbSent     = make(chan struct{})
		early      bool
	)
	e.w.OnDelete(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		switch name {
		case "top":
			topDeleted = true
		case "db":
			close(dbSent)
		}
	})
	e.w.OnRead(func(name string) {
		mu.Lock()
		held := name == "top" && topDeleted
		mu.Unlock()
		if !held {
			return
		}
		select {
		case <-dbSent:
			mu.Lock()
			early = true
			mu.Unlock()
		case <-time.After(500 * time.Millisecond):
		}
	})
	r, err = e.teardown(sp)
	if code := stack.ExitCode(r, err); code != stack.ExitOK {
		t.Fatalf("second teardown: exit %d, %v, %v", code, err, resErr(r))
	}
	mu.Lock()
	if early {
		t.Error("db's Delete was sent while top, which depends on it through mid, was not yet verified gone")
	}
	mu.Unlock()
	e.w.OnRead(nil)
	e.w.OnDelete(nil)
	if left := e.w.Names(); len(left) != 0 {
		t.Errorf("world still holds %v", left)
	}
	if left := e.state(t, "s").Names(); len(left) != 0 {
		t.Errorf("state still records %v", left)
	}
}

// The early delete's Check still decides on its own read, made before its
// Delete is sent: mid, below top, is taken by another stack while top's
// Delete is in flight, and mid's Check (held until then) reads that: no
// Delete of mid is sent, and nothing below it is deleted.
func TestTeardownEarlyDeleteDecidesOnItsCheckRead(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t,
		res{name: "db", typ: "network"},
		res{name: "mid", typ: "network", deps: []string{"db"}},
		res{name: "top", typ: "network", deps: []string{"mid"}})
	e.mustApply(t, sp)
	taken := make(chan struct{})
	var mu sync.Mutex
	reads := map[string]int{}
	e.w.OnDelete(func(name string) {
		if name == "top" {
			e.w.SetKey("mid", "bulwark:other:01JZZZZZZZZZZZZZZZZZZZZZZZ:01JZZZZZZZZZZZZZZZZZZZZZZZ")
			close(taken)
		}
	})
	e.w.OnRead(func(name string) {
		mu.Lock()
		reads[name]++
		n := reads[name]
		mu.Unlock()
		if name == "mid" && n == 2 { // the ownership check's read, then the Check's
			select {
			case <-taken:
			case <-time.After(20 * time.Second):
				t.Error("mid's Check never read while top's Delete was in flight")
			}
		}
	})
	r, err := e.teardown(sp)
	if code := stack.ExitCode(r, err); code == stack.ExitOK {
		t.Fatal("teardown succeeded though mid now belongs to another stack")
	}
	if got := names(e.w.Deletes()); !slices.Equal(got, []string{"top"}) {
		t.Errorf("deletes %v, want top alone", got)
	}
	if e.w.ByName("mid") == nil || e.w.ByName("db") == nil {
		t.Errorf("world holds %v, want mid (another stack's now) and db", e.w.Names())
	}
}

// A protected resource anywhere below ephemeral ones refuses the teardown
// whole: early delete or not, nothing is deleted.
func TestTeardownEarlyDeleteNeverReachesAProtected(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t,
		res{name: "vault", typ: "network", prot: "protected"},
		res{name: "mid", typ: "network", deps: []string{"vault"}},
		res{name: "top", typ: "network", deps: []string{"mid"}})
	e.mustApply(t, sp)
	r, err := e.teardown(sp)
	if code := stack.ExitCode(r, err); code != stack.ExitRefused {
		t.Fatalf("teardown: exit %d (%v, %v), want refused", code, err, resErr(r))
	}
	if d := e.w.Deletes(); len(d) != 0 {
		t.Errorf("deletes sent: %v", names(d))
	}
	if got := e.w.Names(); len(got) != 3 {
		t.Errorf("world holds %v, want all three", got)
	}
}
