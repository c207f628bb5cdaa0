package stack_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// A delete's "started" is journaled while its Check reads (the fsync off
// the write slot's path), but the Delete still goes only on what that
// Check read. Mid-teardown, once the first Delete is sent, one resource
// whose Check has not read yet is taken by another stack (its key
// changed) and another is deleted behind bulwark's back. The first is
// never sent a Delete and is left as it is; the second is skipped; both
// starts end "not_sent", so nothing reads them as sent; everything else
// is deleted. And no Check runs further ahead of the Deletes than the deck
// allows: at each delete's Check read, the Checks read so far exceed the
// Deletes sent by at most 2 × parallelism (the writes, and the deck).
func TestTeardownDecidesOnTheCheckReadNotTheStart(t *testing.T) {
	const p, n = 2, 8
	e := newEnv(t)
	var rs []res
	for i := range n {
		rs = append(rs, res{name: fmt.Sprintf("r%02d", i), typ: "network"})
	}
	sp := mkSpec(t, rs...)
	e.mustApply(t, sp)

	var (
		mu              sync.Mutex
		reads           = map[string]int{}
		deleted         = map[string]bool{}
		checks, deletes int
		ahead           int
		taken, gone     string
	)
	e.w.OnRead(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		reads[name]++
		// The first read is the ownership check's, a read before the
		// resource's Delete after it is its Check's. The two changed
		// mid-teardown are never sent a Delete: their Checks are not
		// counted, or each would stay "ahead" to the end.
		if reads[name] >= 2 && !deleted[name] && name != taken && name != gone {
			checks++
			ahead = max(ahead, checks-deletes)
		}
	})
	e.w.OnDelete(func(name string) {
		mu.Lock()
		deletes++
		deleted[name] = true
		first := deletes == 1
		var late []string
		if first {
			for _, r := range rs {
				if reads[r.name] == 1 && !deleted[r.name] {
					late = append(late, r.name)
				}
			}
			if len(late) >= 2 {
				taken, gone = late[len(late)-1], late[len(late)-2]
			}
		}
		toTake, toRemove := taken, gone
		mu.Unlock()
		if !first {
			return
		}
		if len(late) < 2 {
			t.Errorf("at the first Delete, only %v had not been read by their Check", late)
			return
		}
		e.w.SetKey(toTake, "bulwark:other:01JZZZZZZZZZZZZZZZZZZZZZZZ:01JZZZZZZZZZZZZZZZZZZZZZZZ")
		e.w.Remove(toRemove)
	})
	r, err := e.teardown(sp, parallelism(p))
	if code := stack.ExitCode(r, err); code == stack.ExitOK {
		t.Fatalf("teardown succeeded though %s now belongs to another stack", taken)
	}
	if taken == "" {
		t.Fatal("nothing was changed mid-teardown")
	}
	for _, d := range e.w.Deletes() {
		if d.Name == taken {
			t.Errorf("a Delete of %s, now another stack's, was sent: %+v", taken, d)
		}
		if d.Name == gone {
			t.Errorf("a Delete of %s, gone, was sent: %+v", gone, d)
		}
	}
	if e.w.ByName(taken) == nil {
		t.Errorf("%s, now another stack's, is gone", taken)
	}
	if left := e.w.Names(); !slices.Equal(left, []string{taken}) {
		t.Errorf("left %v, want %s alone", left, taken)
	}
	if ahead > 2*p {
		t.Errorf("Checks read up to %d ahead of the Deletes sent, more than the %d the writes and the deck allow", ahead, 2*p)
	}

	recs, err := stack.ReadJournalKinds(sp, e.opts(), journal.KindStep)
	if err != nil {
		t.Fatal(err)
	}
	var mine []journal.Record
	for _, rec := range recs {
		if rec.Op == r.Op {
			mine = append(mine, rec)
		}
	}
	for _, name := range []string{taken, gone} {
		var started journal.Record
		var got []string
		for _, rec := range mine {
			if rec.Step != name {
				continue
			}
			got = append(got, rec.Phase+" "+rec.Status)
			if rec.Phase == "execute" && rec.Status == journal.StepStarted {
				started = rec
			}
			if rec.Status == journal.StepNotSent && rec.Key != started.ID {
				t.Errorf("%s's not_sent is keyed %s, its start is %s", name, rec.Key, started.ID)
			}
		}
		want := []string{"execute started", "execute not_sent", "check failed"}
		if name == gone {
			want = []string{"execute started", "execute not_sent", "check skipped"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s's records %q, want %q", name, got, want)
		}
		for _, rec := range journal.Sent(mine) {
			if rec.Step == name && rec.Phase == "execute" {
				t.Errorf("journal.Sent keeps %s's %s %s: nothing was sent", name, rec.Phase, rec.Status)
			}
		}
	}
}

// A protected resource stops a teardown whole, before any step: no
// Delete, and not even a "started" record (which a delete now journals as
// its Check reads) for any resource.
func TestTeardownOfProtectedJournalsNoStart(t *testing.T) {
	e := newEnv(t)
	sp := mkSpec(t, res{name: "a", typ: "network"}, res{name: "db", typ: "network", prot: "protected"}, res{name: "c", typ: "network"})
	e.mustApply(t, sp)
	r, err := e.teardown(sp, parallelism(2))
	if code := stack.ExitCode(r, err); code == stack.ExitOK {
		t.Fatal("the teardown of a protected resource succeeded")
	}
	if d := e.w.Deletes(); len(d) != 0 {
		t.Fatalf("deletes sent: %+v", d)
	}
	if left := e.w.Names(); len(left) != 3 {
		t.Fatalf("left %v, want all three", left)
	}
	recs, err := stack.ReadJournalKinds(sp, e.opts(), journal.KindStep)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Action == "delete" {
			t.Errorf("a teardown refused whole journaled %s %s %s", rec.Step, rec.Phase, rec.Status)
		}
	}
}
