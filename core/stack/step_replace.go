package stack

// Replacement: create first, delete last (docs/architecture.md,
// "Replacement: create first, delete last").
//
// A replace first sets the old object aside: its record moves, in one
// durable write, from its address to state.DeposedName(address, op), marked
// deposed (Terraform keeps a "deposed" object the same way). Then:
//
//   - create first (the provider says old and new can exist at once): the
//     new one is made and recorded at the address; the old one is deleted
//     only in the operation's cleanup phase, a step per deposed record that
//     runs after every other step succeeded (engine.Step.Cleanup), journaled
//     like any step, so a resume finishes it;
//   - delete first (they cannot): the old one is deleted through the one
//     deletion path, its record kept (deposed) until the cleanup drops it,
//     then the new one is made.
//
// A rollback of the replace deletes the replacement (reasonUndoReplace) and
// makes the deposed record current again: the old resource when it still
// exists (create first), else its configuration made again (delete first),
// with a new id, which the run reports. At every instant the state records
// the old object, the new one or both, so a kill -9 anywhere orphans
// nothing.

import (
	"context"
	"fmt"
	"strings"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/opstore"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// cleanupBarrier is the step every cleanup step waits for: it waits for
// every other step, and does nothing.
const cleanupBarrier = metaPrefix + "cleanup"

// depose sets cur aside for the replace this operation makes: its record
// moves to its deposed name, durably, before anything of the replace
// happens. It returns the deposed record.
func (s *session) depose(ctx context.Context, cur *state.Resource) (*state.Resource, error) {
	name := cur.Address()
	if o := s.store.Resource(state.DeposedName(name, s.opID)); o != nil {
		// One object of an address is set aside per operation: never
		// write over one, which would lose track of it.
		return nil, fmt.Errorf("replace %s: this operation already set aside %s (%s); not replacing it twice", name, o.Name, o.ID)
	}
	dep := cur.Clone()
	dep.Name, dep.DeposedFrom, dep.DeposedBy = state.DeposedName(name, s.opID), name, s.opID
	// What holds a secret stays sealed under its new name.
	dep.Sensitive = addSensitive(dep.Sensitive, s.derivedSensitive(dep.Config))
	dep.Sensitive = addSensitive(dep.Sensitive, s.derivedSensitive(dep.Attributes))
	ch := storage.Change{Put: []*state.Resource{dep}}
	if r := s.store.Resource(name); r != nil && r.ID == cur.ID {
		ch.Delete = []string{name}
	}
	// Not with the step's next record: durable now, before the provider
	// is asked to make or delete anything.
	if err := s.store.WriteNow(ctx, ch); err != nil {
		return nil, fmt.Errorf("set %s (%s) aside for its replace: %w", name, cur.ID, err)
	}
	return dep, nil
}

// replace carries out a replace of r, whose current record is cur: the old
// one set aside, then the new one made first (create first), or the old
// one deleted first.
func (s *session) replace(ctx context.Context, staged *opstore.Stage, r *spec.Resource, m *stepMode, key string) error {
	if m.cur == nil {
		var err error
		m.readBack, err = s.create(ctx, staged, r, key)
		return err
	}
	dep, err := s.depose(ctx, m.cur)
	if err != nil {
		return err
	}
	if m.Mode != plan.CreateFirst {
		if _, _, err := s.deleteResource(ctx, staged, dep, reasonDeleteFirst, nil); err != nil {
			return fmt.Errorf("replace (delete first): %w", err)
		}
		s.deletedFirst.Lock()
		s.deletedFirst.names = append(s.deletedFirst.names, dep.Name)
		s.deletedFirst.Unlock()
	}
	m.readBack, err = s.create(ctx, staged, r, key)
	return err
}

// deposedOf lists, in state order, the deposed records of the state.
func deposedOf(st *state.State) []*state.Resource {
	var out []*state.Resource
	for _, n := range st.Names() {
		if r := st.Resources[n]; r.Deposed() {
			out = append(out, r)
		}
	}
	return out
}

// cleanupStep deletes the deposed record named id (one this operation's
// replace sets aside, or one an earlier operation left) in the cleanup
// phase: Check = it is recorded and exists (gone: the record is dropped),
// Execute = the one deletion path (the ladder: a durable one was replaced
// with the run's consent), Verify = Read finds nothing. A failure goes on
// with the others and leaves the record for the next run.
func (s *session) cleanupStep(id, typ string, deps []string) *engine.Step {
	step := &engine.Step{ID: id, Resource: id, Type: typ, Action: string(plan.Delete), Policy: engine.Continue, Cleanup: true,
		DependsOn: append([]string{cleanupBarrier}, deps...)}
	var res *state.Resource
	staged := s.store.ForStep(step.ID)
	var seen *plan.Observation // what the Check read of it, for the Delete
	step.Check = func(ctx context.Context) (bool, error) {
		res = s.store.Resource(id)
		if res == nil {
			return true, nil // nothing was set aside (the replace was not needed after all)
		}
		obs, err := s.reads.CheckRecorded(ctx, res)
		if err != nil {
			return false, err
		}
		if !obs.Exists {
			// Deleted first, or gone: only the record is left.
			s.forget(staged, res)
			return true, nil
		}
		if d := plan.Decide(plan.Input{Recorded: res, Observed: obs, Identity: s.identity()}); d.Action == plan.Conflict {
			return false, fmt.Errorf("%s: %s", res.Name, d.Reason)
		}
		seen = obs
		return false, nil
	}
	s.deleteThenVerify(step, reasonReplace, func() *state.Resource { return res }, func() *plan.Observation { return seen })
	return step
}

// barrierStep waits for every step of steps, and does nothing: the cleanup
// phase starts after it.
func barrierStep(steps []*engine.Step) *engine.Step {
	b := &engine.Step{ID: cleanupBarrier, Action: "cleanup", Policy: engine.Abort,
		Check:   func(context.Context) (bool, error) { return true, nil },
		Execute: func(context.Context, string) error { return nil }}
	for _, st := range steps {
		b.DependsOn = append(b.DependsOn, st.ID)
	}
	return b
}

// undoReplace undoes this operation's replace of name: the replacement
// it made is deleted (found by its record, else by key), then the old one
// it set aside is current again; when a delete first removed it, its
// configuration is made again (its id changes, and the run says so).
func (s *session) undoReplace(ctx context.Context, staged *opstore.Stage, name, key string) (string, error) {
	st := s.store.Snapshot()
	cur, dep := st.Resources[name], st.Resources[state.DeposedName(name, s.opID)]
	if dep == nil {
		if cur != nil && cur.CreatedBy == s.opID {
			// The old one was set aside and the cleanup phase already
			// deleted it: the replacement is all there is, so it stays.
			s.prog.printf("note: %s (%s) is kept: the resource it replaced was already deleted by this operation's cleanup\n", name, cur.ID)
			return "", nil
		}
		// Nothing was set aside: the replace failed before it changed
		// anything, and what is recorded is what was there.
		return "", nil
	}
	action := ""
	if cur == nil || cur.CreatedBy != s.opID {
		found, err := s.findByKey(ctx, name, cur, key)
		if err != nil {
			return "", err
		}
		cur = found
	}
	if cur != nil && cur.CreatedBy == s.opID {
		a, _, err := s.deleteResource(ctx, staged, cur, reasonUndoReplace, nil)
		if err != nil {
			return a, err
		}
		action = a
	}
	a, err := s.reinstate(ctx, staged, dep, key)
	if action == "" || a == "create" {
		action = a
	}
	return action, err
}

// reinstate makes the deposed record dep current again at its address:
// as it is when the old resource still exists, else (deleted first) with
// its configuration made again under a key derived from the replace's.
func (s *session) reinstate(ctx context.Context, staged *opstore.Stage, dep *state.Resource, key string) (string, error) {
	name := dep.Address()
	p := s.plugins[dep.Provider]
	if p == nil {
		return "", fmt.Errorf("undo %s: provider %q is not running", name, dep.Provider)
	}
	back := dep.Clone()
	back.Name, back.DeposedFrom, back.DeposedBy = name, "", ""
	resp, err := p.Read(ctx, &providers.ReadRequest{Type: dep.Type, Name: name, ID: dep.ID, Config: dep.Config, Private: dep.PrivateData()})
	if err != nil {
		return "", fmt.Errorf("undo %s: read the resource it replaced: %w", name, err)
	}
	// The events name what the undo did with the documented actions: the
	// old one made current again is an update (of the record), made again
	// a create; deleting the replacement, before it, a delete.
	action := "update"
	if !resp.Exists {
		// Deleted first: its configuration is made again. The key is
		// derived from the replace's, so a resume of this undo finds what
		// an interrupted one made instead of making a second one.
		made, err := p.Create(ctx, &providers.CreateRequest{Type: dep.Type, Name: name, Config: dep.Config, IdempotencyKey: key + "-undo", Protection: dep.Protection})
		if err != nil {
			return "create", fmt.Errorf("undo %s: make its prior configuration again: %w", name, err)
		}
		back.ID, back.Attributes, back.IdempotencyKey, back.Imported = made.ID, made.Attributes, key+"-undo", false
		back.SetPrivate(made.Private)
		back.UpdatedBy = s.opID
		action = "create"
		note := ""
		if dep.Protection != protection.Ephemeral {
			note = " (made again empty: the data it held was deleted by the replace)"
		}
		s.prog.printf("note: %s was made again with its prior configuration: its id changed from %s to %s%s\n", name, dep.ID, made.ID, note)
		if err := s.repoint(ctx, staged, name, dep.ID, made.ID); err != nil {
			return action, err
		}
	}
	// One change: the deposed record is dropped as the address takes it,
	// after (in the step's same write) the replacement's record was.
	staged.Change(storage.Change{Put: []*state.Resource{back}, Delete: []string{dep.Name}})
	return action, nil
}

// withCleanup adds the cleanup phase to an operation's steps: after a
// barrier that waits for every other step, the cleanup steps, each deposed
// object after the deposed ones that depended on it; and a removal (a
// resource gone from the spec) that a deposed object depends on moves to
// the cleanup phase too, after it, so nothing is deleted before what
// depends on it.
func (s *session) withCleanup(steps, cleanups []*engine.Step, st *state.State) []*engine.Step {
	if len(cleanups) == 0 {
		return steps
	}
	byID := map[string]*engine.Step{}
	for _, c := range cleanups {
		byID[c.ID] = c
	}
	// What each deposed object depended on: its record's, or for one this
	// run sets aside, the record it is set aside from.
	oldDeps := func(id string) []string {
		if r := st.Resources[id]; r != nil {
			return r.DependsOn
		}
		for _, n := range st.Names() {
			if state.DeposedName(n, s.opID) == id {
				return st.Resources[n].DependsOn
			}
		}
		return nil
	}
	addressOf := func(id string) string {
		if r := st.Resources[id]; r != nil {
			return r.Address()
		}
		for _, n := range st.Names() {
			if state.DeposedName(n, s.opID) == id {
				return n
			}
		}
		return id
	}
	removals := map[string]*engine.Step{}
	for _, step := range steps {
		if step.Action == string(plan.Delete) {
			removals[step.ID] = step
		}
	}
	for _, c := range cleanups {
		for _, d := range oldDeps(c.ID) {
			// Another deposed object the one of c depended on waits for c.
			for _, o := range cleanups {
				if o != c && addressOf(o.ID) == d {
					o.DependsOn = append(o.DependsOn, c.ID)
				}
			}
			if rm := removals[d]; rm != nil {
				rm.Cleanup = true
				rm.DependsOn = append(rm.DependsOn, cleanupBarrier, c.ID)
			}
		}
	}
	var main []*engine.Step
	for _, step := range steps {
		if !step.Cleanup {
			main = append(main, step)
		}
	}
	for _, step := range steps {
		if step.Cleanup {
			// A removal moved to the cleanup phase: it no longer waits for
			// the deposed objects that depend on it among the main steps.
			step.DependsOn = append(step.DependsOn, cleanupBarrier)
		}
	}
	out := append(steps, barrierStep(main))
	return append(out, cleanups...)
}

// undepose puts back at its address the object a replace of op set aside
// when the replace was interrupted before it made anything (nothing found by
// its key, nothing recorded at the address) and the old one still exists:
// the run going on decides that replace again from where it started,
// rather than meeting its own old object as a stranger. One a delete first
// already removed stays set aside: its record goes in the cleanup phase,
// and the run going on makes the new one.
func (s *session) undepose(ctx context.Context, name, op string) error {
	dep := s.store.Resource(state.DeposedName(name, op))
	if dep == nil {
		return nil
	}
	p := s.plugins[dep.Provider]
	if p == nil {
		return fmt.Errorf("resume %s: provider %q is not running", name, dep.Provider)
	}
	resp, err := p.Read(ctx, &providers.ReadRequest{Type: dep.Type, Name: name, ID: dep.ID, Config: dep.Config, Private: dep.PrivateData()})
	if err != nil {
		return fmt.Errorf("resume %s: read what its replace set aside: %w", name, err)
	}
	if !resp.Exists {
		return nil
	}
	back := dep.Clone()
	back.Name, back.DeposedFrom, back.DeposedBy = name, "", ""
	return s.store.WriteNow(ctx, storage.Change{Put: []*state.Resource{back}, Delete: []string{dep.Name}})
}

// repoint puts the dependents of a resource a rollback made again (its id
// changed from oldID to newID) back to it: every recorded resource whose
// config names the old id (a reference resolved to it, the whole value or
// inside a string) is updated in place to name the new one. One whose
// change would need a replace (a force_new attribute) is left naming the
// old id, and the run says so: the next apply replaces it. The records ride
// on staged's record.
func (s *session) repoint(ctx context.Context, staged *opstore.Stage, name, oldID, newID string) error {
	if oldID == "" || oldID == newID {
		return nil
	}
	st := s.store.Snapshot()
	for _, n := range st.Names() {
		r := st.Resources[n]
		if n == name || r.Deposed() {
			continue
		}
		cfg, changed := substitute(r.Config, oldID, newID)
		if !changed {
			continue
		}
		p := s.plugins[r.Provider]
		if p == nil {
			continue
		}
		keys := plan.ChangedKeys(r.Config, cfg.(map[string]any))
		rt, _ := p.Schema().ResourceType(r.Type)
		forced := false
		for _, k := range keys {
			if a, ok := rt.Attribute(k); ok && a.ForceNew {
				forced = true
			}
		}
		if forced {
			s.prog.printf("note: %s still names %s's old id %s in %s (force_new): the next apply replaces it\n", n, name, oldID, strings.Join(keys, ", "))
			continue
		}
		resp, err := p.Update(ctx, &providers.UpdateRequest{Type: r.Type, Name: n, ID: r.ID, PriorAttributes: r.Attributes, Config: cfg.(map[string]any), Protection: r.Protection, Private: r.PrivateData()})
		if err != nil {
			return fmt.Errorf("undo %s: put %s back to its new id: %w", name, n, err)
		}
		next := r.Clone()
		next.Config, next.Attributes, next.UpdatedBy = cfg.(map[string]any), resp.Attributes, s.opID
		next.SetPrivate(resp.Private)
		staged.Put(next)
		s.prog.printf("note: %s was put back to %s's new id %s\n", n, name, newID)
	}
	return nil
}

// substitute returns v with every occurrence of old in its strings
// replaced by new, and whether anything was.
func substitute(v any, old, new string) (any, bool) {
	switch t := v.(type) {
	case string:
		if strings.Contains(t, old) {
			return strings.ReplaceAll(t, old, new), true
		}
	case map[string]any:
		out, hit := make(map[string]any, len(t)), false
		for k, e := range t {
			var c bool
			out[k], c = substitute(e, old, new)
			hit = hit || c
		}
		return out, hit
	case []any:
		out, hit := make([]any, len(t)), false
		for i, e := range t {
			var c bool
			out[i], c = substitute(e, old, new)
			hit = hit || c
		}
		return out, hit
	}
	return v, false
}
