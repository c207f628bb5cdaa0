package stack_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// propChecks is how many random histories TestPropertyLadder runs unless
// -rapid.checks or RAPID_CHECKS says otherwise.
const propChecks = 40

var levels = []string{"ephemeral", "durable", "protected"}

// initialLevels weighs ephemeral: only ephemeral resources are rolled back.
var initialLevels = []string{"ephemeral", "ephemeral", "durable", "protected"}

// opKinds are the operations of a history, repeated to weigh them: applies
// (mostly with a simulated failure) and armed Delete faults are what make
// rollbacks, incomplete rollbacks and resumes happen.
var opKinds = []string{
	"apply", "apply", "apply",
	"fault", "fault",
	"apply-levels", "apply-remove", "apply-zone",
	"teardown", "resume",
}

// model is what the property test knows of the stack, independently of the
// code under test.
type model struct {
	all     []res           // every resource the history may use, in order
	present map[string]bool // which of them the committed spec has
	// protected holds every resource that was protected at some point and
	// was not lowered since by an apply that carried the lowering out.
	protected map[string]bool
	// consented holds the resources a run named with --replace: the only
	// durable ones whose data a delete may lose outside a teardown or a
	// removal from the spec (a resume finishes the run it consented for).
	consented map[string]bool
}

// spec returns the committed spec's resources: the present ones, with
// depends_on restricted to present ones.
func (m *model) spec() []res {
	var out []res
	for _, r := range m.all {
		if !m.present[r.name] {
			continue
		}
		r.deps = slices.DeleteFunc(slices.Clone(r.deps), func(d string) bool { return !m.present[d] })
		out = append(out, r)
	}
	return out
}

func levelOf(rs []res, name string) protection.Level {
	for _, r := range rs {
		if r.name == name {
			p, _ := protection.Parse(r.prot)
			return p
		}
	}
	return protection.Unspecified
}

func recordedLevel(st *state.State, name string) protection.Level {
	r := st.Resources[name]
	if r == nil {
		return protection.Unspecified
	}
	return r.Protection
}

func zoneOf(rs []res, name string) string {
	for _, r := range rs {
		if r.name == name {
			return r.zone
		}
	}
	return ""
}

// TestPropertyLadder runs random histories of operations on random stacks,
// with random failures, and checks after every operation that no protected
// resource was ever sent a Delete, that a rollback deleted only ephemeral
// resources this very operation created, that a protected level is never
// lost without an apply that lowered it, and that state and world agree
// whenever nothing is left unfinished.
func TestPropertyLadder(t *testing.T) {
	checkProperty(t, propertyLadder)
	t.Logf("STATS %v", stats)
}

// checkProperty checks prop under rapid, propChecks times unless
// -rapid.checks or RAPID_CHECKS says how many.
func checkProperty(t *testing.T, prop func(*rapid.T)) {
	if os.Getenv("RAPID_CHECKS") == "" && !flagSet("rapid.checks") {
		f := flag.Lookup("rapid.checks")
		old := f.Value.String()
		f.Value.Set(fmt.Sprint(propChecks))
		defer f.Value.Set(old)
	}
	rapid.Check(t, prop)
}

// propEnv is a fresh env for one run of a property: an empty fake world and
// a state folder of its own (prefix names it), which done removes.
func propEnv(rt *rapid.T, prefix string) (e *env, done func()) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		rt.Fatalf("temp dir: %v", err)
	}
	return &env{ctx: context.Background(), stateDir: dir, w: newFakeWorld(), out: &syncBuffer{}}, func() { os.RemoveAll(dir) }
}

var stats = map[string]int{}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func propertyLadder(rt *rapid.T) {
	e, done := propEnv(rt, "bulwark-stack-prop-")
	defer done()
	var history []string
	fail := func(format string, args ...any) {
		rt.Fatalf("%s\nhistory:\n  %s\noutput:\n%s", fmt.Sprintf(format, args...), strings.Join(history, "\n  "), e.out)
	}

	// A random stack: edges only to earlier resources, so it is a DAG.
	n := rapid.IntRange(2, 8).Draw(rt, "resources")
	m := &model{present: map[string]bool{}, protected: map[string]bool{}, consented: map[string]bool{}}
	// Half the worlds hold an old and a new resource at once (a zone
	// change replaces creating first), half cannot (deleting first).
	if rapid.Bool().Draw(rt, "coexist") {
		e.w.Coexist()
	}
	for i := 0; i < n; i++ {
		r := res{
			name: fmt.Sprintf("r%d", i),
			typ:  rapid.SampledFrom(fakeTypes).Draw(rt, fmt.Sprintf("type%d", i)),
			prot: rapid.SampledFrom(initialLevels).Draw(rt, fmt.Sprintf("protection%d", i)),
		}
		for j := 0; j < i; j++ {
			if rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("edge%d-%d", i, j)) == 0 {
				r.deps = append(r.deps, fmt.Sprintf("r%d", j))
			}
		}
		m.all = append(m.all, r)
		m.present[r.name] = true
	}
	pick := func(label string) int { return rapid.IntRange(0, n-1).Draw(rt, label) }

	ops := rapid.IntRange(1, 8).Draw(rt, "operations")
	pending := false             // the last operation left one unfinished
	replaced := map[int]string{} // the --replace of operation k
	for k := 0; k < ops; k++ {
		kind := opKinds[rapid.IntRange(0, len(opKinds)-1).Draw(rt, fmt.Sprintf("op%d", k))]
		if pending && rapid.Bool().Draw(rt, fmt.Sprintf("resumenow%d", k)) {
			kind = "resume"
		}

		// The proposed model: committed only if the operation ran.
		next := &model{all: slices.Clone(m.all), present: cloneSet(m.present), protected: m.protected}
		var opts []opt
		desc := kind
		switch kind {
		case "fault":
			name := fmt.Sprintf("r%d", pick(fmt.Sprintf("fault%d", k)))
			times := rapid.IntRange(1, 2).Draw(rt, fmt.Sprintf("faultn%d", k))
			e.w.FailNextDeletes(name, times)
			history = append(history, fmt.Sprintf("arm: the next %d Delete(s) of %s fail", times, name))
			continue
		case "apply":
			if rapid.Bool().Draw(rt, fmt.Sprintf("readd%d", k)) {
				for _, r := range next.all {
					next.present[r.name] = true
				}
				desc += " (all resources back)"
			}
			if rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("simulate%d", k)) > 0 {
				name := fmt.Sprintf("r%d", pick(fmt.Sprintf("simulateat%d", k)))
				opts = append(opts, simulate(name))
				desc += " --simulate-failure " + name
				if rapid.Bool().Draw(rt, fmt.Sprintf("faultyrollback%d", k)) {
					victim := fmt.Sprintf("r%d", pick(fmt.Sprintf("victim%d", k)))
					times := rapid.IntRange(1, 2).Draw(rt, fmt.Sprintf("victimn%d", k))
					e.w.FailNextDeletes(victim, times)
					history = append(history, fmt.Sprintf("arm: the next %d Delete(s) of %s fail", times, victim))
				}
			}
		case "apply-levels":
			for i := range next.all {
				if rapid.Bool().Draw(rt, fmt.Sprintf("change%d-%d", k, i)) {
					next.all[i].prot = rapid.SampledFrom(levels).Draw(rt, fmt.Sprintf("level%d-%d", k, i))
					desc += fmt.Sprintf(" %s=%s", next.all[i].name, next.all[i].prot)
				}
			}
		case "apply-remove":
			name := fmt.Sprintf("r%d", pick(fmt.Sprintf("remove%d", k)))
			next.present[name] = false
			desc += " without " + name
		case "apply-zone":
			i := pick(fmt.Sprintf("zone%d", k))
			next.all[i].zone = map[string]string{"": "z1", "z1": "z2", "z2": "z1"}[next.all[i].zone]
			desc += fmt.Sprintf(" %s.zone=%s", next.all[i].name, next.all[i].zone)
			// The consent a durable replace needs, given or not; and a
			// replace that fails midway (a later resource fails).
			if rapid.Bool().Draw(rt, fmt.Sprintf("consent%d", k)) {
				opts = append(opts, replacing(next.all[i].name))
				desc += " --replace " + next.all[i].name
				replaced[k] = next.all[i].name
			}
			if rapid.Bool().Draw(rt, fmt.Sprintf("zonefail%d", k)) {
				name := fmt.Sprintf("r%d", pick(fmt.Sprintf("zonefailat%d", k)))
				opts = append(opts, simulate(name))
				desc += " --simulate-failure " + name
			}
		}
		rs := next.spec()
		sp := parseSpec(rt, specYAML("s", rs...))
		desc += fmt.Sprintf("  [spec: %s]", specSummary(rs))

		stBefore := e.state(rt, "s")
		before, err := inspect.Status(sp, e.opts())
		if err != nil {
			fail("status: %v", err)
		}
		forbidden := map[string]bool{}
		for name := range m.protected {
			forbidden[name] = true
		}
		for _, name := range stBefore.Names() {
			if recordedLevel(stBefore, name) == protection.Protected {
				forbidden[name] = true
			}
		}
		for _, r := range rs {
			if r.prot == "protected" {
				forbidden[r.name] = true
			}
		}
		c0, u0, d0 := e.w.Calls()

		var r *stack.Result
		switch kind {
		case "teardown":
			r, err = e.teardown(sp, opts...)
		case "resume":
			r, err = e.resume(sp, opts...)
		default:
			r, err = e.apply(sp, opts...)
		}
		code := stack.ExitCode(r, err)
		outcome := "-"
		if r != nil {
			outcome = r.Outcome.String()
		}
		stats[fmt.Sprintf("%s exit=%d", strings.Fields(desc)[0], code)]++
		if len(deletes0(e, d0)) > 0 {
			stats["ops with deletes"]++
		}
		history = append(history, fmt.Sprintf("%s -> exit %d, outcome %s, err %v, result err %v", desc, code, outcome, err, resErr(r)))

		creates, deletes := e.w.Creates()[c0:], e.w.Deletes()[d0:]
		_, u1, _ := e.w.Calls()
		stAfter := e.state(rt, "s")

		// Errors: only the expected refusals.
		var refused *plan.RefusedError
		var unfinished *stack.UnfinishedError
		switch {
		case err == nil:
		case errors.As(err, &refused):
			if len(creates) != 0 || len(deletes) != 0 || u1 != u0 {
				fail("a refused %s called the provider: creates %v deletes %v", kind, creates, deletes)
			}
		case errors.As(err, &unfinished):
			if len(before.Unfinished) == 0 {
				fail("%s refused as unfinished (%v) though nothing was", kind, err)
			}
		case errors.Is(err, stack.ErrNothingToResume) && kind == "resume":
			if len(before.Unfinished) != 0 {
				fail("resume found nothing to resume; status said %v", before.Unfinished)
			}
		default:
			fail("%s: unexpected error %v", kind, err)
		}

		// (a) No Delete of a resource protected in the state, in the spec
		// given, or in the model; none carrying protected.
		for _, d := range deletes {
			if forbidden[d.Name] || d.Protection == protection.Protected {
				fail("%s sent a Delete of protected %s: %+v", kind, d.Name, d)
			}
		}

		// (b) What an apply deletes: an id this apply created (its
		// rollback), which must be ephemeral; else a resource gone from the
		// spec or replaced (zone changed). Resume deletes only ephemeral
		// resources the resumed operation created.
		created := map[string]fakeCall{}
		for _, c := range creates {
			if c.Err == nil {
				created[c.ID] = c
			}
		}
		rolledBack := r != nil && (r.Outcome == engine.Compensated || r.Outcome == engine.RollbackIncomplete)
		for _, d := range deletes {
			if d.Err != nil {
				continue
			}
			switch kind {
			case "teardown":
			case "resume":
				rec := recordByID(stBefore, d.ID)
				switch {
				case rec != nil && rec.Deposed():
					// The cleanup of a replace the resumed run made (its
					// durable data, only with that run's consent: below).
				case rec != nil && m.consented[d.Name] && recordedLevel(stBefore, d.Name) == protection.Durable:
					// The replacement a consented replace made, deleted by
					// the resumed run's rollback.
				case rec == nil || !slices.Contains(before.Unfinished, rec.CreatedBy) ||
					plan.Level(rec.Protection, levelOf(rs, d.Name)) != protection.Ephemeral:
					fail("resume deleted %s (%s), not an ephemeral resource the unfinished operation created: %+v", d.Name, d.ID, rec)
				}
			default:
				if c, ok := created[d.ID]; ok {
					if !rolledBack {
						fail("%s deleted %s (%s), which it created, without a rollback", kind, d.Name, d.ID)
					}
					// A durable replacement made by this very run, which
					// consented to replace it, is deleted by its rollback
					// (the old one is current again); anything else it
					// created must be ephemeral.
					if replaced[k] == d.Name && c.Protection == protection.Durable {
						continue
					}
					if c.Protection != protection.Ephemeral || levelOf(rs, d.Name) != protection.Ephemeral || d.Protection != protection.Ephemeral {
						fail("rollback deleted %s (%s), created %v, spec %v, delete %v", d.Name, d.ID, c.Protection, levelOf(rs, d.Name), d.Protection)
					}
					continue
				}
				prior := recordByID(stBefore, d.ID)
				if prior == nil {
					fail("%s deleted %s (%s), neither recorded before nor created by it", kind, d.Name, d.ID)
				}
				if prior.RetainedBy != "" && levelOf(rs, d.Name) == protection.Unspecified {
					fail("%s deleted %s (%s), retained by %s and not in the spec", kind, d.Name, d.ID, prior.RetainedBy)
				}
				inSpec := levelOf(rs, d.Name) != protection.Unspecified
				zoneChanged := fmt.Sprint(prior.Config["zone"]) != fmt.Sprint(orNil(zoneOf(rs, d.Name)))
				if inSpec && !zoneChanged && prior.Type == typeOf(rs, d.Name) {
					fail("%s deleted %s (%s), which existed before it and which the spec keeps unchanged", kind, d.Name, d.ID)
				}
			}
		}

		// (e) No durable resource's data is deleted except by a teardown,
		// a removal from the spec, or a replace the user consented to with
		// --replace (in this run, or in the run a resume finishes).
		if kind != "teardown" {
			for _, d := range deletes {
				if d.Err != nil {
					continue
				}
				rec := recordByID(stBefore, d.ID)
				if rec == nil || recordedLevel(&state.State{Resources: map[string]*state.Resource{"x": {Protection: rec.Protection}}}, "x") != protection.Durable {
					continue
				}
				removed := levelOf(rs, d.Name) == protection.Unspecified
				if !removed && replaced[k] != d.Name && !(kind == "resume" && m.consented[d.Name]) {
					fail("%s deleted durable %s (%s), which existed before it, without a teardown, a removal or --replace %s", kind, d.Name, d.ID, d.Name)
				}
			}
		}

		// (d) A protected level is only lost by an apply that lowered it and
		// whose step for it was carried out (and not compensated).
		lowered := map[string]bool{}
		if strings.HasPrefix(kind, "apply") && err == nil && !rolledBack {
			for _, name := range resourcesOf(r.Run.Done) {
				if l := levelOf(rs, name); l != protection.Protected && l != protection.Unspecified {
					lowered[name] = true
				}
			}
		}
		nextProtected := map[string]bool{}
		for name := range m.protected {
			if lowered[name] {
				continue
			}
			if recordedLevel(stAfter, name) != protection.Protected {
				fail("%s lost the protection of %s: recorded %+v", kind, name, stAfter.Resources[name])
			}
			nextProtected[name] = true
		}
		for _, name := range stAfter.Names() {
			if recordedLevel(stAfter, name) == protection.Protected {
				nextProtected[name] = true
			}
		}

		// (c) With nothing unfinished, state and world agree exactly.
		after, err2 := inspect.Status(sp, e.opts())
		if err2 != nil {
			fail("status: %v", err2)
		}
		pending = len(after.Unfinished) > 0
		if len(after.Unfinished) == 0 {
			if aerr := agree(stAfter, e.w.Snapshot()); aerr != nil {
				fail("after %s: %v", kind, aerr)
			}
		} else if !(r != nil && r.Outcome == engine.RollbackIncomplete) && !(err != nil && len(before.Unfinished) > 0) {
			fail("%s left %v unfinished with outcome %s", kind, after.Unfinished, outcome)
		}
		// A successful apply leaves exactly the spec, at its levels.
		if strings.HasPrefix(kind, "apply") && err == nil && r.Outcome == engine.Succeeded {
			var want []string
			for _, r := range rs {
				want = append(want, r.name)
				if got := stAfter.Resources[r.name]; got == nil || got.Protection != levelOf(rs, r.name) {
					fail("after a successful apply %s is recorded as %+v, spec level %s", r.name, got, r.prot)
				}
			}
			// Plus what a rollback kept as retained (the ladder's rollback
			// column): not in the spec, still recorded, never deleted by
			// an apply.
			for _, n := range stAfter.Names() {
				if rec := stAfter.Resources[n]; levelOf(rs, n) == protection.Unspecified && rec.RetainedBy != "" {
					want = append(want, n)
				}
			}
			if !slices.Equal(sorted(want), stAfter.Names()) {
				fail("after a successful apply the state holds %v, the spec and the retained %v", stAfter.Names(), sorted(want))
			}
		}
		if kind == "teardown" && err == nil && r.Outcome == engine.Succeeded && len(stAfter.Resources) != 0 {
			fail("after a successful teardown the state holds %v", stAfter.Names())
		}

		// Commit the proposal if the operation ran.
		if err == nil {
			m.all, m.present = next.all, next.present
		}
		if name, ok := replaced[k]; ok && err == nil {
			m.consented[name] = true
		}
		m.protected = nextProtected
	}
	// Once the faults are gone, resume converges and nothing is untracked.
	e.w.ClearFaults()
	sp := parseSpec(rt, specYAML("s", m.spec()...))
	r, err := e.resume(sp)
	if err == nil {
		history = append(history, fmt.Sprintf("final resume -> exit %d, result err %v", stack.ExitCode(r, err), r.Err))
		if r.Outcome != engine.Compensated {
			fail("resume without faults: outcome %v", r.Outcome)
		}
		_, err = e.resume(sp)
	}
	if !errors.Is(err, stack.ErrNothingToResume) {
		fail("resume without faults did not converge: %v", err)
	}
	if aerr := agree(e.state(rt, "s"), e.w.Snapshot()); aerr != nil {
		fail("at the end: %v", aerr)
	}
}

func cloneSet(m map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func recordByID(st *state.State, id string) *state.Resource {
	for _, r := range st.Resources {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func typeOf(rs []res, name string) string {
	for _, r := range rs {
		if r.name == name {
			return r.typ
		}
	}
	return ""
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func specSummary(rs []res) string {
	var parts []string
	for _, r := range rs {
		s := r.name + ":" + r.typ + ":" + r.prot
		if r.zone != "" {
			s += ":" + r.zone
		}
		if len(r.deps) > 0 {
			s += "->" + strings.Join(r.deps, ",")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func deletes0(e *env, d0 int) []fakeCall { return e.w.Deletes()[d0:] }
