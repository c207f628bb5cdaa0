package stack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// Planned is one resource of a dry run: the change Check found necessary.
type Planned struct {
	plan.Change
	// Observed is what the provider reported (nil when it found nothing).
	Observed map[string]any `json:"observed,omitempty"`
	// Drift says what differs from the state's record, if anything.
	Drift string `json:"drift,omitempty"`
	// Vanished is set when a durable or protected resource the state records
	// can no longer be found: its data may be gone.
	Vanished bool `json:"vanished,omitempty"`
	// Keyless: its provider takes no idempotency key (one built for
	// Terraform), so a create of it that a crash interrupts stops resume
	// for a person (UnknownCreateError).
	Keyless bool `json:"keyless,omitempty"`
	// Sensitive lists attributes whose values must not be shown.
	Sensitive []string `json:"sensitive,omitempty"`
	// Unknown lists the attributes whose values are known only after apply
	// (they reference a resource this run creates or replaces): shown as
	// "(known after apply)", in After and in the text.
	Unknown []string `json:"unknown,omitempty"`
}

// Preview is what a dry run found: every step's Check, no Execute.
type Preview struct {
	Stack string `json:"stack"`
	// DataReads are the data entries the plan read, in the spec's order.
	DataReads []DataRead `json:"data_reads,omitempty"`
	// StackReads are the other stacks whose outputs the plan read.
	StackReads []StackRead `json:"stack_reads,omitempty"`
	Changes    []Planned   `json:"changes"`
	// Refused is the ladder's refusal of this plan, if any.
	Refused *plan.RefusedError `json:"refused,omitempty"`
	// Conflict is ownership's refusal: resources that exist but are not
	// this stack's. An apply of this plan is refused with exit 1.
	Conflict *plan.ConflictError `json:"conflict,omitempty"`
	// Revision is the current revision (0: none) and Variables the
	// variables whose values differ from the ones it was applied with.
	Revision int `json:"revision,omitempty"`
	// Moves are the renames the spec's moved: entries make in the state,
	// and Forgets the records its removed: entries (destroy: false) drop,
	// keeping their objects; an apply does both before anything else.
	Moves     []Move           `json:"moves,omitempty"`
	Forgets   []Forget         `json:"forgets,omitempty"`
	Variables []VariableChange `json:"variables,omitempty"`
	// Running is who holds the stack's lock while the plan was made (an
	// operation in progress: what it read may be changing), or nil.
	Running *storage.Holder `json:"-"`
	// Targets are the plan's --target addresses: it covers only them and
	// what they depend on (see PartialWarning).
	Targets []string `json:"targets,omitempty"`
}

// ownStackKeys reports whether any observation carries a key that names
// stack (issued by it, under whatever lineage).
func ownStackKeys(obs map[string]*plan.Observation, stack string) bool {
	for _, o := range obs {
		if o == nil || !o.Exists {
			continue
		}
		if k, ok := plan.ParseKey(o.Key); ok && k.Stack == stack {
			return true
		}
	}
	return false
}

// VariableChange is a variable whose value differs from the one the current
// revision was applied with. A sensitive one's values are secrets.Mask on
// both sides (that it changed is shown, never what it is).
type VariableChange struct {
	Name      string `json:"name"`
	Before    any    `json:"before,omitempty"` // absent: the revision had none
	After     any    `json:"after,omitempty"`  // absent: the spec no longer declares it
	Sensitive bool   `json:"sensitive"`
}

// variableChanges compares the run's variable values with the current
// revision's, sorted by name.
func (s *session) variableChanges(st *state.State) []VariableChange {
	rev, ok := st.Revision(st.Current)
	if !ok {
		return nil
	}
	sensitive := map[string]bool{}
	for _, n := range rev.SensitiveVariables {
		sensitive[n] = true
	}
	for _, n := range s.sensitiveVariableNames() {
		sensitive[n] = true
	}
	names := map[string]bool{}
	for n := range rev.Variables {
		names[n] = true
	}
	for n := range s.sp.Values {
		names[n] = true
	}
	var out []VariableChange
	for _, n := range slices.Sorted(maps.Keys(names)) {
		before, had := rev.Variables[n]
		after, has := s.sp.Values[n]
		if had && has && plan.Equal(before, after) {
			continue
		}
		c := VariableChange{Name: n, Before: before, After: after, Sensitive: sensitive[n]}
		if c.Sensitive {
			if had {
				c.Before = secrets.Mask
			}
			if has {
				c.After = secrets.Mask
			}
		}
		out = append(out, c)
	}
	return out
}

// HasChanges reports whether anything would be executed (or refused).
func (p *Preview) HasChanges() bool {
	if len(p.Moves) > 0 || len(p.Forgets) > 0 {
		return true
	}
	for _, c := range p.Changes {
		if c.Action != plan.NoOp {
			return true
		}
	}
	return false
}

// Err is the refusal an apply of this plan would meet, or nil: the same
// error, and so the same exit code, as the apply's.
func (p *Preview) Err() error {
	switch {
	case p.Refused != nil:
		return p.Refused
	case p.Conflict != nil:
		return p.Conflict
	}
	return nil
}

// Plan is the dry run of an apply: it starts the providers, reads reality
// for every resource and decides each with the function an apply's Check
// uses, and never Executes. It takes no lock and writes nothing under the
// state folder, so it can inspect a stack while an apply is in flight.
func Plan(ctx context.Context, sp *spec.Spec, opts Options) (*Preview, error) {
	return dryRun(ctx, sp, opts, nil)
}

// dryRun is Plan; then, unless the plan is refused, save is given what it
// was made from (plan --out).
func dryRun(ctx context.Context, sp *spec.Spec, opts Options, save func(*session, *state.State, *Preview, map[string]*plan.Observation) error) (*Preview, error) {
	s, st, done, err := inspect(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer done()
	renames, moves, forgets, err := s.followMoves(st)
	if err != nil {
		return nil, err
	}
	s.moves, s.forgets = moves, forgets
	st = movedState(st, renames, forgets)
	pl, obs, err := s.validatedPlan(ctx, st)
	if err != nil {
		return nil, err
	}
	if s.lineage == "" && ownStackKeys(obs, sp.Stack) {
		// The state had no lineage when it was read (nothing recorded:
		// a first apply had not journaled yet), and reality now shows
		// resources under keys of this stack's name: that apply made them
		// meanwhile. Its lineage is recorded by now (an Execute is
		// journaled before its Create), so the plan is made again against
		// the state as it is, rather than calling them another lineage's.
		if st2, lerr := s.view.Load(context.Background()); lerr == nil && st2.Lineage != "" {
			s.lineage, s.forgotten, st = st2.Lineage, st2.Forgotten, movedState(st2, renames, forgets)
			if pl, obs, err = s.plan(ctx, st); err != nil {
				return nil, err
			}
		}
	}
	pv := s.preview(pl, obs, st)
	// Who holds the lock (a live holder, else nil), read through the
	// plan's one open of the backend.
	if pv.Running = LiveHolder(ctx, s.view); pv.Running != nil {
		for i := range pv.Changes {
			if c := &pv.Changes[i]; c.Ownership == plan.Recovered {
				c.Drift = fmt.Sprintf("found (id %s) carrying this stack's idempotency key, not yet recorded: most likely made by the operation in progress, which records it", c.FoundID)
			}
		}
	}
	if err := pl.Check("apply"); err != nil {
		if !errors.As(err, &pv.Refused) {
			errors.As(err, &pv.Conflict)
		}
	}
	if save != nil && pv.Err() == nil {
		if err := save(s, st, pv, obs); err != nil {
			return nil, err
		}
	}
	return pv, nil
}

// preview is a plan as a person reads it.
func (s *session) preview(pl *plan.Plan, obs map[string]*plan.Observation, st *state.State) *Preview {
	pv := &Preview{Stack: s.sp.Stack, Changes: []Planned{}, Revision: st.Current, Variables: s.variableChanges(st), DataReads: slices.Clone(s.dataReads), StackReads: slices.Clone(s.stackReads),
		Moves: slices.Clone(s.moves), Forgets: slices.Clone(s.forgets), Targets: slices.Clone(s.opts.Targets)}
	for _, c := range pl.Changes {
		pv.Changes = append(pv.Changes, s.planned(c, obs[c.Resource], st))
	}
	return pv
}

// planned is one decided change as a person reads it.
func (s *session) planned(c plan.Change, obs *plan.Observation, st *state.State) Planned {
	pc := Planned{Change: c, Keyless: s.keyless(c.Provider)}
	cur := st.Resources[c.Resource]
	if p := s.plugins[c.Provider]; p != nil {
		if rt, ok := p.Schema().ResourceType(c.Type); ok {
			for _, a := range rt.Attributes {
				if a.Sensitive {
					pc.Sensitive = append(pc.Sensitive, a.Name)
				}
			}
		}
	}
	if cur != nil {
		// What the state recorded as sensitive stays so, whatever the
		// schema now says.
		for _, k := range cur.Sensitive {
			if !slices.Contains(pc.Sensitive, k) {
				pc.Sensitive = append(pc.Sensitive, k)
			}
		}
	}
	// A value derived from a secret (a sensitive variable interpolated,
	// a sensitive attribute referenced) is one.
	pc.Sensitive = addSensitive(pc.Sensitive, s.derived[c.Resource])
	pc.Unknown = plan.UnknownKeys(c.After)
	if obs != nil && obs.Exists {
		pc.Observed = obs.Attributes
	}
	pc.Sensitive = addSensitive(pc.Sensitive, s.planSecrets(c, pc.Observed))
	_, inSpec := s.specResource(c.Resource)
	switch {
	case cur.Deposed() && c.Action == plan.Delete:
		pc.Drift = fmt.Sprintf("the old object of %s, set aside by the replace of operation %s: deleted in the cleanup phase", cur.DeposedFrom, cur.DeposedBy)
	case c.Action == plan.Conflict:
		pc.Drift = c.Reason
	case c.Action == plan.Retain:
		pc.Drift = "the revision this rollback goes back to lacks it: kept, because it holds data, and recorded as retained (no apply deletes it; a teardown does)"
	case c.Retained && !inSpec:
		pc.Drift = fmt.Sprintf("retained (kept by %s, a rollback): not in the spec, still this stack's; no apply deletes it: `bulwark teardown` deletes it under its level, `bulwark state forget` releases it", cur.RetainedBy)
	case c.Ownership == plan.Gone && !inSpec && c.Refused():
		pc.Drift = "recorded but not found by its provider: nothing is left to delete, but a protected resource's record is dropped only by hand (`bulwark state forget`)"
	case c.Ownership == plan.Gone && !inSpec:
		pc.Drift = "already gone"
	case c.Ownership == plan.Gone:
		pc.Drift = "recorded in the state but not found: it will be created again"
		pc.Vanished = cur.Protection == protection.Durable || cur.Protection == protection.Protected
	case c.Ownership == plan.Recovered:
		pc.Drift = fmt.Sprintf("found (id %s) carrying this stack's idempotency key but not recorded (a create a crash interrupted, or a lost state): it will be recorded", c.FoundID)
	case c.Action == plan.Import:
		pc.Drift = fmt.Sprintf("exists as %s: it will be imported (recorded as this stack's; no rollback deletes it)", c.FoundID)
	case c.Action == plan.Update && !c.Remote && cur != nil && len(plan.ChangedKeys(cur.Config, c.After)) > 0:
		pc.Drift = "reality already matches the spec: only the recorded config changes"
	case c.Action == plan.Update && !c.Remote:
		pc.Drift = "only the recorded protection or dependencies change"
	case cur != nil && cur.RetainedBy != "" && inSpec && c.Action != plan.Conflict:
		pc.Drift = "retained (kept by a rollback), and in the spec again: an ordinary resource once this apply succeeds"
	}
	return pc
}
