package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// LineageError refuses a state, journal or backup that belongs to another
// lineage of the stack (or to another stack altogether): nothing was read
// from it into this stack, nothing was changed. The backend refuses it.
type LineageError = storage.LineageError

// identity is this stack as its keys name it.
func (s *session) identity() plan.Identity {
	return plan.Identity{Stack: s.sp.Stack, Lineage: s.lineage, Forgotten: s.forgotten}
}

// keyOf is the idempotency key the Execute journaled as rec carried: derived
// from the record, so a resume derives what the run issued. Records written
// before lineages carried their bare id as the key.
func (s *session) keyOf(rec journal.Record) string {
	if rec.Lineage == "" {
		return rec.ID
	}
	return plan.Identity{Stack: s.sp.Stack, Lineage: rec.Lineage}.Key(rec.ID)
}

// env is what the planner needs of the running providers.
func (s *session) env() plan.Env {
	e := plan.Env{Schemas: s.schemas(), Identity: s.identity(), KeysReported: map[string]bool{}, Replace: map[string]bool{}}
	for _, a := range s.opts.Replace {
		e.Replace[a] = true
	}
	for n, sc := range e.Schemas {
		e.KeysReported[n] = keysReported(sc)
	}
	return e
}

// input is s.env().Input(r, cur, obs) without the env's maps of every
// provider: a step decides for one resource, of one provider.
func (s *session) input(r *spec.Resource, cur *state.Resource, obs *plan.Observation) plan.Input {
	var sc *providers.GetSchemaResponse
	if p, ok := s.plugins[plan.ProviderOf(r, cur)]; ok {
		sc = p.Schema()
	}
	in := plan.Input{Spec: r, Recorded: cur, Observed: obs, Schema: sc, Identity: s.identity(), KeysReported: keysReported(sc),
		Rollback: s.opType == "rollback"}
	if r != nil {
		// --replace replaces once per operation: what this operation made
		// (a resumed run meeting its own replacement) is not replaced again.
		in.Replace = slices.Contains(s.opts.Replace, r.Name) && (cur == nil || cur.CreatedBy != s.opID)
	}
	return in
}

func keysReported(sc *providers.GetSchemaResponse) bool {
	return sc != nil && sc.Capabilities.IdempotencyKeys
}

// decide is plan.Decide for one resource, with what the state records under
// other names (a resource found by identity that the state records under
// another name, after `state mv`, is not free).
func (s *session) decide(r *spec.Resource, cur *state.Resource, obs *plan.Observation, st *state.State) plan.Change {
	in := s.input(r, cur, obs)
	if cur == nil && obs != nil && obs.Exists {
		if st == nil {
			st = s.store.Snapshot() // only here: the records under other names
		}
		for _, n := range st.Names() {
			if o := st.Resources[n]; o.ID == obs.ID && n != r.Name && o.Provider == r.Provider && o.Type == r.Type {
				in.RecordedAs = n
			}
		}
	}
	return plan.Decide(in)
}

// checkOwned reads every resource a teardown plan deletes and refuses the
// run (a *plan.ConflictError) when what a recorded id holds now carries
// another key: it is not this stack's to delete.
//
// A resource of a keyless provider (one built for Terraform) is not read
// here: such a provider reports no key on Read, and the planner's decision
// never takes what a recorded id holds to be another's on its word (a
// silence proves nothing, see plan's notTheRecorded), so its read could
// refuse nothing. Its delete step's Check reads it right before its Delete,
// as every delete step's does, and the Delete destroys from that read
// (DeleteRequest.Observed): one read per resource, where Terraform's destroy
// makes one too. A read of it that fails fails that step (the teardown goes
// on with the rest, as after a failed Delete) instead of the run before its
// first delete.
func (s *session) checkOwned(ctx context.Context, st *state.State, pl *plan.Plan) error {
	var jobs []observe.Job
	for _, c := range pl.Changes {
		if cur := st.Resources[c.Resource]; cur != nil && !s.keylessOnly(cur.Provider) {
			jobs = append(jobs, observe.Recorded(cur))
		}
	}
	obs, err := s.reads.ReadAll(ctx, jobs)
	if err != nil {
		return err
	}
	s.reads.Keep(jobs, obs)
	checked := &plan.Plan{Spec: s.sp.File}
	for _, c := range pl.Changes {
		if cur := st.Resources[c.Resource]; cur != nil && obs[c.Resource] != nil {
			checked.Changes = append(checked.Changes, plan.Decide(s.input(nil, cur, obs[c.Resource])))
		}
	}
	var ce *plan.ConflictError
	if err := checked.Check("teardown"); errors.As(err, &ce) {
		return ce
	}
	return nil
}

// keylessOnly reports whether the running plugin of provider takes no
// idempotency key and reports none (Capabilities.Keyless without
// IdempotencyKeys): what a Read of one of its resources answers can never
// make the planner take it for another's.
func (s *session) keylessOnly(provider string) bool {
	p := s.plugins[provider]
	if p == nil {
		return false
	}
	c := capsOf(p)
	return c.Keyless && !c.IdempotencyKeys
}

// observe reads reality for every resource a converge of the spec over st
// decides on, up to Parallelism at once, and keeps what it saw for the
// Checks of the steps (checkRead).
func (s *session) observe(ctx context.Context, st *state.State) (map[string]*plan.Observation, error) {
	var jobs []observe.Job
	for _, r := range s.sp.Resources {
		if !s.inScope(r.Name, st) {
			continue
		}
		// A reference to what this run creates is not sent: not known yet.
		jobs = append(jobs, s.reads.JobFor(readable(r, st), st.Resources[r.Name]))
	}
	inSpec := s.specNames()
	for _, n := range st.Names() {
		if !inSpec[n] && s.inScope(n, st) {
			jobs = append(jobs, observe.Recorded(st.Resources[n]))
		}
	}
	got, err := s.reads.ReadAll(ctx, jobs)
	if err != nil {
		return nil, err
	}
	s.reads.Keep(jobs, got)
	return got, nil
}

// checkRead is the Read of a step's Check: what the operation's pre-flight
// read saw when nothing this operation does can have changed it since,
// else a fresh Read (observe.Reader.CheckRead says when, and why). A saved
// plan's steps never reuse.
func (s *session) checkRead(ctx context.Context, r *spec.Resource, cur *state.Resource) (*plan.Observation, error) {
	return s.reads.CheckRead(ctx, r, cur, observe.Reuse{Saved: s.saved != nil, KeysReported: s.keysReported(r.Provider)})
}

// specNames is the set of the spec's resource names.
func (s *session) specNames() map[string]bool {
	out := make(map[string]bool, len(s.sp.Resources))
	for _, r := range s.sp.Resources {
		out[r.Name] = true
	}
	return out
}

// validatedPlan validates the spec and plans it. The schemas are checked
// first (the host's checks: no call); then the data entries are read
// (readData); then the providers' own validations
// and the plan's reads run side by side: both only read, neither needs the
// other, and on a provider whose every call takes a round trip the plan
// pays one round trip for both, not one after the other. A problem the
// validation found wins over whatever the reads found or failed on.
func (s *session) validatedPlan(ctx context.Context, st *state.State) (*plan.Plan, map[string]*plan.Observation, error) {
	if err := s.sp.CheckSchemas(s.schemas()); err != nil {
		return nil, nil, err
	}
	// Data is read first: the validations and the plan see the configs
	// with what it read.
	if err := s.readData(ctx); err != nil {
		return nil, nil, err
	}
	if err := s.readStacks(ctx); err != nil {
		return nil, nil, err
	}
	validated := make(chan error, 1)
	go func() { validated <- s.validateConfigs(ctx, st) }()
	pl, obs, err := s.plan(ctx, st)
	if verr := <-validated; verr != nil {
		return nil, nil, verr
	}
	return pl, obs, err
}

// plan reads reality and decides every resource: the plan an apply carries
// out and a dry run shows, with the same refusals.
func (s *session) plan(ctx context.Context, st *state.State) (*plan.Plan, map[string]*plan.Observation, error) {
	if err := s.useTargets(st, false); err != nil {
		return nil, nil, err
	}
	obs, err := s.observe(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	// Sized for the spec up front: a Change is a few hundred bytes, and
	// an apply of N grew the list and the maps by doubling.
	n := len(s.sp.Resources)
	p := &plan.Plan{Spec: s.sp.File, Changes: make([]plan.Change, 0, n)}
	// Decided in dependency order, each with its references resolved from
	// what the plan says of the resources they name (see references.go);
	// listed in the spec's order.
	decided := make(map[string]plan.Change, n)
	cfgs := make(map[string]map[string]any, n)
	lookup := planLookup(st, obs, decided, cfgs)
	// An attribute is sensitive as the state records it or, for what is
	// still to be created, as its type's schema says.
	sensitive := s.attrSensitive(func(addr string) *state.Resource {
		if r := st.Resources[addr]; r != nil {
			return r
		}
		if r, ok := s.specResource(addr); ok {
			return &state.Resource{Type: r.Type, Provider: r.Provider}
		}
		return nil
	})
	for _, r := range specOrder(s.sp.Resources) {
		if !s.inScope(r.Name, st) {
			continue // not covered by --target: neither read nor decided
		}
		rr, _, derived, err := resolvedSecrets(r, lookup, sensitive)
		if err != nil {
			return nil, nil, err
		}
		s.learnDerived(derived)
		if s.derived == nil {
			s.derived = make(map[string][]string, n)
		}
		s.derived[r.Name] = s.derivedSensitive(rr.Config)
		if rr != r {
			c := *rr
			c.Config = afterApply(rr.Config).(map[string]any)
			rr = &c
		}
		cfgs[r.Name] = rr.Config
		o := obs[r.Name]
		if cur := st.Resources[r.Name]; o != nil && o.Planned != nil && cur != nil && plan.HasUnknown(rr.Config) {
			// A provider that plans (a Terraform one) planned toward the
			// config it was read with, whose references to what this run
			// changes were left out: asked again with them unknown, its
			// plan says whether they force a replace, as Terraform's does.
			if o, err = s.replanned(ctx, rr, cur); err != nil {
				return nil, nil, err
			}
		}
		decided[r.Name] = s.decide(rr, st.Resources[r.Name], o, st)
	}
	for _, r := range s.sp.Resources {
		if c, ok := decided[r.Name]; ok {
			p.Changes = append(p.Changes, c)
		}
	}
	for _, n := range st.Names() {
		if _, ok := s.specResource(n); !ok && s.inScope(n, st) {
			p.Changes = append(p.Changes, s.decide(nil, st.Resources[n], obs[n], st))
		}
	}
	return p, obs, nil
}

// replanned reads r again with its config as the plan resolved it
// (unknown values included), for the provider's plan toward it.
func (s *session) replanned(ctx context.Context, r *spec.Resource, cur *state.Resource) (*plan.Observation, error) {
	p := s.plugins[r.Provider]
	if p == nil {
		return nil, fmt.Errorf("%s: provider %q is not running", r.Name, r.Provider)
	}
	resp, err := p.Read(ctx, &providers.ReadRequest{Type: r.Type, Name: r.Name, ID: cur.ID, Config: r.Config, Private: cur.PrivateData()})
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", r.Name, err)
	}
	return observe.Observed(resp, false), nil
}

// recovered is the record of a resource found carrying this stack's key
// that the state does not record.
func (s *session) recovered(r *spec.Resource, obs *plan.Observation) *state.Resource {
	rec := &state.Resource{
		Name: r.Name, Type: r.Type, Provider: r.Provider, Source: s.plugins[r.Provider].Source(), ID: obs.ID,
		Protection: r.Protection, DependsOn: r.DependsOn, Attributes: obs.Attributes, IdempotencyKey: obs.Key,
		// What carries one of this stack's import claims was imported (a
		// crash lost the import's record), not created: no rollback
		// deletes it.
		Imported: plan.IsClaim(obs.Key),
	}
	rec.SetPrivate(obs.Private)
	return rec
}

// keysReported reports whether the provider reports idempotency keys.
func (s *session) keysReported(provider string) bool {
	p := s.plugins[provider]
	return p != nil && capsOf(p).IdempotencyKeys
}
