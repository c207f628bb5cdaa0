package stack

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

func observation(exists bool, id string, attrs map[string]any, key string, byIdentity bool, private []byte) *plan.Observation {
	return &plan.Observation{Exists: exists, ID: id, Attributes: attrs, Key: key, ByIdentity: byIdentity, Private: private}
}

// read asks the provider what exists for a resource of the spec: by the
// recorded id when the state records one of the same kind; by the id the
// spec imports (Import, or Read by id for a provider without it); else by
// natural identity.
func (s *session) read(ctx context.Context, r *spec.Resource, cur *state.Resource) (*plan.Observation, error) {
	return s.readJobFor(r, cur).run(ctx, s)
}

// readJobFor is read as a job, for readAll.
func (s *session) readJobFor(r *spec.Resource, cur *state.Resource) readJob {
	j := readJob{name: r.Name, provider: r.Provider}
	switch {
	case cur != nil && cur.Type == r.Type && cur.Provider == r.Provider:
		j.req = &providers.ReadRequest{Type: r.Type, Name: r.Name, ID: cur.ID, Config: r.Config, Private: cur.PrivateData()}
	case cur == nil && r.Import != "" && s.readOnly():
		// A read-only session (plan) calls nothing but Read: the id the
		// spec imports is read by id.
		j.req = &providers.ReadRequest{Type: r.Type, Name: r.Name, ID: r.Import, Config: r.Config}
		j.wrap = "import " + r.Name
	case cur == nil && r.Import != "":
		j.alone = func(ctx context.Context, p Provider) (*plan.Observation, error) {
			resp, err := p.Import(ctx, &providers.ImportRequest{Type: r.Type, Name: r.Name, ID: r.Import, Config: r.Config})
			if err != nil {
				return nil, fmt.Errorf("import %s: %w", r.Name, err)
			}
			return observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, false, resp.Private), nil
		}
	default:
		j.req = &providers.ReadRequest{Type: r.Type, Name: r.Name, Config: r.Config}
		j.byIdentity = true
	}
	return j
}

// recordedJob reads what exists under a recorded id.
func recordedJob(cur *state.Resource) readJob {
	return readJob{name: cur.Name, provider: cur.Provider,
		req: &providers.ReadRequest{Type: cur.Type, Name: cur.Address(), ID: cur.ID, Config: cur.Config, Private: cur.PrivateData()}}
}

// readJob reads one resource: req, a Read that may travel in a batch with
// others of its provider; or, when req is nil, alone.
type readJob struct {
	name       string
	provider   string
	req        *providers.ReadRequest
	byIdentity bool   // req finds by natural identity, not by id
	wrap       string // what its error is prefixed with, if anything
	alone      func(context.Context, Provider) (*plan.Observation, error)
}

func (j readJob) run(ctx context.Context, s *session) (*plan.Observation, error) {
	p := s.plugins[j.provider]
	if p == nil {
		return nil, fmt.Errorf("%s: provider %q is not running", j.name, j.provider)
	}
	if j.alone != nil {
		return j.alone(ctx, p)
	}
	resp, err := p.Read(ctx, j.req)
	return j.observed(resp, err)
}

func (j readJob) observed(resp *providers.ReadResponse, err error) (*plan.Observation, error) {
	if err != nil {
		if j.wrap != "" {
			return nil, fmt.Errorf("%s: %w", j.wrap, err)
		}
		return nil, err
	}
	return observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, j.byIdentity, resp.Private), nil
}

// observe reads reality for every resource a converge of the spec over st
// decides on, up to Parallelism at once.
func (s *session) observe(ctx context.Context, st *state.State) (map[string]*plan.Observation, error) {
	var jobs []readJob
	for _, r := range s.sp.Resources {
		// A reference to what this run creates is not sent: not known yet.
		jobs = append(jobs, s.readJobFor(readable(r, st), st.Resources[r.Name]))
	}
	inSpec := s.specNames()
	for _, n := range st.Names() {
		if !inSpec[n] {
			jobs = append(jobs, recordedJob(st.Resources[n]))
		}
	}
	got, err := s.readAll(ctx, jobs)
	if err != nil {
		return nil, err
	}
	s.keepPreflight(jobs, got)
	return got, nil
}

// readAll runs jobs, up to Parallelism calls at once: the reads of a
// provider that offers ReadMany in batches (as many batches as there are
// calls to spread them over, of at most maxBatch reads), the others one
// call each. The error of the first job (in order) that failed wins.
func (s *session) readAll(ctx context.Context, jobs []readJob) (map[string]*plan.Observation, error) {
	got := make([]*plan.Observation, len(jobs))
	s.prog.readsStart(len(jobs))
	defer s.prog.readsEnd()
	errs := make([]error, len(jobs))
	// Every call records its own outcome and returns nil: a failed read
	// stops no other (the first failed job, in order, is reported below).
	_ = observe.InBatches(ctx, len(jobs), s.opts.Parallelism, observe.Batches[Provider]{
		Lookup: s.provider,
		ProviderOf: func(i int) string {
			if jobs[i].req == nil {
				return ""
			}
			return jobs[i].provider
		},
		Many: Provider.ReadsMany,
		Single: func(ctx context.Context, i int) error {
			s.prog.readBegin(jobs[i].name)
			got[i], errs[i] = jobs[i].run(ctx, s)
			s.prog.readEnd(jobs[i].name)
			return nil
		},
		Batch: func(ctx context.Context, p Provider, chunk []int) error {
			reqs := make([]*providers.ReadRequest, len(chunk))
			for k, i := range chunk {
				reqs[k] = jobs[i].req
				s.prog.readBegin(jobs[i].name)
			}
			res, err := p.ReadMany(ctx, reqs)
			for k, i := range chunk {
				s.prog.readEnd(jobs[i].name)
				if err != nil {
					errs[i] = err
					continue
				}
				got[i], errs[i] = jobs[i].observed(res[k].Response, res[k].Err)
			}
			return nil
		},
	})
	out := make(map[string]*plan.Observation, len(jobs))
	for i, j := range jobs {
		if errs[i] != nil {
			return nil, fmt.Errorf("read %s: %w", j.name, errs[i])
		}
		if got[i] == nil {
			return nil, fmt.Errorf("read %s: no answer", j.name)
		}
		out[j.name] = got[i]
	}
	return out, nil
}

// preflight is what an operation read before its first step (the plan of
// an apply, the ownership check of a teardown), for each step's Check to use
// instead of a second Read of the same thing (see checkRead).
type preflight struct {
	mu   sync.Mutex
	seen map[string]preRead
}

// keep records what jobs read (got, by name) for the Checks of a session
// that will run steps.
func (s *session) keepPreflight(jobs []readJob, got map[string]*plan.Observation) {
	if s.readOnly() {
		return
	}
	s.pre.mu.Lock()
	defer s.pre.mu.Unlock()
	if s.pre.seen == nil {
		s.pre.seen = make(map[string]preRead, len(jobs))
	}
	for _, j := range jobs {
		if j.req != nil && got[j.name] != nil {
			s.pre.seen[j.name] = preRead{req: j.req, obs: got[j.name]}
		}
	}
}

// takePreflight returns, once, what the pre-flight read of name saw when
// it was req.
func (s *session) takePreflight(name string, req *providers.ReadRequest) (*plan.Observation, bool) {
	s.pre.mu.Lock()
	defer s.pre.mu.Unlock()
	p, ok := s.pre.seen[name]
	if !ok {
		return nil, false
	}
	delete(s.pre.seen, name)
	return p.obs, sameRead(p.req, req)
}

func sameRead(a, b *providers.ReadRequest) bool {
	return a.Type == b.Type && a.Name == b.Name && a.ID == b.ID && a.IdempotencyKey == b.IdempotencyKey &&
		bytes.Equal(a.Private, b.Private) && reflect.DeepEqual(a.Config, b.Config)
}

// checkRead is read for a step's Check. It uses what the operation's
// pre-flight read saw of the resource, instead of reading it again, when
// nothing this operation does can have changed it since: the same request
// (the state's record of it unchanged), made by the recorded id (only the
// resource's own step acts on that id), or by natural identity of a
// provider that reports idempotency keys (another step of this operation
// that took the identity meanwhile makes this step's Create fail with a
// conflict, as the Read would have made it refuse: nothing is claimed or
// duplicated either way). What changes outside bulwark in between is no
// more seen than a change between the Check and the Execute would be; the
// Verify after the Execute still reads. The Check's journal records are
// the same either way.
//
// A saved plan's steps never reuse: each re-decides from a fresh Read, so a
// step whose reality changed since the plan was reviewed fails before its
// Execute instead of running on what the pre-flight saw.
func (s *session) checkRead(ctx context.Context, r *spec.Resource, cur *state.Resource) (*plan.Observation, error) {
	j := s.readJobFor(r, cur)
	if j.req != nil && s.saved == nil {
		if obs, ok := s.takePreflight(r.Name, j.req); ok && (j.req.ID != "" || s.keysReported(r.Provider)) {
			return obs, nil
		}
	}
	return j.run(ctx, s)
}

// checkRecorded is the Read for the Check of a recorded resource's delete.
// It never reuses the pre-flight read: the deletion path decides ownership
// from what the recorded id holds right before the Delete, not from what it
// held when the operation began (a chain of a thousand steps can take
// minutes, and another stack may take a freed identity meanwhile). One more
// Read per delete is the price.
func (s *session) checkRecorded(ctx context.Context, res *state.Resource) (*plan.Observation, error) {
	j := recordedJob(res)
	s.dropPreflight(res.Name)
	return j.run(ctx, s)
}

// dropPreflight forgets what the pre-flight read of name saw.
func (s *session) dropPreflight(name string) {
	s.pre.mu.Lock()
	defer s.pre.mu.Unlock()
	delete(s.pre.seen, name)
}
