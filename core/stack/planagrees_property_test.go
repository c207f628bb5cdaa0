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
	checkProperty(t, propertyPlanAgreesWithApply)
}

func propertyPlanAgreesWithApply(rt *rapid.T) {
	e, done := propEnv(rt, "bulwark-agree-prop-")
	defer done()
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
		var err error
		if rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("teardown%d", k)) == 0 {
			err = ladderAgrees(rt, e, "teardown", specSummary(next), fail, &history,
				func() (*plan.RefusedError, error) {
					_, err := stack.TeardownPlan(sp, e.opts())
					return nil, err
				},
				func() (*stack.Result, error) { return e.teardown(sp) },
				func(string) bool { return false })
		} else {
			err = ladderAgrees(rt, e, "apply", specSummary(next), fail, &history,
				func() (*plan.RefusedError, error) {
					pv, err := stack.Plan(e.ctx, sp, e.opts())
					if err != nil {
						return nil, err
					}
					return pv.Refused, nil
				},
				func() (*stack.Result, error) { return e.apply(sp) },
				func(name string) bool {
					l := levelOf(next, name)
					return l != protection.Unspecified && l != protection.Protected
				})
		}
		if err == nil {
			all = mergeApplied(all, next)
		}
	}
}

// ladderAgrees makes the plan of an operation (apply or teardown), then
// runs it, and fails unless they agree on the ladder: the run is refused
// exactly when its plan is, with the same resources, and one its plan did
// not refuse fails no step on it (stack.ErrProtected); it sends no Delete
// of anything protected, and drops the record of a protected resource only
// where lowered says the spec lowered its level (an apply carrying the
// lowering out). makePlan returns the plan's refusal, or the plan's error
// (a *plan.RefusedError counts as the refusal). It returns the run's
// error.
func ladderAgrees(rt *rapid.T, e *env, op, desc string, fail func(string, ...any), history *[]string,
	makePlan func() (*plan.RefusedError, error), run func() (*stack.Result, error), lowered func(string) bool) error {
	stBefore := e.state(rt, "s")
	pre, perr := makePlan()
	if perr != nil && !errors.As(perr, &pre) {
		fail("%s plan: %v", op, perr)
	}
	_, _, d0 := e.w.Calls()
	r, err := run()
	*history = append(*history, fmt.Sprintf("%s plan refused %v; %s %s -> exit %d, err %v, result err %v",
		op, refusedNames(pre), op, desc, stack.ExitCode(r, err), err, resErr(r)))
	var re *plan.RefusedError
	refused := errors.As(err, &re)
	switch {
	case (pre != nil) != refused:
		fail("the %s plan refused %v, the %s %v", op, refusedNames(pre), op, err)
	case refused && !slices.Equal(refusedNames(pre), refusedNames(re)):
		fail("the %s plan refused %v, the %s %v", op, refusedNames(pre), op, refusedNames(re))
	case pre == nil && errors.Is(resErr(r), stack.ErrProtected):
		fail("the %s plan refused nothing, and the %s failed on the ladder: %v", op, op, resErr(r))
	}
	for _, d := range e.w.Deletes()[d0:] {
		if d.Protection == protection.Protected || recordedLevel(stBefore, d.Name) == protection.Protected {
			fail("the %s sent a Delete of protected %s: %+v", op, d.Name, d)
		}
	}
	stAfter := e.state(rt, "s")
	for _, name := range stBefore.Names() {
		if recordedLevel(stBefore, name) == protection.Protected && stAfter.Resources[name] == nil && !lowered(name) {
			fail("the %s dropped the record of protected %s", op, name)
		}
	}
	return err
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
