package stack

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

// stepMode is what a step decided to do once Check had looked at reality.
type stepMode struct {
	plan.Change
	cur     *state.Resource // what Execute works from: the state's record, or what was recovered (nil: none)
	observe *plan.Observation
	key     string // the idempotency key Execute ran under
	// readBack is what the provider read of the resource its Create made,
	// in the Create's own call (providers.Capabilities.CreateReadsBack): Verify
	// compares it instead of reading again. Nil: Verify reads.
	readBack *providers.ReadResponse
}

// applyStep is the step for a resource in the spec: Check = Read, Execute =
// Create, Update or replace, Verify = Read and compare, Compensate = undo
// under the ladder.
func (s *session) applyStep(c plan.Change, sr *spec.Resource) *engine.Step {
	// r is the resource as its Check resolved it (see references.go):
	// what Execute, Verify and the records work from.
	r := sr
	p := s.plugins[r.Provider]
	// A step that only checks would create the resource were it missing;
	// that is the action its events name.
	action := string(c.Action)
	if c.Action == plan.NoOp {
		action = string(plan.Create)
	}
	// A create of a provider that takes no idempotency key journals its
	// start only as its call goes out (engine.Step.StartWithSlot): one
	// whose outcome a crash leaves unknown stops resume for a person.
	keyless := p != nil && capsOf(p).Keyless
	makes := func(a plan.Action) bool { return a == plan.Create || a == plan.Replace }
	step := &engine.Step{
		ID: r.Name, Resource: r.Name, Type: r.Type, Action: action,
		DependsOn: r.DependsOn, Policy: policyOf(r.OnFailure), Intervention: r.Intervention,
		StartWithSlot: keyless && makes(plan.Action(action)),
	}
	var m stepMode
	staged := s.store.ForStep(step.ID) // what Execute and Compensate record rides on the step's next record
	step.Check = func(ctx context.Context) (bool, error) {
		// Reality is decided by the same function the plan used: nothing
		// is adopted, and nothing is written here. Its config is resolved
		// first, from what its dependencies recorded as they ran. What the
		// plan read is used again when nothing this operation did can have
		// changed it (checkRead: the same request); otherwise it is read
		// again.
		rr, err := s.resolvedNow(sr)
		if err != nil {
			return false, err
		}
		if hasRefs(sr) {
			// Validated with what was not known when the spec was.
			if err := s.validateResolved(ctx, sr, rr); err != nil {
				return false, err
			}
		}
		r = rr
		cur := s.store.Resource(r.Name)
		obs, err := s.checkRead(ctx, r, cur)
		if err != nil {
			return false, err
		}
		d := s.decide(r, cur, obs, nil)
		if err := (&plan.Plan{Spec: s.sp.File, Changes: []plan.Change{d}}).Check(s.opType); err != nil {
			return false, err
		}
		if want, ok := s.savedAction(r.Name); ok && want != d.Action {
			// Reality changed between the saved plan's check and this
			// step: it is not the plan that was reviewed.
			return false, fmt.Errorf("%s: the saved plan decided %s, but what its Read returns now makes it %s: not applying a plan other than the one reviewed", r.Name, want, d.Action)
		}
		m = stepMode{Change: d, cur: cur, observe: obs}
		switch d.Ownership {
		case plan.Gone:
			m.cur = nil // recorded but gone (drift): it is created again
		case plan.Recovered:
			m.cur = s.recovered(r, obs)
		}
		if d.Action == plan.NoOp {
			return true, nil
		}
		step.Action = string(d.Action)
		step.StartWithSlot = keyless && makes(d.Action)
		step.EarlyStart = startsEarly(d, step)
		return false, nil
	}
	step.Execute = func(ctx context.Context, key string) error {
		key = s.identity().Key(key)
		m.key, m.readBack = key, nil
		if s.opts.SimulateFailure == r.Name {
			return fmt.Errorf("simulated failure (--simulate-failure %s)", r.Name)
		}
		switch m.Action {
		case plan.Import:
			return s.importResource(ctx, staged, r, m)
		case plan.Create:
			var err error
			m.readBack, err = s.create(ctx, staged, r, key)
			return err
		case plan.Replace:
			return s.replace(ctx, staged, r, &m, key)
		case plan.Update:
			var err error
			m.readBack, err = s.update(ctx, staged, r, m)
			return err
		}
		return fmt.Errorf("internal: no action decided for %s", r.Name)
	}
	step.Verify = func(ctx context.Context) error {
		// What Execute recorded, which the engine is still making
		// durable as Verify reads (see stage.resource).
		cur := staged.Resource(r.Name)
		if cur == nil {
			return fmt.Errorf("%s is not recorded in the state", r.Name)
		}
		// A Create that read back what it made (in its own call, by the
		// same Read) has answered this read already.
		resp := m.readBack
		if resp == nil {
			var err error
			resp, err = p.Read(ctx, &providers.ReadRequest{Type: r.Type, Name: r.Name, ID: cur.ID, Config: r.Config, Private: cur.PrivateData()})
			if err != nil {
				return err
			}
		}
		if !resp.Exists {
			return fmt.Errorf("%s (%s) does not exist after %s", r.Name, cur.ID, m.Action)
		}
		if d := plan.DriftOf(r.Config, resp); len(d) > 0 {
			return fmt.Errorf("%s: attributes %s differ from the spec after %s", r.Name, strings.Join(d, ", "), m.Action)
		}
		return nil
	}
	step.Compensate = func(ctx context.Context) (string, error) {
		return s.undo(ctx, staged, r.Name, m.Action, m.key)
	}
	return step
}

// startsEarly says whether step, which Check decided is d, may start its
// work once what it depends on has executed rather than verified
// (engine.Step.EarlyStart): only where a failed Verify of a dependency,
// which halts the run and compensates what it executed, undoes the step
// whole. That is a create (nothing existed before it: the undo deletes
// what it made) of an ephemeral resource (the only level a rollback
// deletes: a durable or protected one would be kept, made on a dependency
// that never verified), whose own failure compensates too (policy
// Compensate, no intervention). An update, replace, import or delete, and
// anything else, waits for verified. The engine waits for verified anyway
// on a dependency whose failure rolls nothing back (Continue, Abort,
// intervention).
//
// Its inputs are the same either way: its Check, which resolves its
// references (resolvedNow) from what its dependencies recorded, runs once
// they have recorded their Execute ("execute ok"), never after their
// Verify, and Verify records nothing a reference reads.
func startsEarly(d plan.Change, step *engine.Step) bool {
	return d.Action == plan.Create && d.Protection == protection.Ephemeral &&
		step.Policy == engine.Compensate && !step.Intervention
}

func policyOf(p spec.FailurePolicy) engine.FailurePolicy {
	switch p {
	case spec.PolicyContinue:
		return engine.Continue
	case spec.PolicyAbort:
		return engine.Abort
	}
	return engine.Compensate
}

// create makes r under key and records it, created by this operation. It
// returns what the provider read back of it in the same call, when it
// offers that (providers.Capabilities.CreateReadsBack), it runs outside a
// run's steps (engine.InRun: a step's Verify reads on a read slot, while
// its "execute ok" is made durable and the steps that depend on it check;
// a read-back would hold the write slot for that round trip instead), and
// the read could be made, for Verify. The record rides on staged's record.
func (s *session) create(ctx context.Context, staged *opstore.Stage, r *spec.Resource, key string) (*providers.ReadResponse, error) {
	p := s.plugins[r.Provider]
	resp, err := p.Create(ctx, &providers.CreateRequest{Type: r.Type, Name: r.Name, Config: r.Config, IdempotencyKey: key, Protection: r.Protection,
		ReadBack: capsOf(p).CreateReadsBack && !engine.InRun(ctx)})
	if err != nil {
		if resp != nil && resp.ID != "" && capsOf(p).Keyless && !providers.IsConflict(err) {
			// A provider built for Terraform made it and then failed (its
			// "tainted" create): it exists, so it is recorded, riding on the
			// step's failure, and the failure's compensation deletes it
			// under the ladder (a durable one is kept), never forgotten.
			// Only these providers: one of bulwark's own finds what a failed
			// Create made by its key, and an id beside a conflict names
			// something that is not this stack's, never to be recorded (its
			// compensation would delete it).
			staged.Put(s.createdRecord(p, r, key, resp))
		} else if capsOf(p).Keyless && !answered(err) {
			// No key to look it up by: the journaled failure says that
			// what it made is unknown (see UnknownCreateError).
			s.unanswered.Store(r.Name, true)
			err = fmt.Errorf("%w (%s)", err, unansweredNote)
		}
		return nil, err
	}
	staged.Put(s.createdRecord(p, r, key, resp))
	return trusted(resp.ReadBack), nil
}

// createdRecord is the record of what a Create under key made for r.
func (s *session) createdRecord(p Provider, r *spec.Resource, key string, resp *providers.CreateResponse) *state.Resource {
	rec := &state.Resource{
		Name: r.Name, Type: r.Type, Provider: r.Provider, Source: p.Source(), ID: resp.ID,
		Protection: r.Protection, DependsOn: r.DependsOn, Config: r.Config,
		Attributes: resp.Attributes, CreatedBy: s.opID, UpdatedBy: s.opID, IdempotencyKey: key,
		Sensitive: s.derivedSensitive(r.Config), Validated: s.validatedKey(r.Name),
	}
	rec.SetPrivate(resp.Private)
	// It rides on the step's "execute ok": one durable write for both (a
	// crash before it leaves the Execute in flight, which resume resolves
	// by the key).
	return rec
}

// capsOf is what p's schema declares it can do (nothing, without one).
func capsOf(p Provider) providers.Capabilities {
	if sc := p.Schema(); sc != nil {
		return sc.Capabilities
	}
	return providers.Capabilities{}
}

// trusted is a Create's or Delete's read-back as Verify may take it for its
// own read: nil for none, and for one whose diagnostics hold an error
// (Verify then reads itself).
func trusted(rb *providers.ReadResponse) *providers.ReadResponse {
	if rb == nil || rb.Diagnostics.HasError() {
		return nil
	}
	return rb
}

// update changes r in place (or only its record), keeping what it replaced
// in the state so this operation can undo it. It returns what the provider
// answered as its read-back (UpdateResponse.ReadBack), for Verify (nil:
// Verify reads).
func (s *session) update(ctx context.Context, staged *opstore.Stage, r *spec.Resource, m stepMode) (*providers.ReadResponse, error) {
	cur := m.cur
	attrs := cur.Attributes
	var readBack *providers.ReadResponse
	var private []byte // what the provider answered last: kept over what is recorded
	if m.observe != nil {
		private = m.observe.Private
	}
	if m.Remote {
		prior := cur.PrivateData()
		if len(private) > 0 {
			prior = private
		}
		resp, err := s.plugins[r.Provider].Update(ctx, &providers.UpdateRequest{
			Type: r.Type, Name: r.Name, ID: cur.ID, PriorAttributes: m.observe.Attributes, Config: r.Config, Protection: r.Protection, Private: prior,
		})
		if err != nil {
			return nil, err
		}
		readBack = trusted(resp.ReadBack)
		attrs = resp.Attributes
		if len(resp.Private) > 0 {
			private = resp.Private
		}
	}
	old := s.store.Resource(r.Name)
	if old == nil || m.Action == plan.Import {
		old = cur
	}
	{
		next := *old
		if old.Prior == nil || old.Prior.Op != s.opID {
			next.Prior = &state.Prior{Op: s.opID, Config: old.Config, Attributes: old.Attributes, Protection: old.Protection, DependsOn: old.DependsOn, RetainedBy: old.RetainedBy}
		}
		next.RetainedBy = "" // in the spec: an ordinary resource again
		next.Config, next.Attributes = r.Config, attrs
		next.Protection = plan.Level(protection.Unspecified, r.Protection)
		next.DependsOn, next.UpdatedBy = r.DependsOn, s.opID
		next.SetPrivate(private)
		next.Sensitive = addSensitive(old.Sensitive, s.derivedSensitive(r.Config))
		next.Validated = s.validatedKey(r.Name)
		staged.Put(&next)
		return readBack, nil
	}
}

// importResource records a resource the spec takes over by id (`import:`)
// as imported: not created by bulwark, so no rollback deletes it; then
// updates it in place if the spec asks for other values.
func (s *session) importResource(ctx context.Context, staged *opstore.Stage, r *spec.Resource, m stepMode) error {
	if o := s.store.Resource(r.Name); o != nil {
		return fmt.Errorf("import %s: the state already records it (id %s)", r.Name, o.ID)
	}
	p := s.plugins[r.Provider]
	var claims storage.ClaimsLock
	if capsOf(p).Keyless {
		// Nothing on the resource says whose it is: the other stacks on
		// this backend are asked (claimedElsewhere), under the claims lock
		// until the import's record is durable.
		var err error
		if claims, err = s.claimsLock(ctx); err != nil {
			return err
		}
		defer claims.Release(context.WithoutCancel(ctx))
		if err := s.claimedElsewhere(ctx, r.Name, p.Source(), r.Type, m.observe.ID); err != nil {
			return err
		}
	}
	obs, err := s.stampClaim(ctx, r, m.observe, m.key)
	if err != nil {
		return err
	}
	rec := importRecord(r, p.Source(), obs, s.opID)
	if claims != nil {
		// Recorded now, under the lock, not on the step's "execute ok"
		// once it is released: another stack's import of the id, waiting
		// for the lock, then finds this record and is refused.
		if err := claims.Held(ctx); err != nil {
			return fmt.Errorf("import %s %s: nothing was recorded: %w", r.Name, obs.ID, err)
		}
		if err := s.store.MutateNow(ctx, func(st *state.State) error {
			if st.Resources[r.Name] != nil {
				return fmt.Errorf("import %s: the state already records it", r.Name)
			}
			st.Resources[r.Name] = rec
			return nil
		}); err != nil {
			return err
		}
		// Recorded: what follows may no longer end unsent (see
		// stopUnsent).
		providers.SendStopOf(ctx).Sending()
	}
	staged.Put(rec)
	if !m.Remote {
		return nil
	}
	m.cur = rec
	_, err = s.update(ctx, staged, r, m)
	return err
}

// importRecord is the record of an imported resource: its config is what
// it has of the keys the spec sets.
func importRecord(r *spec.Resource, source string, obs *plan.Observation, op string) *state.Resource {
	cfg := map[string]any{}
	for k := range r.Config {
		if v, ok := obs.Attributes[k]; ok {
			cfg[k] = v
		}
	}
	rec := &state.Resource{
		Name: r.Name, Type: r.Type, Provider: r.Provider, Source: source, ID: obs.ID,
		Protection: r.Protection, DependsOn: r.DependsOn, Config: cfg, Attributes: obs.Attributes,
		IdempotencyKey: obs.Key, Imported: true, UpdatedBy: op,
	}
	rec.SetPrivate(obs.Private)
	return rec
}

// forget drops, with staged's record, a record whose resource no longer
// exists.
func (s *session) forget(staged *opstore.Stage, cur *state.Resource) {
	if r := s.store.Resource(cur.Name); r != nil && r.ID == cur.ID {
		staged.Forget(cur.Name)
	}
}
