package webview

import (
	"slices"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
)

// PathStep is one link of an operation's critical path.
type PathStep struct {
	Step string `json:"step"`
	// Part is "run" (the step's check, execute and verify) or "undo" (its
	// compensate, in the rollback).
	Part  string    `json:"part"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// After names the link before it ("" for the first) and Via why it
	// waited for it: "depends on" (the state records the dependency),
	// "dependent" (a delete or an undo waits for what depends on it),
	// "rollback" (an undo waits for the failure that started the
	// rollback), else "" (it started when that one ended: a parallelism
	// slot or the engine's own order).
	After string `json:"after"`
	Via   string `json:"via"`
	// Wait is the time between the end of the link before it (or the
	// operation's start) and its own start; Duration its own length.
	Wait       time.Duration `json:"-"`
	Duration   time.Duration `json:"-"`
	WaitMS     int64         `json:"wait_ms"`
	DurationMS int64         `json:"duration_ms"`
}

// segment is one part of a step on the axis: its run or its undo.
type segment struct {
	row        int
	part       string
	start, end time.Time
	failed     bool
	// executed is when a run's Execute returned ok (zero if it did not):
	// a dependent that starts early (the engine's EarlyStart: an
	// ephemeral create) was released then, not at the end of its
	// dependency's Verify; so was an ephemeral resource's Delete in a
	// teardown (EarlyDelete), on its dependent's Delete.
	executed time.Time
}

// tie is how close two ends must be for the choice between them to go
// to a recorded dependency: the journal's timestamps of steps that end
// together differ by the engine's own bookkeeping.
const tie = time.Millisecond

// criticalPath finds the chain of step parts that decided p's length, from
// the journal's timestamps and deps (the dependencies the stack's state
// records, resource → what it depends on): it starts from the part that
// ended last and goes back, each time to the part that ended last at or
// before this one started (what released it: a dependency, the failure
// that started a rollback, or a parallelism slot), a dependency whose
// Execute had returned by then counting from that return (an early
// start, while its Verify still read), and a teardown's dependent from
// its Delete's return when that came before the delete ended (an early
// delete); among parts ending
// within a millisecond of each other, a recorded dependency wins. It
// stops at a part that nothing ended before. The bars and rows on it are
// marked Critical.
func criticalPath(p *TimelinePage, deps map[string][]string) []PathStep {
	var segs []segment
	for i, r := range p.Steps {
		for _, part := range []string{"run", "undo"} {
			s := segment{row: i, part: part}
			found := false
			for _, b := range r.Bars {
				if (b.Phase == "compensate") != (part == "undo") || b.Status == journal.StepNotSent {
					continue // a start whose work never went out took no time
				}
				if !found || b.Start.Before(s.start) {
					s.start = b.Start
				}
				if !found || b.End.After(s.end) {
					s.end = b.End
				}
				s.failed = s.failed || b.Status == "failed"
				if b.Phase == "execute" && b.Status == journal.StepOK {
					s.executed = b.End
				}
				found = true
			}
			if found {
				segs = append(segs, s)
			}
		}
	}
	if len(segs) == 0 {
		return []PathStep{}
	}
	last := 0
	for i, s := range segs {
		if s.end.After(segs[last].end) || (s.end.Equal(segs[last].end) && s.start.After(segs[last].start)) {
			last = i
		}
	}
	var chain []PathStep
	seen := map[int]bool{}
	for cur := last; cur >= 0 && !seen[cur]; {
		seen[cur] = true
		n := segs[cur]
		prev, via := -1, ""
		var prevEnd time.Time
		for i, m := range segs {
			if i == cur || seen[i] {
				continue
			}
			v := reason(p, deps, n, m)
			end := m.end
			if end.After(n.start) {
				// Only a part that released n early counts from before
				// its own end, and from its Execute's return: a
				// dependency n started after (an early start, while its
				// Verify read), or, for a teardown's delete, a dependent
				// whose Delete returned before n ended (an early delete
				// begins its Check as that Delete goes out and sends its
				// own once it returned, while its Verify reads).
				early := v == "depends on" && !m.executed.IsZero() && !m.executed.After(n.start)
				earlyDelete := v == "dependent" && n.part == "run" && !m.executed.IsZero() && m.executed.Before(n.end)
				if !early && !earlyDelete {
					continue
				}
				end = m.executed
			}
			switch {
			case prev < 0 || end.After(prevEnd.Add(tie)):
				prev, via, prevEnd = i, v, end
			case end.After(prevEnd.Add(-tie)) && v != "" && via == "":
				prev, via, prevEnd = i, v, end
			case end.After(prevEnd) && (v != "") == (via != ""):
				prev, via, prevEnd = i, v, end
			}
		}
		ps := PathStep{Step: p.Steps[n.row].Step, Part: n.part, Start: n.start, End: n.end, Duration: n.end.Sub(n.start)}
		from := p.Start
		if prev >= 0 {
			ps.After, ps.Via, from = p.Steps[segs[prev].row].Step, via, prevEnd
		}
		ps.Wait = max(n.start.Sub(from), 0)
		ps.WaitMS, ps.DurationMS = ps.Wait.Milliseconds(), ps.Duration.Milliseconds()
		chain = append(chain, ps)
		row := &p.Steps[n.row]
		row.Critical = true
		for i := range row.Bars {
			if (row.Bars[i].Phase == "compensate") == (n.part == "undo") {
				row.Bars[i].Critical = true
			}
		}
		cur = prev
	}
	slices.Reverse(chain)
	return chain
}

// reason says why part n waited for part m, as far as the journal and the
// recorded dependencies tell: "" when they do not.
func reason(p *TimelinePage, deps map[string][]string, n, m segment) string {
	nr, mr := p.Steps[n.row], p.Steps[m.row]
	if n.part == "undo" && m.failed && m.part == "run" && nr.UndoneFor == mr.Step {
		return "rollback"
	}
	forward := n.part == "run" && m.part == "run" && nr.Action != "delete"
	switch {
	case forward && slices.Contains(deps[nr.Resource], mr.Resource):
		return "depends on"
	case !forward && n.part == m.part && slices.Contains(deps[mr.Resource], nr.Resource):
		return "dependent"
	}
	return ""
}

// linkUndos names, on every step that was undone (its compensate ran), the
// failed step whose failure started the rollback: the first to fail before
// the undo began (any failure, if the journal shows none before it).
func linkUndos(p *TimelinePage) {
	type failure struct {
		step string
		at   time.Time
	}
	var fails []failure
	for _, r := range p.Steps {
		for _, b := range r.Bars {
			if b.Status == "failed" && b.Phase != "compensate" {
				fails = append(fails, failure{r.Step, b.End})
			}
		}
	}
	if len(fails) == 0 {
		return
	}
	slices.SortStableFunc(fails, func(a, b failure) int { return a.at.Compare(b.at) })
	for i := range p.Steps {
		r := &p.Steps[i]
		for j := range r.Bars {
			b := &r.Bars[j]
			if b.Phase != "compensate" {
				continue
			}
			b.CausedBy = fails[0].step
			for _, f := range fails {
				if !f.at.After(b.Start) {
					b.CausedBy = f.step
					break
				}
			}
			if r.UndoneFor == "" {
				r.UndoneFor = b.CausedBy
			}
		}
	}
}
