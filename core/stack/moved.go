package stack

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Move is one record the spec's moved: entries rename: From as the state
// records it, To as the spec now declares it (a chain a -> b -> c is one
// Move from a to c).
type Move struct {
	From string `json:"from"`
	To   string `json:"to"`
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Forget is one record a removed: entry with destroy: false drops: the
// object is kept, and no longer managed by this stack.
type Forget struct {
	Address    string `json:"address"`
	ID         string `json:"id"`
	Type       string `json:"type"`
	Protection string `json:"protection"`
}

// movesStep is the id of the step of an apply that follows the spec's
// moved: and removed: entries; a meta step (see updateSteps), so a rollback
// has nothing to undo for it: the renames and the forgetting are what the
// spec says, whatever becomes of the rest of the run.
const movesStep = metaPrefix + "moved"

// renames is the ordered list of single renames that carry the state's
// records through the spec's moved: entries, as the state's keys go.
type rename struct{ from, to string }

// followMoves works out what the spec's moved: and removed: entries still
// ask of the state st: the renames (applied in order) and the records to
// forget. What cannot be followed is a spec.Problems at the entry, and
// nothing is changed: a move into an address the spec does not declare
// (once for_each is expanded), a move from an instance the spec still
// declares, or one whose target the state already records beside its
// source (two objects for one address: one of them must be forgotten or
// deleted by hand first).
func (s *session) followMoves(st *state.State) ([]rename, []Move, []Forget, error) {
	if len(s.sp.Moved) == 0 && len(s.sp.Removed) == 0 {
		return nil, nil, nil, nil
	}
	var probs spec.Problems
	problem := func(pos spec.Pos, format string, args ...any) {
		probs = append(probs, spec.Problem{File: s.sp.File, Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	for i, mv := range s.sp.Moved {
		if _, declared := s.specResource(mv.From.String()); declared && mv.From.Keyed {
			problem(mv.FieldPos["from"], "moved entry #%d: %s is still declared (an instance of %s's for_each); a moved entry is for an address the spec no longer has", i+1, mv.From, mv.From.Name)
		}
	}
	// The working set: the state's live records (not old objects a replace
	// set aside), by address, each with the address it had at the start.
	origin := map[string]string{}
	for name, r := range st.Resources {
		if !r.Deposed() {
			origin[name] = name
		}
	}
	var renames []rename
	for pass := 0; pass <= len(s.sp.Moved); pass++ {
		changed := false
		for i, mv := range s.sp.Moved {
			for _, addr := range slices.Sorted(maps.Keys(origin)) {
				to := movedTo(mv, addr)
				if to == "" {
					continue
				}
				if _, taken := origin[to]; taken {
					problem(mv.Pos, "moved entry #%d: cannot move %s to %s: the state records both (ids %s and %s); forget or delete one of them first (`bulwark state forget`)", i+1, addr, to, shownID(st.Resources[origin[addr]]), shownID(st.Resources[origin[to]]))
					continue
				}
				origin[to] = origin[addr]
				delete(origin, addr)
				renames = append(renames, rename{addr, to})
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	var moves []Move
	for _, to := range slices.Sorted(maps.Keys(origin)) {
		from := origin[to]
		if from == to {
			continue
		}
		r := st.Resources[from]
		if _, declared := s.specResource(to); !declared {
			problem(s.movedEntryPos(from, to), "moved: %s would become %s, which the spec does not declare (its for_each has no such key); a move keeps an object for an address the spec declares", from, to)
			continue
		}
		moves = append(moves, Move{From: from, To: to, ID: shownID(r), Type: r.Type})
	}
	var forgets []Forget
	for _, rm := range s.sp.Removed {
		if rm.Destroy {
			continue // deleted as any resource the spec left, under the ladder
		}
		for _, name := range slices.Sorted(maps.Keys(origin)) {
			if a, err := spec.ParseAddress(name); err == nil && a.Name == rm.From {
				r := st.Resources[origin[name]]
				forgets = append(forgets, Forget{Address: name, ID: shownID(r), Type: r.Type, Protection: r.Protection.String()})
			}
		}
	}
	if len(probs) > 0 {
		return nil, nil, nil, probs
	}
	return renames, moves, forgets, nil
}

// movedEntryPos is the position of the moved: entry whose target is to, or
// of the first one naming from.
func (s *session) movedEntryPos(from, to string) spec.Pos {
	for _, mv := range s.sp.Moved {
		if movedTo(mv, from) == to || mv.To.String() == to {
			return mv.Pos
		}
	}
	if len(s.sp.Moved) > 0 {
		return s.sp.Moved[0].Pos
	}
	return spec.Pos{}
}

// movedTo is the address the record at addr gets from the entry mv, or ""
// when mv does not name it: addr is mv's from, or, for a move from one
// resource to another (neither keyed), an instance of mv's from, which
// becomes the same instance of mv's to (old[a] -> new[a]).
func movedTo(mv *spec.Moved, addr string) string {
	if addr == mv.From.String() {
		return mv.To.String()
	}
	if mv.From.Keyed || mv.To.Keyed {
		return ""
	}
	a, err := spec.ParseAddress(addr)
	if err != nil || !a.Keyed || a.Name != mv.From.Name {
		return ""
	}
	return spec.Address{Name: mv.To.Name, Key: a.Key, Keyed: true}.String()
}

// movedState is st as it is once the renames and forgets are done: what
// the plan is made against, so that a moved resource plans as unchanged.
func movedState(st *state.State, renames []rename, forgets []Forget) *state.State {
	if len(renames) == 0 && len(forgets) == 0 {
		return st
	}
	c := st.Clone()
	applyMoves(c, renames, forgets)
	return c
}

// applyMoves renames and forgets in st. Each rename happens only while its
// source is recorded and its target is not, and each forget only while the
// record is there, so applying the list again changes nothing: a resumed
// run that finds the state already moved goes on.
func applyMoves(st *state.State, renames []rename, forgets []Forget) {
	for _, rn := range renames {
		r := st.Resources[rn.from]
		if r == nil || st.Resources[rn.to] != nil {
			continue
		}
		moveRecord(st, rn.from, rn.to)
	}
	for _, f := range forgets {
		r := st.Resources[f.Address]
		if r == nil {
			continue
		}
		if r.IdempotencyKey != "" && !slices.Contains(st.Forgotten, r.IdempotencyKey) {
			st.Forgotten = append(st.Forgotten, r.IdempotencyKey)
		}
		delete(st.Resources, f.Address)
	}
}

// moveRecord renames the record from to to, and what names it follows:
// the records that depend on it and the interventions pending on it.
func moveRecord(st *state.State, from, to string) {
	r := st.Resources[from]
	delete(st.Resources, from)
	r.Name = to
	st.Resources[to] = r
	for _, o := range st.Resources {
		o.DependsOn = renamed(o.DependsOn, from, to)
		if o.Prior != nil {
			o.Prior.DependsOn = renamed(o.Prior.DependsOn, from, to)
		}
	}
	for i := range st.Interventions {
		if st.Interventions[i].Resource == from {
			st.Interventions[i].Resource = to
		}
	}
}

// movesMetaStep is the step that makes the renames and forgets in the
// state, journaled like every step, before anything of the run touches a
// resource. The claims of what it forgot are released through their
// providers once the state no longer records them (see StateForget for
// why in that order).
func (s *session) movesMetaStep(renames []rename, moves []Move, forgets []Forget, before *state.State) *engine.Step {
	step := &engine.Step{ID: movesStep, Action: "moved", Policy: engine.Abort}
	step.Execute = func(ctx context.Context, _ string) error {
		if err := s.store.ForStep(step.ID).Mutate(func(st *state.State) error {
			applyMoves(st, renames, forgets)
			return nil
		}); err != nil {
			return err
		}
		s.prog.moved(s.opID, moves, forgets)
		for _, f := range forgets {
			if cur := before.Resources[f.Address]; cur != nil {
				if note := s.release(ctx, cur, before); note != "" {
					s.prog.printf("note: %s\n", note)
				}
			}
		}
		return nil
	}
	return step
}

// shownID is r's id as a plan may show it: masked when it holds a secret.
func shownID(r *state.Resource) string {
	if slices.Contains(r.Sensitive, state.SensitiveID) || secrets.IsSealed(r.ID) {
		return secrets.Mask
	}
	return r.ID
}
