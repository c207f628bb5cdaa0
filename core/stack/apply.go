package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Result is what an operation did.
type Result struct {
	Op      string
	Type    string
	Outcome engine.Outcome
	Run     engine.Result
	// Preserved lists the resources a rollback kept (durable or protected).
	Preserved []string
	// Inherited lists, sorted, the resources whose steps the operation's
	// interrupted earlier part executed (a resumed run): changed by this
	// operation, though not by this run.
	Inherited []string
	// Left lists, after a teardown, what it left because it is not this
	// stack's: the spec's resources the state did not record that reality
	// holds under the spec's identity (see strangers), as the planner
	// decided them.
	Left []plan.Change
	// Retained lists the resources this operation recorded as retained:
	// kept by its rollback, or by `rollback --to`, though the revision it
	// went back to lacks them (see retain.go).
	Retained []string
	// Changed and Unchanged count the resources executed and skipped.
	Changed, Unchanged int
	Err                error
	// Outputs are the spec's outputs after a successful apply, update or
	// rollback, sorted by name, a sensitive one's value secrets.Mask.
	Outputs []OutputValue
}

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
	if err := s.validate(ctx); err != nil {
		return nil, err
	}
	pl, obs, err := s.plan(ctx, st)
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
	op := &engine.Operation{ID: s.opID, Type: opType, Spec: s.sp.File, Revision: target, Parallelism: s.opts.Parallelism,
		Inherited: s.inherited, Stop: s.opts.Stop, Replace: s.opts.Replace}
	op.Finish = s.record(op)
	var gate []string
	s.noop = opType == "update" && !pl.HasChanges() && isCurrentSpec(st, s.sp)
	if opType != "apply" && !s.noop {
		op.Steps = s.updateSteps(opType, pl, target)
		gate = []string{op.Steps[len(op.Steps)-1].ID}
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
			continue // kept, retained: nothing to do (see retain.go)
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

// CancelledError is an apply or a rollback the person asked declined:
// nothing was changed.
type CancelledError struct{ Op string }

func (e *CancelledError) Error() string {
	return fmt.Sprintf("%s cancelled: nothing was changed", e.Op)
}

// refused journals and reports a plan the ladder or ownership refused.
func (s *session) refused(ctx context.Context, err error, pl *plan.Plan) error {
	var re *plan.RefusedError
	var ce *plan.ConflictError
	// A refusal is an operation of its own in the journal: its lifecycle
	// lines say so, with the resources refused and the exit code.
	switch {
	case errors.As(err, &ce):
		s.prog.opStart(s.opID, ce.Op)
		defer s.prog.opRefused(s.opID, ce.Op, err)
	case errors.As(err, &re):
		s.prog.opStart(s.opID, re.Op)
		defer s.prog.opRefused(s.opID, re.Op, err)
	}
	if errors.As(err, &ce) {
		s.prog.conflict(s.opID, ce.Conflicts)
		var names []string
		for _, c := range ce.Conflicts {
			names = append(names, c.Resource)
		}
		if _, jerr := s.jr.Append(ctx, journal.Record{Op: s.opID, Kind: journal.KindOp, Type: ce.Op, Status: journal.OpRefused, Targets: names, Error: err.Error()}); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	if errors.As(err, &re) {
		types := map[string]string{}
		for _, c := range pl.Changes {
			types[c.Resource] = c.Type
		}
		s.prog.refuse(s.opID, re.Resources, types)
		if _, jerr := s.jr.Append(ctx, journal.Record{Op: s.opID, Kind: journal.KindOp, Type: re.Op, Status: journal.OpRefused, Targets: re.Resources, Error: err.Error()}); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	return err
}

// record writes to the state what an operation's outcome means — the
// revision on success (or what it staged dropped), pending interventions —
// in one write, before the engine journals the operation's end.
func (s *session) record(op *engine.Operation) func(*engine.Result) error {
	return func(res *engine.Result) error {
		// It rides on the operation's end record: the outcome and what it
		// means for the state are one durable write.
		var takeBack []*state.Resource
		if op.Type != "teardown" && res.Outcome == engine.Succeeded {
			takeBack = s.takeBack()
		}
		return s.store.atEnd(op.ID).mutateMeta(func(st *state.State) error {
			switch {
			case op.Type != "teardown":
				s.recordRevision(st, op, res.Outcome == engine.Succeeded)
				if res.Outcome == engine.Succeeded {
					st.Outputs = s.evalOutputs(st)
				}
			case res.Outcome == engine.Succeeded:
				// Nothing of any revision exists any more: none is current.
				// The revisions stay, for history and rollback --to.
				st.Current = 0
				st.Outputs = nil
			}
			if res.Outcome == engine.NeedsIntervention {
				for _, id := range res.Failed {
					st.Interventions = append(st.Interventions, state.Intervention{Op: op.ID, Resource: id, Error: s.opts.Redactor.Redact(fmt.Sprint(res.Errors[id])), Since: s.opts.Now().UTC()})
				}
			}
			return nil
		}, takeBack...)
	}
}

// finish builds the Result of a run: counts, and what a rollback kept.
func (s *session) finish(op *engine.Operation, res engine.Result) *Result {
	out := &Result{Op: op.ID, Type: op.Type, Outcome: res.Outcome, Run: res, Err: s.opts.Redactor.Error(res.Err)}
	if err := s.lostError(op, res); err != nil {
		// The lock was lost: that is the outcome, whatever the steps met.
		out.Err = s.opts.Redactor.Error(err)
	}
	if res.Outcome == engine.Succeeded && op.Type != "teardown" {
		out.Outputs = ShownOutputs(s.store.Snapshot())
	}
	for _, id := range res.Done {
		// A cleanup step deletes what a replace set aside: part of that
		// replace, not a resource changed of its own.
		if !isMeta(id) && !strings.Contains(id, "#") {
			out.Changed++
		}
	}
	for _, id := range res.Skipped {
		if !isMeta(id) {
			out.Unchanged++
		}
	}
	if res.Outcome == engine.Compensated || res.Outcome == engine.RollbackIncomplete {
		out.Preserved = s.preserved(op.ID, res.Rollback)
	}
	out.Retained = s.retainedBy(op.ID)
	for _, st := range op.Inherited {
		if !isMeta(st.ID) && !slices.Contains(out.Inherited, st.ID) {
			out.Inherited = append(out.Inherited, st.ID)
		}
	}
	sort.Strings(out.Inherited)
	return out
}

// preserved lists, sorted, the durable and protected resources among names
// that operation op created and a rollback kept.
func (s *session) preserved(op string, names []string) []string {
	st := s.store.Snapshot()
	var out []string
	for _, id := range names {
		if r := st.Resources[id]; r != nil && r.CreatedBy == op && s.levelOf(r) != protection.Ephemeral {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

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
	step := &engine.Step{
		ID: r.Name, Resource: r.Name, Type: r.Type, Action: action,
		DependsOn: r.DependsOn, Policy: policyOf(r.OnFailure), Intervention: r.Intervention,
	}
	var m stepMode
	staged := s.store.forStep(step.ID) // what Execute and Compensate record rides on the step's next record
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
			return s.update(ctx, staged, r, m)
		}
		return fmt.Errorf("internal: no action decided for %s", r.Name)
	}
	step.Verify = func(ctx context.Context) error {
		// What Execute recorded, which the engine is still making
		// durable as Verify reads (see stage.resource).
		cur := staged.resource(r.Name)
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
		if d := plan.Drift(r.Config, resp.Attributes); len(d) > 0 {
			return fmt.Errorf("%s: attributes %s differ from the spec after %s", r.Name, strings.Join(d, ", "), m.Action)
		}
		return nil
	}
	step.Compensate = func(ctx context.Context) (string, error) {
		return s.undo(ctx, staged, r.Name, m.Action, m.key)
	}
	return step
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
// offers that (providers.Capabilities.CreateReadsBack) and the read could be
// made, for Verify. The record rides on staged's record.
func (s *session) create(ctx context.Context, staged *stage, r *spec.Resource, key string) (*providers.ReadResponse, error) {
	p := s.plugins[r.Provider]
	resp, err := p.Create(ctx, &providers.CreateRequest{Type: r.Type, Name: r.Name, Config: r.Config, IdempotencyKey: key, Protection: r.Protection, ReadBack: capsOf(p).CreateReadsBack})
	if err != nil {
		return nil, err
	}
	rec := &state.Resource{
		Name: r.Name, Type: r.Type, Provider: r.Provider, Source: p.Source(), ID: resp.ID,
		Protection: r.Protection.String(), DependsOn: r.DependsOn, Config: r.Config,
		Attributes: resp.Attributes, CreatedBy: s.opID, UpdatedBy: s.opID, IdempotencyKey: key,
		Sensitive: s.derivedSensitive(r.Config),
	}
	rec.SetPrivate(resp.Private)
	// It rides on the step's "execute ok": one durable write for both (a
	// crash before it leaves the Execute in flight, which resume resolves
	// by the key).
	staged.put(rec)
	return trusted(resp.ReadBack), nil
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
// in the state so this operation can undo it.
func (s *session) update(ctx context.Context, staged *stage, r *spec.Resource, m stepMode) error {
	cur := m.cur
	attrs := cur.Attributes
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
			return err
		}
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
		next.Protection = plan.Level("", r.Protection).String()
		next.DependsOn, next.UpdatedBy = r.DependsOn, s.opID
		next.SetPrivate(private)
		next.Sensitive = addSensitive(old.Sensitive, s.derivedSensitive(r.Config))
		staged.put(&next)
		return nil
	}
}

// importResource records a resource the spec takes over by id (`import:`)
// as imported: not created by bulwark, so no rollback deletes it; then
// updates it in place if the spec asks for other values.
func (s *session) importResource(ctx context.Context, staged *stage, r *spec.Resource, m stepMode) error {
	if o := s.store.Resource(r.Name); o != nil {
		return fmt.Errorf("import %s: the state already records it (id %s)", r.Name, o.ID)
	}
	obs, err := s.stampClaim(ctx, r, m.observe, m.key)
	if err != nil {
		return err
	}
	rec := importRecord(r, s.plugins[r.Provider].Source(), obs, s.opID)
	staged.put(rec)
	if !m.Remote {
		return nil
	}
	m.cur = rec
	return s.update(ctx, staged, r, m)
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
		Protection: r.Protection.String(), DependsOn: r.DependsOn, Config: cfg, Attributes: obs.Attributes,
		IdempotencyKey: obs.Key, Imported: true, UpdatedBy: op,
	}
	rec.SetPrivate(obs.Private)
	return rec
}

// forget drops, with staged's record, a record whose resource no longer
// exists.
func (s *session) forget(staged *stage, cur *state.Resource) {
	if r := s.store.Resource(cur.Name); r != nil && r.ID == cur.ID {
		staged.forget(cur.Name)
	}
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
