package stack

import (
	"fmt"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// PartialWarning is what a targeted run says, in its plan and at its end,
// as Terraform does: what it did not look at may not match the spec.
const PartialWarning = "Resource targeting is in effect: this run covers only the targeted resources and what they depend on (a teardown: and what depends on them); " +
	"the result may be incomplete, and changes to other resources were not planned. Use --target for exceptional situations, not routine runs."

// UnknownTargetError refuses a --target that names no resource of the spec
// or of the stack's state: nothing was read or changed.
type UnknownTargetError struct {
	Address string
	Spec    string
}

func (e *UnknownTargetError) Error() string {
	return fmt.Sprintf("--target %s: no resource of %s or of the stack's state has this address (give NAME, NAME[KEY], CALL.NAME, CALL.NAME[KEY] or a module call's name CALL)", e.Address, e.Spec)
}

// CheckTargets refuses a target that is not an address (before anything
// is opened); whether it names anything is known once the state is read.
func CheckTargets(targets []string) error {
	for _, t := range targets {
		if _, err := spec.ParseAddress(t); err != nil {
			return fmt.Errorf("--target %s: %w", t, err)
		}
	}
	return nil
}

// matchesTarget reports whether the resource address name is one target t
// names: itself ("web[a]"), every instance of a resource ("web" for
// "web[a]"; "net.subnet" for "net.subnet[a]"), or every resource of a
// module call ("net" for "net.subnet" and "net.subnet[a]").
func matchesTarget(t, name string) bool {
	if name == t {
		return true
	}
	if a, err := spec.ParseAddress(name); err == nil && a.Keyed && a.Name == t {
		return true
	}
	return !strings.ContainsAny(t, ".[") && strings.HasPrefix(name, t+".")
}

// targetScope is the set of addresses a run limited to targets covers: for
// an apply or a plan, what the targets match in the spec or the state plus,
// transitively, what the spec says they depend on (a removed resource the
// state records is covered when targeted, and is then deleted, with what
// the state records as depending on it that is removed too); for a
// teardown (dependents true), what they match in the state plus,
// transitively, what the state records as depending on them, which must go
// first. A target that matches nothing is an *UnknownTargetError.
//
// lenient skips a target that matches nothing instead: a resumed run's
// targets were checked when it began, and what it deleted since is gone.
func targetScope(sp *spec.Spec, st *state.State, targets []string, dependents, lenient bool) (map[string]bool, error) {
	var names []string
	inSpec := map[string]bool{}
	for _, r := range sp.Resources {
		names = append(names, r.Name)
		inSpec[r.Name] = true
	}
	for _, n := range st.Names() {
		if !inSpec[n] && !st.Resources[n].Deposed() {
			names = append(names, n)
		}
	}
	scope := map[string]bool{}
	var queue []string
	add := func(n string) {
		if !scope[n] {
			scope[n] = true
			queue = append(queue, n)
		}
	}
	for _, t := range targets {
		found := false
		for _, n := range names {
			if !matchesTarget(t, n) || (dependents && st.Resources[n] == nil) {
				continue
			}
			found = true
			add(n)
		}
		if !found && !lenient {
			return nil, &UnknownTargetError{Address: t, Spec: sp.File}
		}
	}
	deps := dependentsOf(st)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		var next []string
		switch r, ok := sp.Resource(n); {
		case dependents:
			next = deps[n]
		case ok:
			next = r.DependsOn
		default:
			// Gone from the spec, so deleted by this apply: what the state
			// records as depending on it and is gone from the spec too must
			// be deleted first, so it is covered (as Terraform's destroy of
			// a target takes its dependents).
			for _, d := range deps[n] {
				if !inSpec[d] {
					next = append(next, d)
				}
			}
		}
		for _, d := range next {
			for _, m := range names {
				if m == d || (!dependents && matchesTarget(d, m)) {
					add(m)
				}
			}
		}
	}
	return scope, nil
}

// dependentsOf is dependents(st) without the deposed records: what a
// teardown of a name must delete first.
func dependentsOf(st *state.State) map[string][]string {
	out := map[string][]string{}
	for _, name := range st.Names() {
		if st.Resources[name].Deposed() {
			continue
		}
		for _, d := range st.Resources[name].DependsOn {
			out[d] = append(out[d], name)
		}
	}
	return out
}

// inScope reports whether this run covers the resource name (every one,
// when it is not targeted). What a replace set aside is covered with the
// address it was set aside from.
func (s *session) inScope(name string, st *state.State) bool {
	if s.scope == nil {
		return true
	}
	if s.scope[name] {
		return true
	}
	if r := st.Resources[name]; r != nil && r.Deposed() {
		return s.scope[r.DeposedFrom]
	}
	return false
}

// targeted reports whether this run is limited by --target.
func (s *session) targeted() bool { return len(s.opts.Targets) > 0 }

// useTargets computes the run's scope from its targets over st, once.
func (s *session) useTargets(st *state.State, dependents bool) error {
	if !s.targeted() || s.scope != nil {
		return nil
	}
	scope, err := targetScope(s.sp, st, s.opts.Targets, dependents, s.resumedTargets)
	if err != nil {
		return err
	}
	s.scope = scope
	if s.prog != nil {
		s.prog.targets = s.opts.Targets
	}
	return nil
}
