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
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/sdk"
)

// Result is what an operation did.
type Result struct {
	Op      string
	Type    string
	Outcome engine.Outcome
	Run     engine.Result
	// Preserved lists the resources a rollback kept (durable or protected).
	Preserved []string
	// Changed and Unchanged count the resources executed and skipped.
	Changed, Unchanged int
	Err                error
}

// Apply converges the stack to sp: creates what is missing, updates what
// changed, deletes what the spec no longer has (under the ladder). A failed
// step is handled by its resource's on_failure policy.
func Apply(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	s, err := open(sp, opts, false)
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
	st := s.store.Snapshot()
	if err := s.startProviders(ctx, providersFor(s.sp, st), st); err != nil {
		return nil, err
	}
	if err := s.validate(ctx); err != nil {
		return nil, err
	}
	pl := plan.ForApply(s.sp, st, s.schemas())
	s.prog.levels = map[string]string{}
	for _, c := range pl.Changes {
		s.prog.levels[c.Resource] = c.Protection.String()
	}
	if err := pl.Check(opType); err != nil {
		return nil, s.refused(err, pl)
	}
	if err := s.checkProtectedDrift(ctx, pl, st, opType); err != nil {
		return nil, err
	}
	op := &engine.Operation{ID: s.opID, Type: opType, Spec: s.sp.File, Revision: target, Parallelism: s.opts.Parallelism,
		Inherited: s.inherited, Stop: s.opts.Stop}
	op.Finish = s.record(op)
	var gate []string
	if opType != "apply" {
		op.Steps = s.updateSteps(opType, pl, target)
		gate = []string{op.Steps[len(op.Steps)-1].ID}
	}
	removed := map[string]bool{}
	for _, c := range pl.Changes {
		removed[c.Resource] = c.Action == plan.Delete
	}
	soft := map[*engine.Step][]string{}
	for _, c := range pl.Changes {
		var step *engine.Step
		if c.Action == plan.Delete {
			step = s.removeStep(c, st)
		} else {
			r, _ := s.sp.Resource(c.Resource)
			step = s.applyStep(c, r)
			// A resource being replaced waits until what the state records
			// as depending on it, and is being removed, is gone.
			if c.Action == plan.Replace {
				for _, name := range st.Names() {
					if removed[name] && slices.Contains(st.Resources[name].DependsOn, c.Resource) {
						soft[step] = append(soft[step], name)
					}
				}
			}
		}
		step.DependsOn = append(step.DependsOn, gate...)
		op.Steps = append(op.Steps, step)
	}
	addSoftOrder(op.Steps, soft)
	s.prog.printf("%s %s (%s): %d resource(s), up to %d at once\n", opType, s.sp.Stack, s.opID, len(pl.Changes), s.opts.Parallelism)
	s.prog.start()
	res := s.eng.Run(ctx, op)
	s.prog.end()
	return s.finish(op, res), nil
}

// refused journals and reports a plan the ladder refused.
func (s *session) refused(err error, pl *plan.Plan) error {
	var re *plan.RefusedError
	if errors.As(err, &re) {
		types := map[string]string{}
		for _, c := range pl.Changes {
			types[c.Resource] = c.Type
		}
		s.prog.refuse(s.opID, re.Resources, types)
		if _, jerr := s.jr.Append(journal.Record{Op: s.opID, Kind: journal.KindOp, Type: re.Op, Status: journal.OpRefused, Targets: re.Resources, Error: err.Error()}); jerr != nil {
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
		return s.store.Mutate(func(st *state.State) error {
			switch {
			case op.Type != "teardown":
				s.recordRevision(st, op, res.Outcome == engine.Succeeded)
			case res.Outcome == engine.Succeeded:
				// Nothing of any revision exists any more: none is current.
				// The revisions stay, for history and rollback --to.
				st.Current = 0
			}
			if res.Outcome == engine.NeedsIntervention {
				for _, id := range res.Failed {
					st.Interventions = append(st.Interventions, state.Intervention{Op: op.ID, Resource: id, Error: s.opts.Redactor.Redact(fmt.Sprint(res.Errors[id])), Since: s.opts.Now().UTC()})
				}
			}
			return nil
		})
	}
}

// finish builds the Result of a run: counts, and what a rollback kept.
func (s *session) finish(op *engine.Operation, res engine.Result) *Result {
	out := &Result{Op: op.ID, Type: op.Type, Outcome: res.Outcome, Run: res, Err: s.opts.Redactor.Error(res.Err)}
	for _, id := range res.Done {
		if !isMeta(id) {
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
	return out
}

// preserved lists, sorted, the durable and protected resources among names
// that operation op created and a rollback kept.
func (s *session) preserved(op string, names []string) []string {
	st := s.store.Snapshot()
	var out []string
	for _, id := range names {
		if r := st.Resources[id]; r != nil && r.CreatedBy == op && s.levelOf(r) != sdk.ProtectionEphemeral {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// decision is what decide found: what the step must do, and what the state
// should learn (an adoption, or a recorded resource that is gone).
type decision struct {
	stepMode
	done  bool // reality already matches
	adopt bool // it exists, the state does not record it
	gone  bool // the state records it, the provider no longer finds it
}

// decide reads reality for one resource of the spec and says what its step
// must do. It writes nothing, so a dry run can call it.
func (s *session) decide(ctx context.Context, c plan.Change, r *spec.Resource, cur *state.Resource) (decision, error) {
	p := s.plugins[r.Provider]
	req := &sdk.ReadRequest{Type: r.Type, Name: r.Name, Config: r.Config}
	sameKind := cur != nil && cur.Type == r.Type && cur.Provider == r.Provider
	if sameKind {
		req.ID = cur.ID
	}
	if c.Action == plan.Replace && cur != nil && !sameKind {
		// A new type or provider: the recorded resource is another thing
		// altogether, deleted before the new one is made.
		return decision{stepMode: stepMode{action: plan.Replace, cur: cur}}, nil
	}
	resp, err := p.Read(ctx, req)
	if err != nil {
		return decision{}, err
	}
	d := decision{stepMode: stepMode{cur: cur, observe: resp}}
	switch {
	case !resp.Exists:
		d.action = plan.Create
		d.gone = cur != nil && c.Action != plan.Replace
		return d, nil
	case c.Action == plan.Replace:
		d.action = plan.Replace
		return d, nil
	}
	recorded := cur
	if cur == nil {
		d.adopt = true
		recorded = &state.Resource{Protection: r.Protection.String(), DependsOn: r.DependsOn}
	}
	drift := plan.Drift(r.Config, resp.Attributes)
	if cur != nil {
		for k := range cur.Config {
			if _, ok := r.Config[k]; !ok {
				drift = append(drift, k)
			}
		}
	}
	rt, _ := p.Schema().ResourceType(r.Type)
	for _, k := range drift {
		if a, ok := rt.Attribute(k); ok && a.ForceNew {
			d.action = plan.Replace
		}
	}
	switch {
	case d.action == plan.Replace:
	case len(drift) > 0:
		d.action, d.remote = plan.Update, true
	case recorded.Protection != r.Protection.String() || !equalStrings(recorded.DependsOn, r.DependsOn):
		d.action = plan.Update // recorded level or dependencies only
	default:
		d.done = true
	}
	return d, nil
}

// stepMode is what a step decided to do once Check had looked at reality.
type stepMode struct {
	action  plan.Action
	cur     *state.Resource // the state's record when Check ran (nil: none)
	observe *sdk.ReadResponse
	remote  bool   // an update needs the provider (not only the state)
	key     string // the idempotency key Execute ran under
}

// applyStep is the step for a resource in the spec: Check = Read, Execute =
// Create, Update or replace, Verify = Read and compare, Compensate = undo
// under the ladder.
func (s *session) applyStep(c plan.Change, r *spec.Resource) *engine.Step {
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
	step.Check = func(ctx context.Context) (bool, error) {
		d, err := s.decide(ctx, c, r, s.store.Snapshot().Resources[r.Name])
		if err != nil {
			return false, err
		}
		switch {
		case d.gone:
			// Recorded but gone (drift): it is created again.
			if err := s.forget(d.cur); err != nil {
				return false, err
			}
			d.cur = nil
		case d.adopt:
			// It exists though the state does not record it: adopt it (it
			// existed before this run, so no rollback deletes it).
			adopted, err := s.adopt(r, d.observe)
			if err != nil {
				return false, err
			}
			d.cur = adopted
		}
		m = d.stepMode
		if d.done {
			return true, nil
		}
		step.Action = string(m.action)
		return false, nil
	}
	step.Execute = func(ctx context.Context, key string) error {
		m.key = key
		if s.opts.SimulateFailure == r.Name {
			return fmt.Errorf("simulated failure (--simulate-failure %s)", r.Name)
		}
		switch m.action {
		case plan.Create:
			return s.create(ctx, r, key)
		case plan.Replace:
			if m.cur != nil {
				if _, err := s.deleteResource(ctx, m.cur, reasonReplace); err != nil {
					return fmt.Errorf("replace: %w", err)
				}
			}
			return s.create(ctx, r, key)
		case plan.Update:
			return s.update(ctx, r, m)
		}
		return fmt.Errorf("internal: no action decided for %s", r.Name)
	}
	step.Verify = func(ctx context.Context) error {
		cur := s.store.Snapshot().Resources[r.Name]
		if cur == nil {
			return fmt.Errorf("%s is not recorded in the state", r.Name)
		}
		resp, err := p.Read(ctx, &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: cur.ID, Config: r.Config})
		if err != nil {
			return err
		}
		if !resp.Exists {
			return fmt.Errorf("%s (%s) does not exist after %s", r.Name, cur.ID, m.action)
		}
		if d := plan.Drift(r.Config, resp.Attributes); len(d) > 0 {
			return fmt.Errorf("%s: attributes %s differ from the spec after %s", r.Name, strings.Join(d, ", "), m.action)
		}
		return nil
	}
	step.Compensate = func(ctx context.Context) (string, error) {
		return s.undo(ctx, r.Name, m.action, m.key)
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

// create makes r under key and records it, created by this operation.
func (s *session) create(ctx context.Context, r *spec.Resource, key string) error {
	p := s.plugins[r.Provider]
	resp, err := p.Create(ctx, &sdk.CreateRequest{Type: r.Type, Name: r.Name, Config: r.Config, IdempotencyKey: key, Protection: r.Protection})
	if err != nil {
		return err
	}
	return s.store.Mutate(func(st *state.State) error {
		st.Resources[r.Name] = &state.Resource{
			Name: r.Name, Type: r.Type, Provider: r.Provider, Source: p.Source(), ID: resp.ID,
			Protection: r.Protection.String(), DependsOn: r.DependsOn, Config: r.Config,
			Attributes: resp.Attributes, CreatedBy: s.opID, UpdatedBy: s.opID,
		}
		return nil
	})
}

// update changes r in place (or only its record), keeping what it replaced
// in the state so this operation can undo it.
func (s *session) update(ctx context.Context, r *spec.Resource, m stepMode) error {
	cur := m.cur
	attrs := cur.Attributes
	if m.remote {
		resp, err := s.plugins[r.Provider].Update(ctx, &sdk.UpdateRequest{
			Type: r.Type, Name: r.Name, ID: cur.ID, PriorAttributes: m.observe.Attributes, Config: r.Config, Protection: r.Protection,
		})
		if err != nil {
			return err
		}
		attrs = resp.Attributes
	}
	return s.store.Mutate(func(st *state.State) error {
		old := st.Resources[r.Name]
		if old == nil {
			old = cur
		}
		next := *old
		if old.Prior == nil || old.Prior.Op != s.opID {
			next.Prior = &state.Prior{Op: s.opID, Config: old.Config, Attributes: old.Attributes, Protection: old.Protection, DependsOn: old.DependsOn}
		}
		next.Config, next.Attributes = r.Config, attrs
		next.Protection = plan.Level("", r.Protection).String()
		next.DependsOn, next.UpdatedBy = r.DependsOn, s.opID
		st.Resources[r.Name] = &next
		return nil
	})
}

// adopt records a resource that exists but the state did not know.
func (s *session) adopt(r *spec.Resource, resp *sdk.ReadResponse) (*state.Resource, error) {
	cfg := map[string]any{}
	for k := range r.Config {
		if v, ok := resp.Attributes[k]; ok {
			cfg[k] = v
		}
	}
	res := &state.Resource{
		Name: r.Name, Type: r.Type, Provider: r.Provider, Source: s.plugins[r.Provider].Source(), ID: resp.ID,
		Protection: r.Protection.String(), DependsOn: r.DependsOn, Config: cfg, Attributes: resp.Attributes,
	}
	return res, s.store.Mutate(func(st *state.State) error {
		st.Resources[r.Name] = res
		return nil
	})
}

// forget drops a record whose resource no longer exists.
func (s *session) forget(cur *state.Resource) error {
	return s.store.Mutate(func(st *state.State) error {
		if r := st.Resources[cur.Name]; r != nil && r.ID == cur.ID {
			delete(st.Resources, cur.Name)
		}
		return nil
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkProtectedDrift reads, before the first step, every recorded protected
// resource the plan keeps: if reality has drifted so that converging would
// replace it (a force_new attribute changed outside bulwark), the run is
// refused now, whole, rather than midway.
func (s *session) checkProtectedDrift(ctx context.Context, pl *plan.Plan, st *state.State, opType string) error {
	var refused []string
	for _, c := range pl.Changes {
		cur := st.Resources[c.Resource]
		if cur == nil || c.Action == plan.Delete || c.Protection != sdk.ProtectionProtected {
			continue
		}
		r, _ := s.sp.Resource(c.Resource)
		d, err := s.decide(ctx, c, r, cur)
		if err != nil {
			return err
		}
		if !d.done && d.action == plan.Replace {
			refused = append(refused, c.Resource)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return s.refused(&plan.RefusedError{Op: opType, Resources: refused}, pl)
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
