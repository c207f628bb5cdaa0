package stack

import (
	"context"
	"errors"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/dag"
	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// ErrCancelled is returned when the person asked declined a teardown.
var ErrCancelled = errors.New("teardown cancelled: nothing was deleted")

// Teardown deletes everything the state records, dependents first, durable
// included. If any of it is protected the whole teardown is refused before
// anything is deleted (a *plan.RefusedError naming every protected resource).
func Teardown(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.teardown(ctx)
}

// TeardownPlan says what a teardown would delete, without the lock and
// without starting a provider; err is the ladder's refusal, if any.
func TeardownPlan(sp *spec.Spec, opts Options) (*plan.Plan, error) {
	st, err := LoadState(sp, opts)
	if err != nil {
		return nil, err
	}
	pl := plan.ForTeardown(sp, st)
	if len(opts.Targets) > 0 {
		scope, err := targetScope(sp, st, opts.Targets, true, false)
		if err != nil {
			return nil, err
		}
		pl = scopedTeardown(pl, st, scope)
	}
	return pl, pl.Check("teardown")
}

// scopedTeardown is pl limited to scope: what a teardown --target deletes
// (the targets, what depends on them, and what their replaces set aside).
func scopedTeardown(pl *plan.Plan, st *state.State, scope map[string]bool) *plan.Plan {
	out := &plan.Plan{Spec: pl.Spec}
	for _, c := range pl.Changes {
		name := c.Resource
		if r := st.Resources[name]; r != nil && r.Deposed() {
			name = r.DeposedFrom
		}
		if scope[name] {
			out.Changes = append(out.Changes, c)
		}
	}
	return out
}

func (s *session) teardown(ctx context.Context) (*Result, error) {
	st := s.store.Snapshot()
	pl := plan.ForTeardown(s.sp, st)
	if err := s.useTargets(st, true); err != nil {
		return nil, err
	}
	if s.scope != nil {
		pl = scopedTeardown(pl, st, s.scope)
	}
	if err := pl.Check("teardown"); err != nil {
		return nil, s.refused(ctx, err, pl)
	}
	if s.opts.Confirm != nil && len(pl.Changes) > 0 {
		names := make([]string, len(pl.Changes))
		for i, c := range pl.Changes {
			names[i] = c.Resource
		}
		if !s.opts.Confirm(names) {
			return nil, ErrCancelled
		}
	}
	var providers []string
	for _, c := range pl.Changes {
		providers = append(providers, st.Resources[c.Resource].Provider)
	}
	if err := s.startProviders(ctx, providers, st); err != nil {
		return nil, err
	}
	// What every recorded id holds must still be this stack's, checked
	// whole before the first delete, by the planner's own decision.
	if err := s.checkOwned(ctx, st, pl); err != nil {
		return nil, s.refused(ctx, err, pl)
	}
	op := &engine.Operation{ID: s.opID, Type: "teardown", Spec: s.sp.File, User: s.holder.User,
		Parallelism: s.opts.Parallelism, ReadParallelism: s.opts.ReadParallelism,
		Inherited: s.inherited, Stop: s.opts.Stop, Scope: s.opts.Targets}
	op.Finish = s.record(op)
	deps := teardownDependents(st, s.sp)
	for _, c := range pl.Changes {
		op.Steps = append(op.Steps, s.deleteStep(c, st, reasonTeardown, deps))
	}
	s.prog.opStart(s.opID, "teardown")
	s.prog.printf("teardown %s (%s): %d resource(s)\n", s.sp.Stack, s.opID, len(op.Steps))
	s.stopUnsent(op)
	s.prog.start()
	res := s.eng.Run(ctx, op)
	s.prog.end()
	out := s.finish(op, res)
	s.prog.opEnd(out)
	if isLostResult(out) {
		return nil, out.Err
	}
	if out.Outcome == engine.Succeeded && !s.targeted() {
		out.Left = s.strangers(ctx, st)
	}
	return out, nil
}

// teardownDependents is dependents(st) for a teardown's order, with each
// dependency a record names that the state no longer holds bridged to what
// that one depends on in the spec, transitively, down to recorded
// resources. An early delete (deletesEarly) can leave such a gap: a
// teardown that halted on a dependent still there (load_balancer, its
// Verify failed, its record kept) may already have deleted an
// ephemeral resource below it (compute), whose record went with it; the
// next teardown must still delete load_balancer before what compute
// depended on (storage), not at the same time. A bridge that would close
// a cycle (the spec was edited since: its order is not the state's) is
// not taken: the order is then the records' alone, as before early
// deletes, and the gap is named in no error (nothing is refused for it).
func teardownDependents(st *state.State, sp *spec.Spec) map[string][]string {
	bySpec := make(map[string]*spec.Resource, len(sp.Resources))
	for _, r := range sp.Resources {
		if _, dup := bySpec[r.Name]; !dup {
			bySpec[r.Name] = r
		}
	}
	out := map[string][]string{}
	bridged := false
	for _, name := range st.Names() {
		seen := map[string]bool{name: true}
		var add func(d string, direct bool)
		add = func(d string, direct bool) {
			if seen[d] {
				return
			}
			seen[d] = true
			if st.Resources[d] != nil {
				out[d] = append(out[d], name)
				bridged = bridged || !direct
				return
			}
			if r := bySpec[d]; r != nil {
				for _, dd := range r.DependsOn {
					add(dd, false)
				}
			}
		}
		for _, d := range st.Resources[name].DependsOn {
			add(d, true)
		}
	}
	if !bridged {
		return out
	}
	// Only a bridge can close a cycle (the records alone are acyclic):
	// the graph is checked only then.
	g := dag.New()
	for d, ns := range out {
		for _, n := range ns {
			g.Connect(n, d)
		}
	}
	if len(g.Cycles()) > 0 {
		return dependents(st)
	}
	return out
}

// strangers is what a teardown left because it is not this stack's to
// delete: the spec's resources the state did not record that reality
// still holds under the identity the spec gives them (after the stack's
// folder was lost, or what a copy of a resource left). A teardown deletes
// only what the state records, so it never touches them; its report names
// them instead of saying reality matches. Each is the planner's decision
// for it (a conflict, or one carrying this stack's key but unrecorded); a
// resource whose config references another (not known without it) or
// that the spec imports is not looked for, and one that cannot be read is
// named with the error.
func (s *session) strangers(ctx context.Context, st *state.State) []plan.Change {
	var look []*spec.Resource
	for _, r := range s.sp.Resources {
		if st.Resources[r.Name] == nil && r.Import == "" && !hasRefs(r) {
			look = append(look, r)
		}
	}
	if len(look) == 0 {
		return nil
	}
	var providers []string
	for _, r := range look {
		providers = append(providers, r.Provider)
	}
	if err := s.startProviders(ctx, providers, st); err != nil {
		return []plan.Change{{Resource: look[0].Name, Type: look[0].Type, Provider: look[0].Provider, Action: plan.Conflict,
			Reason: fmt.Sprintf("could not be looked for (%v): whether something is left under the spec's identities is not known", err)}}
	}
	var left []plan.Change
	now := s.store.Snapshot() // what the state records once the teardown ran
	for _, r := range look {
		obs, err := s.reads.Read(ctx, r, nil)
		if err != nil {
			left = append(left, plan.Change{Resource: r.Name, Type: r.Type, Provider: r.Provider, Action: plan.Conflict,
				Reason: fmt.Sprintf("could not be read (%v): whether something is left there is not known", err)})
			continue
		}
		switch c := s.decide(r, nil, obs, now); c.Action {
		case plan.Conflict:
			left = append(left, c)
		case plan.Update, plan.NoOp:
			if c.Ownership == plan.Recovered {
				c.Reason = fmt.Sprintf("%s %s exists (id %s) under this stack's key but is not recorded (a create a crash interrupted): run `bulwark resume` or `bulwark apply` to record it, then teardown", r.Type, r.Name, c.FoundID)
				left = append(left, c)
			}
		}
	}
	return left
}

// removeStep deletes, during an apply, a resource gone from the spec.
// A rollback's (`rollback --to N`) deletes go through the ladder's rollback
// column: only an ephemeral one is deleted (the planner retains the rest).
func (s *session) removeStep(c plan.Change, st *state.State, deps map[string][]string) *engine.Step {
	if s.opType == "rollback" {
		return s.deleteStep(c, st, reasonRollback, deps)
	}
	return s.deleteStep(c, st, reasonRemoved, deps)
}

// deleteStep deletes a recorded resource after everything recorded as
// depending on it: Check = Read (gone: skipped; another's: refused),
// Execute = the deletion path, Verify = Read finds nothing. Of a provider
// whose Delete checks the key itself (deleteChecksKey), the Check reads
// nothing and the Delete refuses what is not this stack's. Nothing can
// undo a delete, so a failure goes on with what does not depend on it.
func (s *session) deleteStep(c plan.Change, st *state.State, why reason, deps map[string][]string) *engine.Step {
	res := st.Resources[c.Resource]
	// Its start is journaled while its Check reads (the Check decides
	// nothing about what the step does, only whether it goes on), so the
	// Delete goes out the moment the Check has decided and a slot is free.
	step := &engine.Step{ID: c.Resource, Resource: c.Resource, Type: res.Type, Action: "delete", Policy: engine.Continue, StartWithCheck: true}
	// Dependents go first: this step waits for every recorded dependent
	// that is also being deleted (deps: see dependents).
	step.DependsOn = append(step.DependsOn, deps[c.Resource]...)
	step.EarlyDelete = s.deletesEarly(res, why)
	staged := s.store.ForStep(step.ID)
	var seen *plan.Observation // what the Check read of it, for the Delete
	step.Check = func(ctx context.Context) (bool, error) {
		if s.deleteChecksKey(res) {
			// The Delete itself refuses what no longer carries this
			// stack's key (deleteResource), a stronger answer than any
			// read before it, which a takeover right after could
			// outdate. What is gone already is deleted as a no-op, and
			// the Verify finds it gone.
			return false, nil
		}
		obs, err := s.reads.CheckRecorded(ctx, res)
		if err != nil {
			return false, err
		}
		if !obs.Exists {
			s.forget(staged, res)
			return true, nil
		}
		// What the recorded id holds now must still be what this stack
		// made: the planner's decision for a recorded resource, so a
		// teardown never deletes what another stack owns.
		if d := plan.Decide(s.input(nil, res, obs)); d.Action == plan.Conflict {
			return false, fmt.Errorf("%s: %s", res.Name, d.Reason)
		}
		seen = obs
		return false, nil
	}
	s.deleteThenVerify(step, why, func() *state.Resource { return res }, func() *plan.Observation { return seen })
	return step
}

// deletesEarly is the teardown's order rule: the Delete of an ephemeral
// resource may start once each of its dependents (deleted first) has had
// its Delete return ok, its "execute ok" durable, without waiting for the
// read that verifies it gone (engine.Step.EarlyDelete); its Check, the
// ownership read that decides its Delete, reads only then, never while a
// dependent's Delete is in flight (and reads nothing when the Delete
// checks the key itself: deleteChecksKey). Anything else, a durable resource
// first, waits for everything that depends on it, directly or through
// resources deleted early, to be verified gone: the engine counts a step
// verified only once what it depends on is. Should a dependent's Verify
// find it still there, the run halts (no Delete starts from then on;
// those in flight finish and are recorded), the teardown ends failed, and
// the dependent keeps its record (dropped only once verified gone: see
// deleteThenVerify), so an ephemeral resource below it may have gone
// before it while nothing durable has. A protected resource never gets
// here: the plan refuses the teardown whole.
//
// Only a teardown's deletes: a resource gone from the spec is deleted by
// an apply among creates and updates whose failure rolls the run back,
// and a rollback's deletes are its own (`rollback --to`); both keep
// waiting for verified, where nothing more than a teardown's speed is at
// stake.
func (s *session) deletesEarly(res *state.Resource, why reason) bool {
	return why == reasonTeardown && s.levelOf(res) == protection.Ephemeral
}

// deleteChecksKey reports whether the Delete of res decides its ownership
// itself: its provider deletes only what carries the key the state
// records (providers.Capabilities.DeleteChecksKey), and the state records
// one.
func (s *session) deleteChecksKey(res *state.Resource) bool {
	p := s.plugins[res.Provider]
	return p != nil && res.IdempotencyKey != "" && capsOf(p).DeleteChecksKey
}

// deleteThenVerify gives step the one deletion path as its Execute (under
// why) and, as its Verify, that the provider no longer finds the resource:
// by what the Delete read back in its own call when it offers that
// (providers.Capabilities.DeleteReadsBack), else by a Read. res is the record the
// step deletes, known once its Check has run; seen what that Check read of
// it (nil: nothing), which the Delete is given (see deleteResource). The
// record is dropped once that Verify has passed (Step.Verified), never on
// the Delete's answer alone.
func (s *session) deleteThenVerify(step *engine.Step, why reason, res func() *state.Resource, seen func() *plan.Observation) {
	var readBack *providers.ReadResponse
	staged := s.store.ForStep(step.ID)
	step.Execute = func(ctx context.Context, _ string) error {
		r := res()
		action, rb, err := s.deleteResource(ctx, nil, r, why, seen())
		readBack = rb
		if err == nil && action != "delete" {
			return fmt.Errorf("internal: %s was not deleted (%s)", r.Name, action)
		}
		return err
	}
	step.Verify = func(ctx context.Context) error {
		r := res()
		resp := readBack
		if resp == nil {
			var err error
			resp, err = s.plugins[r.Provider].Read(ctx, &providers.ReadRequest{Type: r.Type, Name: r.Address(), ID: r.ID, Private: r.PrivateData()})
			if err != nil {
				return err
			}
		}
		if resp.Exists {
			return fmt.Errorf("%s (%s) still exists after delete", r.Name, r.ID)
		}
		return nil
	}
	step.Verified = func() {
		// Verified gone: only now is its record dropped, with the
		// "verify ok" (the engine calls this once the "execute ok" is
		// durable, so nothing else of the step is being committed). An
		// answer of ok is not the proof: a crash before the read leaves
		// the record, and the resume reads the resource again, as the
		// next teardown does after a Verify that found it still there.
		if r := res(); r != nil {
			s.forget(staged, r)
		}
	}
}
