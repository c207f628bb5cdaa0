package resolve

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// decideCalls decides the instances of the pending module calls of e.s
// (for_each or count from variables and locals: for_each: ${var.regions})
// with e's values, before anything else of the spec is expanded, and
// returns the spec parsed again with them (spec.WithCallInstances): a
// call's instances are its resources' addresses. A call whose value is not
// known (ExpandUnknown, a variable with no value) stays pending, with a
// note: its module is checked once, under the call's name. It returns nil
// after a problem (in e.probs, or the error).
func (e *expander) decideCalls() (*spec.Spec, error) {
	s := e.s
	decided := map[string][]spec.CallInstance{}
	// A call inside a module whose for_each is over the module's inputs
	// (w["eu"].in) appears once its caller's instances are decided: one
	// round per level of calls, each parsing the spec again.
	for {
		var pending []*spec.ModuleCall
		all := s.PendingCalls()
		for _, c := range all {
			// A call inside a pending call's module waits for it: its
			// inputs use the outer call's each and count.
			if !slices.ContainsFunc(all, func(o *spec.ModuleCall) bool { return strings.HasPrefix(c.Name, o.Name+".") }) {
				pending = append(pending, c)
			}
		}
		var refs []*spec.Ref
		for _, c := range pending {
			refs = append(refs, c.RepeatExpr.Refs()...)
		}
		// Only the locals the expressions use: the module's locals need
		// the instances being decided.
		c := *s
		c.Locals = s.LocalsFor(refs)
		ce := &expander{s: &c, vars: e.vars, sensitive: e.sensitive, unknown: e.unknown}
		ce.evalLocals()
		more := false
		for _, call := range pending {
			if _, done := decided[call.Name]; done {
				// Its instances were given and it is still pending: the
				// names do not meet; stop rather than go round again.
				return nil, fmt.Errorf("module call %q: its instances were decided but the spec parsed again still has it pending", call.Name)
			}
			if in, known := ce.callInstances(call); known {
				decided[call.Name] = in
				more = true
			}
		}
		e.probs = append(e.probs, ce.probs...)
		if len(e.probs) > 0 {
			return nil, nil
		}
		if !more {
			e.notes = append(e.notes, ce.notes...)
			return s, nil
		}
		ns, err := s.WithCallInstances(decided)
		if err != nil {
			return nil, err
		}
		s = ns
	}
}

// callInstances evaluates a pending call's for_each or count: its
// instances, in key order (a for_each's keys sorted, as Terraform's, or
// the indexes of a count), and true; false when the value is not known
// (a note says so) or after a problem.
func (e *expander) callInstances(c *spec.ModuleCall) ([]spec.CallInstance, bool) {
	field := "for_each"
	if _, ok := c.FieldPos["count"]; ok {
		field = "count"
	}
	pos := c.FieldPos[field]
	what := fmt.Sprintf("module call %q: %s %s", c.Name, field, clip(c.RepeatExpr.String()))
	if c.File != "" {
		// A call inside a module: its problems are at the module
		// file's field, naming the calls that led there.
		defer func(n int) {
			for i := n; i < len(e.probs); i++ {
				e.probs[i].File = c.File
				e.probs[i].Msg += c.Via
			}
		}(len(e.probs))
	}
	probs, secrets := len(e.probs), len(e.secrets)
	v := e.template(c.RepeatExpr, nil)
	switch {
	case len(e.probs) > probs:
		return nil, false
	case len(e.secrets) > secrets:
		// Parse refuses a sensitive variable or local here; this guards a
		// value sensitive some other way.
		e.add(pos, "%s uses a sensitive value: its keys are part of every instance's address, printed in plan, state and every output", what)
		return nil, false
	case !Known(v):
		var names []string
		note := func(ref *spec.Ref) {
			if ref.Kind == spec.RefVar && e.unknown[ref.Name] && !slices.Contains(names, ref.Name) {
				names = append(names, ref.Name)
			}
		}
		for _, ref := range c.RepeatExpr.Refs() {
			note(ref)
		}
		for _, l := range e.s.LocalsFor(c.RepeatExpr.Refs()) {
			walkRefs(l.Value, note) // the variables behind a local
		}
		why := "it uses a variable with no value"
		if len(names) == 1 {
			why = fmt.Sprintf("variable %q has no value", names[0])
		} else if len(names) > 1 {
			why = "variables " + quoteList(names) + " have no value"
		}
		file := e.s.File
		if c.File != "" {
			file = c.File
		}
		e.notes = append(e.notes, spec.Problem{File: file, Pos: pos, Msg: fmt.Sprintf("module call %q: %s is not known (%s): its module is checked once, under %s, without instances; they are decided at plan", c.Name, field, why, c.Name) + c.Via})
		return nil, false
	}
	if field == "count" {
		n, ok := v.(float64)
		if !ok || n < 0 || n != float64(int(n)) || n > spec.MaxCallInstances {
			e.add(pos, "%s must be a whole number from 0 to %d, not %s", what, spec.MaxCallInstances, describeCount(v))
			return nil, false
		}
		out := make([]spec.CallInstance, int(n))
		for i := range out {
			out[i] = spec.CallInstance{Key: strconv.Itoa(i), Count: true, Index: i}
		}
		return out, true
	}
	vals := map[string]any{}
	bad := false
	key := func(k string) bool {
		if !spec.ValidKey(k) {
			e.add(pos, "%s: key %q is not a valid instance key: a key must match %s", what, clip(k), spec.KeyPattern)
			bad = true
			return false
		}
		return true
	}
	switch coll := v.(type) {
	case map[string]any:
		for k, el := range coll {
			if key(k) {
				vals[k] = el
			}
		}
	case []any:
		for i, el := range coll {
			k, ok := el.(string)
			switch {
			case !ok:
				e.add(pos, "%s: element #%d is %s: a for_each list holds strings (its elements are the keys); use a mapping for other values", what, i+1, describe(el))
				bad = true
			case !key(k):
			case vals[k] != nil:
				e.add(pos, "%s lists %q twice: each element is an instance key, so they must be distinct (toset(...) drops repeats)", what, clip(k))
				bad = true
			default:
				vals[k] = k
			}
		}
	default:
		e.add(pos, "%s must be a mapping or a list of strings, not %s", what, describe(v))
		return nil, false
	}
	if bad {
		return nil, false
	}
	if len(vals) > spec.MaxCallInstances {
		e.add(pos, "%s has %d keys, more than the %d instances a call may have", what, len(vals), spec.MaxCallInstances)
		return nil, false
	}
	out := make([]spec.CallInstance, 0, len(vals))
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		out = append(out, spec.CallInstance{Key: k, Value: clone(vals[k])})
	}
	return out, true
}
