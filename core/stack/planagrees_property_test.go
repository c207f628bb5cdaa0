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

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// TestPropertyPlanAgreesWithApply: whatever the state records, the spec now
// says and reality now holds (resources taken out of the spec, resources
// gone out of band, levels raised and lowered, force_new attributes changed
// so that a resource is replaced; on providers whose Delete checks the
// key, whose Check reads, that report no keys, or that take none, as
// Terraform's), the plan and the apply made right after it agree on the
// ladder: the apply is refused exactly when the plan is, with the same
// resources, and an apply the plan did not refuse fails no step on the
// ladder (stack.ErrProtected). Nothing protected is ever deleted, and the
// record of a protected resource is dropped only by an apply that lowered
// its level first. A teardown, drawn in some rounds instead, agrees with
// its own plan the same way. A plan that said "no change, already gone" for
// a protected record the spec had dropped, and an apply that then failed
// its step with exit 1 every time, broke the first of these.
func TestPropertyPlanAgreesWithApply(t *testing.T) {
	if os.Getenv("RAPID_CHECKS") == "" && !flagSet("rapid.checks") {
		f := flag.Lookup("rapid.checks")
		old := f.Value.String()
		f.Value.Set(fmt.Sprint(propChecks))
		defer f.Value.Set(old)
	}
	rapid.Check(t, propertyPlanAgreesWithApply)
}

func propertyPlanAgreesWithApply(rt *rapid.T) {
	dir, err := os.MkdirTemp("", "bulwark-agree-prop-")
	if err != nil {
		rt.Fatalf("temp dir: %v", err)
	}
	defer os.RemoveAll(dir)
	e := &env{ctx: context.Background(), stateDir: dir, w: newFakeWorld(), out: &syncBuffer{}}
	// A replace creates first where old and new can exist at once, else
	// deletes first.
	if rapid.Bool().Draw(rt, "coexist") {
		e.w.Coexist()
	}
	// The provider: bulwark's own, with a Delete that checks the key or
	// without; one written before keys were reported; one built for
	// Terraform (no key at all).
	switch rapid.IntRange(0, 3).Draw(rt, "provider") {
	case 1:
		e.w.ChecksKeys()
	case 2:
		e.w.legacy = true
	case 3:
		e.w.keyless = true
	}
	var history []string
	fail := func(format string, args ...any) {
		rt.Fatalf("%s\nhistory:\n  %s\noutput:\n%s", fmt.Sprintf(format, args...), strings.Join(history, "\n  "), e.out)
	}

	n := rapid.IntRange(1, 5).Draw(rt, "resources")
	all := make([]res, n)
	for i := range all {
		all[i] = res{
			name: fmt.Sprintf("r%d", i),
			typ:  rapid.SampledFrom(fakeTypes).Draw(rt, fmt.Sprintf("type%d", i)),
			prot: rapid.SampledFrom(levels).Draw(rt, fmt.Sprintf("protection%d", i)),
		}
	}
	r, err := e.apply(parseSpec(rt, specYAML("s", all...)))
	if code := stack.ExitCode(r, err); code != stack.ExitOK {
		fail("the first apply: exit %d, err %v, result err %v", code, err, resErr(r))
	}
	history = append(history, "apply "+specSummary(all))

	rounds := rapid.IntRange(1, 3).Draw(rt, "rounds")
	for k := 0; k < rounds; k++ {
		// Out of band: some resources vanish from reality.
		for _, name := range e.w.Names() {
			if rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("vanish%d-%s", k, name)) == 0 {
				e.w.Remove(name)
				history = append(history, "out of band: "+name+" deleted")
			}
		}
		// The next spec: each resource kept (its level maybe changed) or
		// taken out.
		var next []res
		for _, r := range all {
			switch rapid.IntRange(0, 4).Draw(rt, fmt.Sprintf("fate%d-%s", k, r.name)) {
			case 0:
				continue
			case 1:
				r.prot = rapid.SampledFrom(levels).Draw(rt, fmt.Sprintf("level%d-%s", k, r.name))
			case 2:
				// A force_new change: a replace, refused for a protected
				// resource and, without --replace, a durable one.
				r.zone = map[string]string{"": "z1", "z1": "z2", "z2": "z1"}[r.zone]
			}
			next = append(next, r)
		}
		sp := parseSpec(rt, specYAML("s", next...))
		stBefore := e.state(rt, "s")
		if rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("teardown%d", k)) == 0 {
			teardownAgrees(rt, e, sp, fail, &history)
			continue
		}

		pv, perr := stack.Plan(e.ctx, sp, e.opts())
		if perr != nil {
			fail("plan: %v", perr)
		}
		_, _, d0 := e.w.Calls()
		r, err := e.apply(sp)
		code := stack.ExitCode(r, err)
		history = append(history, fmt.Sprintf("plan refused %v; apply %s -> exit %d, err %v, result err %v", refusedNames(pv.Refused), specSummary(next), code, err, resErr(r)))

		var re *plan.RefusedError
		applyRefused := errors.As(err, &re)
		switch {
		case (pv.Refused != nil) != applyRefused:
			fail("the plan refused %v, the apply %v", refusedNames(pv.Refused), err)
		case applyRefused && !slices.Equal(refusedNames(pv.Refused), refusedNames(re)):
			fail("the plan refused %v, the apply %v", refusedNames(pv.Refused), refusedNames(re))
		case pv.Refused == nil && errors.Is(resErr(r), stack.ErrProtected):
			fail("the plan refused nothing, and the apply failed on the ladder: %v", resErr(r))
		}
		for _, d := range e.w.Deletes()[d0:] {
			if d.Protection == protection.Protected || recordedLevel(stBefore, d.Name) == protection.Protected {
				fail("the apply sent a Delete of protected %s: %+v", d.Name, d)
			}
		}
		stAfter := e.state(rt, "s")
		for _, name := range stBefore.Names() {
			if recordedLevel(stBefore, name) != protection.Protected || stAfter.Resources[name] != nil {
				continue
			}
			if l := levelOf(next, name); l == protection.Unspecified || l == protection.Protected {
				fail("the apply dropped the record of protected %s (spec level %v)", name, l)
			}
		}
		if err == nil {
			all = mergeApplied(all, next)
		}
	}
}

// teardownAgrees runs the teardown plan of sp, then the teardown: refused
// exactly when its plan is, with the same resources, deleting nothing
// protected and dropping no protected record; one its plan did not refuse
// fails no step on the ladder.
func teardownAgrees(rt *rapid.T, e *env, sp *spec.Spec, fail func(string, ...any), history *[]string) {
	stBefore := e.state(rt, "s")
	_, perr := stack.TeardownPlan(sp, e.opts())
	var pre *plan.RefusedError
	if perr != nil && !errors.As(perr, &pre) {
		fail("teardown plan: %v", perr)
	}
	_, _, d0 := e.w.Calls()
	r, err := e.teardown(sp)
	code := stack.ExitCode(r, err)
	*history = append(*history, fmt.Sprintf("teardown plan refused %v; teardown -> exit %d, err %v, result err %v", refusedNames(pre), code, err, resErr(r)))
	var re *plan.RefusedError
	refused := errors.As(err, &re)
	switch {
	case (pre != nil) != refused:
		fail("the teardown plan refused %v, the teardown %v", refusedNames(pre), err)
	case refused && !slices.Equal(refusedNames(pre), refusedNames(re)):
		fail("the teardown plan refused %v, the teardown %v", refusedNames(pre), refusedNames(re))
	case pre == nil && errors.Is(resErr(r), stack.ErrProtected):
		fail("the teardown plan refused nothing, and the teardown failed on the ladder: %v", resErr(r))
	}
	for _, d := range e.w.Deletes()[d0:] {
		if d.Protection == protection.Protected || recordedLevel(stBefore, d.Name) == protection.Protected {
			fail("the teardown sent a Delete of protected %s: %+v", d.Name, d)
		}
	}
	stAfter := e.state(rt, "s")
	for _, name := range stBefore.Names() {
		if recordedLevel(stBefore, name) == protection.Protected && stAfter.Resources[name] == nil {
			fail("the teardown dropped the record of protected %s", name)
		}
	}
}

// refusedNames is every resource a refusal names, sorted.
func refusedNames(re *plan.RefusedError) []string {
	if re == nil {
		return nil
	}
	out := slices.Concat(re.Resources, re.Gone)
	for _, d := range re.Durable {
		out = append(out, d.Resource)
	}
	slices.Sort(out)
	return out
}

// mergeApplied is all with the resources next kept as next has them (level
// and zone): the resources a later round may put back, as last applied.
func mergeApplied(all, next []res) []res {
	out := slices.Clone(all)
	for i, r := range out {
		for _, n := range next {
			if n.name == r.name {
				out[i] = n
			}
		}
	}
	return out
}
