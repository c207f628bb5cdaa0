package stack_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// ownPool is the resource names every stack of the ownership property
// draws from, each with one type, so that stacks collide on identity.
var ownPool = []res{
	{name: "net", typ: "network"},
	{name: "db", typ: "dynamodb_table"},
	{name: "bucket", typ: "s3_bucket"},
	{name: "vm", typ: "compute"},
	{name: "misc", typ: "generic"},
}

var ownKinds = []string{"apply", "apply", "apply", "apply-fail", "teardown", "oob", "oob", "crash", "forget", "forget", "import", "import", "import", "move"}

// TestPropertyOwnership runs random histories of several stacks sharing one
// provider world, with resources made out of band (with no key, or a key of
// a stack that does not exist), records lost as a crash loses them, state
// forget (which releases the claim) and import of anything in the world,
// across stacks, with or without --from. In no run does a Delete reach a
// resource the stack that sent it does not own, or carry protected; no
// state ever records what another stack made or what was made out of band,
// unless imported; no import takes what another stack still owns; and no
// resource ever has two owners (two states that record it).
func TestPropertyOwnership(t *testing.T) {
	checkProperty(t, propertyOwnership)
}

func propertyOwnership(rt *rapid.T) {
	e, done := propEnv(rt, "bulwark-own-prop-")
	defer done()
	e.w.legacy = rapid.IntRange(0, 3).Draw(rt, "legacy") == 0
	// Deletes that check the key themselves (the Check then reads
	// nothing): a Delete may then reach what is not the stack's only to
	// be refused.
	e.w.checksKeys = !e.w.legacy && rapid.Bool().Draw(rt, "checksKeys")
	var history []string
	fail := func(format string, args ...any) {
		rt.Fatalf("%s\nlegacy provider: %v\nhistory:\n  %s\noutput:\n%s", fmt.Sprintf(format, args...), e.w.legacy, strings.Join(history, "\n  "), e.out)
	}
	stacks := []string{"s0", "s1", "s2"}[:rapid.IntRange(2, 3).Draw(rt, "stacks")]
	// owners[id] is the stack that may delete the resource with that id:
	// the one whose Create made it, or that imported it.
	owners := map[string]string{}
	oob := map[string]bool{}
	specs := map[string][]res{}

	ops := rapid.IntRange(1, 12).Draw(rt, "operations")
	for k := 0; k < ops; k++ {
		name := stacks[rapid.IntRange(0, len(stacks)-1).Draw(rt, fmt.Sprintf("stack%d", k))]
		kind := rapid.SampledFrom(ownKinds).Draw(rt, fmt.Sprintf("kind%d", k))
		c0, _, d0 := e.w.Calls()
		desc := name + " " + kind
		var r *stack.Result
		var err error
		switch kind {
		case "apply", "apply-fail":
			var rs []res
			for i, p := range ownPool {
				if rapid.Bool().Draw(rt, fmt.Sprintf("in%d-%d", k, i)) {
					p.prot = rapid.SampledFrom(initialLevels).Draw(rt, fmt.Sprintf("prot%d-%d", k, i))
					rs = append(rs, p)
				}
			}
			specs[name] = rs
			var opts []opt
			if kind == "apply-fail" && len(rs) > 0 {
				victim := rs[rapid.IntRange(0, len(rs)-1).Draw(rt, fmt.Sprintf("victim%d", k))].name
				opts = append(opts, simulate(victim))
				desc += " --simulate-failure " + victim
			}
			desc += " [" + specSummary(rs) + "]"
			r, err = e.apply(parseSpec(rt, specYAML(name, rs...)), opts...)
		case "teardown":
			r, err = e.teardown(parseSpec(rt, specYAML(name, specs[name]...)))
		case "oob":
			p := rapid.SampledFrom(ownPool).Draw(rt, fmt.Sprintf("oob%d", k))
			key := rapid.SampledFrom([]string{"", "bulwark:ghost:01GHOST:01X", "01BAREKEY"}).Draw(rt, fmt.Sprintf("oobkey%d", k))
			if e.w.ByName(p.name) != nil {
				continue // one resource per (type, name), as the providers keep it
			}
			id := e.w.Put(p.typ, p.name, key)
			oob[id] = true
			history = append(history, fmt.Sprintf("out of band: %s %s (id %s, key %q)", p.typ, p.name, id, key))
			continue
		case "crash":
			// A record lost as a crash between a Create and the state write
			// loses it: the resource is still this stack's (its key).
			st := e.state(rt, name)
			names := st.Names()
			if len(names) == 0 {
				continue
			}
			lost := names[rapid.IntRange(0, len(names)-1).Draw(rt, fmt.Sprintf("lost%d", k))]
			if st.Resources[lost].Imported {
				continue // an imported record has no key of ours: losing it is a forget
			}
			s, err := state.Open(stack.StackDir(e.stateDir, name), name)
			if err != nil {
				fail("open state: %v", err)
			}
			if err := s.Mutate(func(s *state.State) error { delete(s.Resources, lost); return nil }); err != nil {
				fail("mutate state: %v", err)
			}
			history = append(history, fmt.Sprintf("%s loses its record of %s", name, lost))
			continue
		case "forget":
			st := e.state(rt, name)
			names := st.Names()
			if len(names) == 0 {
				continue
			}
			victim := names[rapid.IntRange(0, len(names)-1).Draw(rt, fmt.Sprintf("forget%d", k))]
			desc += " " + victim
			r, err = stack.StateForget(e.ctx, parseSpec(rt, specYAML(name, specs[name]...)), e.opts(), victim)
			if err == nil && r.Err == nil {
				delete(owners, st.Resources[victim].ID)
			}
		case "move":
			st := e.state(rt, name)
			var names []string
			for _, n := range st.Names() {
				if !strings.HasPrefix(n, "x-") {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				continue
			}
			from := names[rapid.IntRange(0, len(names)-1).Draw(rt, fmt.Sprintf("move%d", k))]
			to := "x-" + from
			desc += " " + from + " " + to
			rs := slices.Clone(specs[name])
			for i := range rs {
				if rs[i].name == from {
					rs[i].name = to
				}
				rs[i].deps = nil
			}
			specs[name] = rs
			r, err = stack.StateMove(e.ctx, parseSpec(rt, specYAML(name, rs...)), e.opts(), from, to)
		case "import":
			// Any resource of the world: made out of band, made or imported
			// by another stack (which may still hold it, or have forgotten
			// and released it), this stack's own. A provider that predates
			// keys stamps no claims, so only what nobody owns is tried there
			// (the claims registry that would cover it is not built).
			var ids []string
			for id := range e.w.Snapshot() {
				if oob[id] || !e.w.legacy {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				continue
			}
			slices.Sort(ids)
			id := ids[rapid.IntRange(0, len(ids)-1).Draw(rt, fmt.Sprintf("import%d", k))]
			w := e.w.Snapshot()[id]
			rs := slices.DeleteFunc(slices.Clone(specs[name]), func(x res) bool { return x.name == w.Name })
			rs = append(rs, res{name: w.Name, typ: w.Type, prot: "ephemeral"})
			specs[name] = rs
			from := ""
			if !e.w.legacy && rapid.Bool().Draw(rt, fmt.Sprintf("from%d", k)) {
				from = stacks[rapid.IntRange(0, len(stacks)-1).Draw(rt, fmt.Sprintf("fromstack%d", k))]
				desc += " --from " + from
			}
			desc += " " + w.Name + " " + id
			r, err = stack.Import(e.ctx, parseSpec(rt, specYAML(name, rs...)), e.opts(importFrom(from)), w.Name, id)
			if err == nil && r.Err == nil {
				if prev := owners[id]; prev != "" && prev != name {
					fail("%s imported %s (%s), which stack %s still owns (it never forgot it)", name, w.Name, id, prev)
				}
				owners[id] = name
				delete(oob, id)
			}
		}
		code := stack.ExitCode(r, err)
		history = append(history, fmt.Sprintf("%s -> exit %d, err %v, result err %v", desc, code, err, resErr(r)))
		var conflict *plan.ConflictError
		var refused *plan.RefusedError
		var imp *stack.ImportError
		switch {
		case err == nil, errors.As(err, &conflict), errors.As(err, &refused), errors.As(err, &imp),
			errors.Is(err, stack.ErrNotRecorded), errors.Is(err, stack.ErrAlreadyRecorded):
		default:
			var unfinished *stack.UnfinishedError
			if !errors.As(err, &unfinished) {
				fail("%s: unexpected error %v", desc, err)
			}
		}
		for _, c := range succeeded(e.w.Creates()[c0:]) {
			if !strings.HasPrefix(c.Key, "bulwark:"+name+":") {
				fail("%s created %s under key %q, not one of its own", name, c.Name, c.Key)
			}
			owners[c.ID] = name
		}
		for _, d := range e.w.Deletes()[d0:] {
			switch {
			case e.w.checksKeys && !strings.HasPrefix(d.ExpectedKey, "bulwark:"+name+":"):
				fail("%s sent a Delete of %s (%s) expecting key %q, not one of its own", name, d.Name, d.ID, d.ExpectedKey)
			case e.w.checksKeys && providers.IsConflict(d.Err):
				// Refused by the key check: nothing was deleted.
			case d.Protection == protection.Protected:
				fail("%s sent a Delete carrying protected: %+v", name, d)
			case oob[d.ID]:
				fail("%s sent a Delete of %s (%s), made out of band and never imported", name, d.Name, d.ID)
			case owners[d.ID] != name:
				fail("%s sent a Delete of %s (%s), which belongs to %q", name, d.Name, d.ID, owners[d.ID])
			}
		}
		// No resource has two owners: no two states record one id.
		recordedBy := map[string]string{}
		for _, s := range stacks {
			st := e.state(rt, s)
			for _, n := range st.Names() {
				id := st.Resources[n].ID
				if other, ok := recordedBy[id]; ok && other != s {
					fail("after %s, %s (%s) has two owners: stacks %s and %s both record it", desc, n, id, other, s)
				}
				recordedBy[id] = s
			}
		}
		// No state records what it does not own.
		for _, s := range stacks {
			st := e.state(rt, s)
			for _, n := range st.Names() {
				id := st.Resources[n].ID
				if oob[id] || owners[id] != s {
					fail("after %s, stack %s records %s (%s), which belongs to %q (out of band: %v)", desc, s, n, id, owners[id], oob[id])
				}
			}
		}
	}
}
