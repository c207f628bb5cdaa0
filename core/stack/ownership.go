package stack

import (
	"context"
	"errors"
	"fmt"
	"github.com/bulwark-iac/bulwark/core/storage"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/sdk"
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
	e := plan.Env{Schemas: s.schemas(), Identity: s.identity(), KeysReported: map[string]bool{}}
	for n, sc := range e.Schemas {
		e.KeysReported[n] = sc != nil && sc.Capabilities.IdempotencyKeys
	}
	return e
}

// decide is plan.Decide for one resource, with what the state records under
// other names (a resource found by identity that the state records under
// another name, after `state mv`, is not free).
func (s *session) decide(r *spec.Resource, cur *state.Resource, obs *plan.Observation, st *state.State) plan.Change {
	in := s.env().Input(r, cur, obs)
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

func observation(exists bool, id string, attrs map[string]any, key string, byIdentity bool, private []byte) *plan.Observation {
	return &plan.Observation{Exists: exists, ID: id, Attributes: attrs, Key: key, ByIdentity: byIdentity, Private: private}
}

// read asks the provider what exists for a resource of the spec: by the
// recorded id when the state records one of the same kind; by the id the
// spec imports (Import, or Read by id for a provider without it); else by
// natural identity.
func (s *session) read(ctx context.Context, r *spec.Resource, cur *state.Resource) (*plan.Observation, error) {
	p := s.plugins[r.Provider]
	if p == nil {
		return nil, fmt.Errorf("%s: provider %q is not running", r.Name, r.Provider)
	}
	switch {
	case cur != nil && cur.Type == r.Type && cur.Provider == r.Provider:
		resp, err := p.Read(ctx, &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: cur.ID, Config: r.Config, Private: cur.PrivateData()})
		if err != nil {
			return nil, err
		}
		return observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, false, resp.Private), nil
	case cur == nil && r.Import != "" && s.readOnly():
		// A read-only session (plan) calls nothing but Read: the id the
		// spec imports is read by id.
		resp, err := p.Read(ctx, &sdk.ReadRequest{Type: r.Type, Name: r.Name, ID: r.Import, Config: r.Config})
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", r.Name, err)
		}
		return observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, false, resp.Private), nil
	case cur == nil && r.Import != "":
		resp, err := p.Import(ctx, &sdk.ImportRequest{Type: r.Type, Name: r.Name, ID: r.Import, Config: r.Config})
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", r.Name, err)
		}
		return observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, false, resp.Private), nil
	}
	resp, err := p.Read(ctx, &sdk.ReadRequest{Type: r.Type, Name: r.Name, Config: r.Config})
	if err != nil {
		return nil, err
	}
	return observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, true, resp.Private), nil
}

// readRecorded asks the provider what exists under a recorded id.
func (s *session) readRecorded(ctx context.Context, cur *state.Resource) (*plan.Observation, error) {
	p := s.plugins[cur.Provider]
	if p == nil {
		return nil, fmt.Errorf("%s: provider %q is not running", cur.Name, cur.Provider)
	}
	resp, err := p.Read(ctx, &sdk.ReadRequest{Type: cur.Type, Name: cur.Name, ID: cur.ID, Config: cur.Config, Private: cur.PrivateData()})
	if err != nil {
		return nil, err
	}
	return observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, false, resp.Private), nil
}

// readJob reads one resource for observe.
type readJob struct {
	name string
	read func(context.Context) (*plan.Observation, error)
}

// observe reads reality for every resource a converge of the spec over st
// decides on, up to Parallelism at once.
func (s *session) observe(ctx context.Context, st *state.State) (map[string]*plan.Observation, error) {
	var jobs []readJob
	for _, r := range s.sp.Resources {
		// A reference to what this run creates is not sent: not known yet.
		r, cur := readable(r, st), st.Resources[r.Name]
		jobs = append(jobs, readJob{r.Name, func(ctx context.Context) (*plan.Observation, error) { return s.read(ctx, r, cur) }})
	}
	for _, n := range st.Names() {
		if _, ok := s.sp.Resource(n); !ok {
			cur := st.Resources[n]
			jobs = append(jobs, readJob{n, func(ctx context.Context) (*plan.Observation, error) { return s.readRecorded(ctx, cur) }})
		}
	}
	return s.readAll(ctx, jobs)
}

// checkOwned reads every resource a teardown plan deletes and refuses the
// run (a *plan.ConflictError) when what a recorded id holds now carries
// another key: it is not this stack's to delete.
func (s *session) checkOwned(ctx context.Context, st *state.State, pl *plan.Plan) error {
	var jobs []readJob
	for _, c := range pl.Changes {
		if cur := st.Resources[c.Resource]; cur != nil {
			jobs = append(jobs, readJob{c.Resource, func(ctx context.Context) (*plan.Observation, error) { return s.readRecorded(ctx, cur) }})
		}
	}
	obs, err := s.readAll(ctx, jobs)
	if err != nil {
		return err
	}
	checked := &plan.Plan{Spec: s.sp.File}
	for _, c := range pl.Changes {
		if cur := st.Resources[c.Resource]; cur != nil {
			checked.Changes = append(checked.Changes, plan.Decide(s.env().Input(nil, cur, obs[c.Resource])))
		}
	}
	var ce *plan.ConflictError
	if err := checked.Check("teardown"); errors.As(err, &ce) {
		return ce
	}
	return nil
}

// readAll runs jobs, up to Parallelism at once; the error of the first job
// (in order) that failed wins.
func (s *session) readAll(ctx context.Context, jobs []readJob) (map[string]*plan.Observation, error) {
	got := make([]*plan.Observation, len(jobs))
	s.prog.readsStart(len(jobs))
	defer s.prog.readsEnd()
	err := forEach(ctx, len(jobs), s.opts.Parallelism, func(ctx context.Context, i int) error {
		s.prog.readBegin(jobs[i].name)
		obs, err := jobs[i].read(ctx)
		s.prog.readEnd(jobs[i].name)
		if err != nil {
			return fmt.Errorf("read %s: %w", jobs[i].name, err)
		}
		got[i] = obs
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*plan.Observation, len(jobs))
	for i, j := range jobs {
		out[j.name] = got[i]
	}
	return out, nil
}

// plan reads reality and decides every resource: the plan an apply carries
// out and a dry run shows, with the same refusals.
func (s *session) plan(ctx context.Context, st *state.State) (*plan.Plan, map[string]*plan.Observation, error) {
	obs, err := s.observe(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	p := &plan.Plan{Spec: s.sp.File}
	// Decided in dependency order, each with its references resolved from
	// what the plan says of the resources they name (see references.go);
	// listed in the spec's order.
	decided := map[string]plan.Change{}
	cfgs := map[string]map[string]any{}
	lookup := planLookup(st, obs, decided, cfgs)
	for _, r := range specOrder(s.sp.Resources) {
		rr, _, err := resolved(r, lookup)
		if err != nil {
			return nil, nil, err
		}
		if s.derived == nil {
			s.derived = map[string][]string{}
		}
		s.derived[r.Name] = s.derivedSensitive(rr.Config)
		if rr != r {
			c := *rr
			c.Config = afterApply(rr.Config).(map[string]any)
			rr = &c
		}
		cfgs[r.Name] = rr.Config
		decided[r.Name] = s.decide(rr, st.Resources[r.Name], obs[r.Name], st)
	}
	for _, r := range s.sp.Resources {
		p.Changes = append(p.Changes, decided[r.Name])
	}
	for _, n := range st.Names() {
		if _, ok := s.sp.Resource(n); !ok {
			p.Changes = append(p.Changes, s.decide(nil, st.Resources[n], obs[n], st))
		}
	}
	return p, obs, nil
}

// recovered is the record of a resource found carrying this stack's key
// that the state does not record.
func (s *session) recovered(r *spec.Resource, obs *plan.Observation) *state.Resource {
	rec := &state.Resource{
		Name: r.Name, Type: r.Type, Provider: r.Provider, Source: s.plugins[r.Provider].Source(), ID: obs.ID,
		Protection: r.Protection.String(), DependsOn: r.DependsOn, Attributes: obs.Attributes, IdempotencyKey: obs.Key,
	}
	rec.SetPrivate(obs.Private)
	return rec
}
