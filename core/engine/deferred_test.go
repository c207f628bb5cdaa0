package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// deferring is a DeferringJournal that tells what a crash at any instant
// would lose: the deferred records no durable Append has covered yet.
type deferring struct {
	mu     sync.Mutex
	recs   []journal.Record
	write  []int // per record: the durable write that made it durable (0: not yet)
	writes int
	dirty  int // deferred records not durable yet
}

func (d *deferring) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r.ID = fmt.Sprintf("rec%d", len(d.recs))
	d.recs = append(d.recs, r)
	d.writes++
	d.write = append(d.write, 0)
	for i := range d.write {
		if d.write[i] == 0 {
			d.write[i] = d.writes
		}
	}
	d.dirty = 0
	return r, nil
}

func (d *deferring) AppendDeferred(_ context.Context, r journal.Record) (journal.Record, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recs = append(d.recs, r)
	d.write = append(d.write, 0)
	d.dirty++
	return r, nil
}

// lost is how many records a crash now would lose.
func (d *deferring) lost() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dirty
}

// lostBefore is how many of the records up to and including step's last
// "started" record of phase a crash now would lose: the records its
// mutation follows in the journal; found tells whether there is such a
// record at all. Records that other steps running beside it appended after
// that record may still wait for the next durable write: they follow this
// mutation's started record, so a crash loses them only as part of the
// journal's tail, after everything this mutation depends on.
func (d *deferring) lostBefore(step, phase string) (lost int, found bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	last := -1
	for i, r := range d.recs {
		if r.Step == step && r.Phase == phase && r.Status == journal.StepStarted {
			last = i
		}
	}
	for i := 0; i <= last; i++ {
		if d.write[i] == 0 {
			lost++
		}
	}
	return lost, last >= 0
}

// A deferred record is durable before every mutation that follows it and
// before the operation's end: a crash at a mutation loses none, and the
// records deferred are exactly those that guard nothing.
func TestDeferredRecordsAreDurableBeforeEveryMutationAndTheEnd(t *testing.T) {
	tests := []struct {
		name        string
		exists      []string // before the run: their Checks skip
		failExec    string
		parallelism int
		want        Outcome
	}{
		{name: "fresh apply", parallelism: 1, want: Succeeded},
		{name: "fresh apply in parallel", parallelism: 4, want: Succeeded},
		{name: "no-op", exists: []string{"network", "bucket", "compute", "lb"}, parallelism: 4, want: Succeeded},
		{name: "partly done", exists: []string{"network", "bucket"}, parallelism: 4, want: Succeeded},
		{name: "rollback", failExec: "lb", parallelism: 1, want: Compensated},
		{name: "rollback in parallel", exists: []string{"bucket"}, failExec: "compute", parallelism: 4, want: Compensated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			for _, n := range tt.exists {
				w.exists[n] = true
			}
			if tt.failExec != "" {
				w.failExec[tt.failExec] = true
			}
			d := &deferring{}
			var mu sync.Mutex
			var atMutation []string
			steps := chain(w, Compensate)
			for _, s := range steps {
				exec, comp := s.Execute, s.Compensate
				id := s.ID
				check := func(phase string) {
					n, found := d.lostBefore(id, phase)
					if n > 0 || !found {
						mu.Lock()
						atMutation = append(atMutation, fmt.Sprintf("%s %s with %d record(s) before it not durable (its started record found: %v)", phase, id, n, found))
						mu.Unlock()
					}
				}
				s.Execute = func(ctx context.Context, key string) error { check("execute"); return exec(ctx, key) }
				s.Compensate = func(ctx context.Context) (string, error) { check("compensate"); return comp(ctx) }
			}
			e := &Engine{Journal: d}
			res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "apply", Steps: steps, Parallelism: tt.parallelism})
			if res.Outcome != tt.want {
				t.Fatalf("outcome %v (%v), want %v", res.Outcome, res.Err, tt.want)
			}
			for _, m := range atMutation {
				t.Errorf("%s", m)
			}
			if n := d.lost(); n != 0 {
				t.Errorf("%d record(s) not durable after the end record", n)
			}
			firstCompensate := 0
			for i, r := range d.recs {
				if r.Phase == "compensate" && r.Status == journal.StepStarted {
					firstCompensate = d.write[i]
					break
				}
			}
			// The rollback's target set shares the first compensation's write.
			for i, r := range d.recs {
				if r.Kind == journal.KindRollback && d.write[i] != firstCompensate {
					t.Errorf("target set made durable by write %d, the first compensation's started by %d: want one write", d.write[i], firstCompensate)
				}
			}
		})
	}
}

// Only the records that guard no mutation are deferred.
func TestWhatIsDeferred(t *testing.T) {
	w := newWorld()
	w.exists["bucket"] = true
	w.failExec["lb"] = true
	var deferredKinds []string
	d := &recordingDeferred{deferring: &deferring{}, deferred: &deferredKinds}
	e := &Engine{Journal: d}
	res := e.Run(context.Background(), &Operation{ID: "op_1", Type: "apply", Steps: chain(w, Compensate), Parallelism: 1})
	if res.Outcome != Compensated {
		t.Fatalf("outcome %v (%v)", res.Outcome, res.Err)
	}
	want := map[string]bool{"step check skipped": true, "step verify ok": true, "rollback  started": true}
	seen := map[string]bool{}
	for _, k := range deferredKinds {
		if !want[k] {
			t.Errorf("deferred %q: it guards a mutation or ends one", k)
		}
		seen[k] = true
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("%q was not deferred", k)
		}
	}
}

type recordingDeferred struct {
	*deferring
	deferred *[]string
}

func (r *recordingDeferred) AppendDeferred(ctx context.Context, rec journal.Record) (journal.Record, error) {
	*r.deferred = append(*r.deferred, rec.Kind+" "+rec.Phase+" "+rec.Status)
	return r.deferring.AppendDeferred(ctx, rec)
}
