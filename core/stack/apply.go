package stack

import (
	"context"
	"slices"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Apply converges the stack to sp: creates what is missing, updates what
// changed, deletes what the spec no longer has (under the ladder). A failed
// step is handled by its resource's on_failure policy.
func Apply(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.apply(ctx)
}

func (s *session) apply(ctx context.Context) (*Result, error) {
	st := s.store.Snapshot()
	opType := "apply"
	if len(st.Resources) > 0 || st.Current > 0 {
		opType = "update"
	}
	return s.converge(ctx, opType, 0)
}

// converge is the one pipeline behind apply, update and rollback: start the
// providers, validate, plan, check the whole plan against the ladder, then
// run the steps (an update's and a rollback's own four first).
func (s *session) converge(ctx context.Context, opType string, target int) (*Result, error) {
	s.opType = opType
	st := s.store.Snapshot()
	if err := s.startProviders(ctx, providersFor(s.sp, st), st); err != nil {
		return nil, err
	}
	// The spec's moved: and removed: entries are followed first, and the
	// plan is made against the state as they leave it: a renamed resource
	// plans as what it is, unchanged. A rollback's older spec is applied as
	// it is: its resources are what it names (see docs/ownership.md).
	var moved *engine.Step
	if opType != "rollback" {
		renames, moves, forgets, err := s.followMoves(st)
		if err != nil {
			return nil, err
		}
		s.moves, s.forgets = moves, forgets
		if len(renames) > 0 || len(forgets) > 0 {
			moved = s.movesMetaStep(renames, moves, forgets, st)
			st = movedState(st, renames, forgets)
		}
	}
	pl, obs, err := s.validatedPlan(ctx, st)
	if err != nil {
		return nil, err
	}
	if s.saved != nil {
		if err := s.checkSaved(pl, obs); err != nil {
			return nil, err
		}
	}
	s.prog.levels = map[string]string{}
	for _, c := range pl.Changes {
		s.prog.levels[c.Resource] = c.Protection.String()
	}
	// The whole plan is checked before its first step, by the same code a
	// dry run uses: the ladder, then ownership.
	if err := pl.Check(opType); err != nil {
		return nil, s.refused(ctx, err, pl)
	}
	if s.opts.Review != nil && s.saved == nil && !s.opts.Review(s.preview(pl, obs, st)) {
		return nil, &CancelledError{Op: opType}
	}
	op := &engine.Operation{ID: s.opID, Type: opType, Spec: s.sp.File, Revision: target, User: s.holder.User,
		Parallelism: s.opts.Parallelism, ReadParallelism: s.opts.ReadParallelism,
		Inherited: s.inherited, Stop: s.opts.Stop, Replace: s.opts.Replace, Scope: s.opts.Targets}
	if op.Data, err = s.recordDataReads(); err != nil {
		return nil, err
	}
	op.Finish = s.record(op)
	var gate []string
	s.noop = opType == "update" && !pl.HasChanges() && moved == nil && isCurrentSpec(st, s.sp)
	if opType != "apply" && !s.noop {
		op.Steps = s.updateSteps(opType, pl, target)
		gate = []string{op.Steps[len(op.Steps)-1].ID}
	}
	if moved != nil {
		// After the update's own steps (its backup holds the state from
		// before the renames), before any step that touches a resource.
		moved.DependsOn = gate
		op.Steps = append(op.Steps, moved)
		gate = []string{moved.ID}
	}
	removed := map[string]bool{}
	for _, c := range pl.Changes {
		_, inSpec := s.specResource(c.Resource)
		removed[c.Resource] = !inSpec
	}
	deps := dependents(st)
	soft := map[*engine.Step][]string{}
	var cleanups []*engine.Step
	leftovers := map[string][]string{} // address -> the steps deleting what earlier runs set aside
	for _, c := range pl.Changes {
		var step *engine.Step
		if r := st.Resources[c.Resource]; r.Deposed() {
			cs := s.cleanupStep(c.Resource, r.Type, nil)
			if r.DeposedBy == s.opID {
				// Set aside by this operation's interrupted part: deleted
				// in its cleanup phase, as it would have been.
				cleanups = append(cleanups, cs)
				continue
			}
			// Left by an earlier operation whose cleanup failed: deleted
			// first, as a removal, before anything of this run could meet
			// it (a replace back to its identity); nothing depends on it
			// any more, and its run consented to it.
			cs.Cleanup, cs.DependsOn = false, slices.Clone(gate)
			op.Steps = append(op.Steps, cs)
			leftovers[r.DeposedFrom] = append(leftovers[r.DeposedFrom], cs.ID)
			continue
		}
		switch {
		case removed[c.Resource] && c.Retained:
			continue // kept, retained: nothing to do (see step_retain.go)
		case removed[c.Resource] && c.Action == plan.Retain:
			step = s.retainStep(c, st)
		case removed[c.Resource]:
			step = s.removeStep(c, st, deps)
		default:
			r, _ := s.specResource(c.Resource)
			step = s.applyStep(c, r)
			// A resource being replaced waits until what the state records
			// as depending on it, and is being removed, is gone.
			if c.Action == plan.Replace {
				for _, name := range deps[c.Resource] {
					if removed[name] {
						soft[step] = append(soft[step], name)
					}
				}
			}
		}
		step.DependsOn = append(step.DependsOn, gate...)
		op.Steps = append(op.Steps, step)
		if cur := st.Resources[c.Resource]; c.Action == plan.Replace && cur != nil {
			// What this replace sets aside is deleted in the cleanup phase.
			cleanups = append(cleanups, s.cleanupStep(state.DeposedName(c.Resource, s.opID), cur.Type, nil))
		}
	}
	for _, step := range op.Steps {
		// What an address's step makes waits for its old objects to go.
		step.DependsOn = append(step.DependsOn, leftovers[step.ID]...)
	}
	op.Steps = s.withCleanup(op.Steps, cleanups, st)
	// A removal the cleanup phase took runs after every main step: a
	// replace cannot also wait for it (that would be a cycle), so that
	// preferred order gives way.
	for step, names := range soft {
		soft[step] = slices.DeleteFunc(names, func(n string) bool { return inCleanup(op.Steps, n) })
	}
	addSoftOrder(op.Steps, soft)
	s.prog.opStart(s.opID, opType)
	s.prog.printf("%s %s (%s): %d resource(s), up to %d at once\n", opType, s.sp.Stack, s.opID, len(pl.Changes), s.opts.Parallelism)
	s.stopUnsent(op)
	s.prog.start()
	res := s.eng.Run(ctx, op)
	s.prog.end()
	out := s.finish(op, res)
	s.prog.opEnd(out)
	if isLostResult(out) {
		return nil, out.Err
	}
	s.dropIdleBackup(ctx, out)
	return out, nil
}

// inCleanup reports whether the step id runs in the cleanup phase.
func inCleanup(steps []*engine.Step, id string) bool {
	for _, st := range steps {
		if st.ID == id {
			return st.Cleanup
		}
	}
	return false
}

// addSoftOrder adds orderings that are preferred but not required; if
// together they would make a cycle, none is added.
func addSoftOrder(steps []*engine.Step, soft map[*engine.Step][]string) {
	if len(soft) == 0 {
		return
	}
	before := make(map[*engine.Step][]string, len(soft))
	for st, deps := range soft {
		before[st] = st.DependsOn
		st.DependsOn = append(slices.Clone(st.DependsOn), deps...)
	}
	if _, ok := engine.Graph(steps).TopoOrder(); !ok {
		for st, deps := range before {
			st.DependsOn = deps
		}
	}
}
