// Package observe is how an operation learns what exists: the reads of a
// plan (a resource of the spec, by recorded id, imported id or natural
// identity; a recorded resource by its id), made up to Parallelism at once
// and in batches where a provider reads many in one call; the pre-flight
// reads a step's Check may use again instead of a second Read; and the one
// batcher (InBatches) that the reads and the validations of a spec share.
// It decides nothing: what a read means is core/plan's, which resources
// are read core/stack's.
package observe

import (
	"context"
	"fmt"
	"time"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Provider is what reads need of a running provider (core/stack's Provider
// is one).
type Provider interface {
	Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error)
	// Import reads a resource by id for a take-over: the provider's Import
	// when it has one, else Read by id.
	Import(ctx context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error)
	// ReadsMany says whether ReadMany is one call (else it reads one after
	// the other).
	ReadsMany() bool
	ReadMany(ctx context.Context, reqs []*providers.ReadRequest) ([]providers.ReadResult, error)
}

// Progress is told of the reads of a ReadAll: ReadsStarted(n) begins n
// reads, ReadStarted and ReadEnded bracket each, ReadsEnded ends them.
type Progress interface {
	ReadsStarted(n int)
	ReadStarted(name string)
	ReadEnded(name string)
	ReadsEnded()
}

// Reader makes an operation's reads and keeps what its pre-flight reads saw
// (Keep) for the Checks of its steps (CheckRead). One per session; set its
// fields before the first read.
type Reader struct {
	// Lookup returns the running provider of a local name (false: none
	// runs).
	Lookup func(name string) (Provider, bool)
	// Parallelism is the most calls at once (at least one).
	Parallelism int
	// Spread is how many batch calls the reads of a provider that reads
	// many in one call are spread over (0: Parallelism): the writes'
	// parallelism, so a batch is as large as the writes it feeds, and a
	// larger read parallelism does not cut it into more round trips.
	Spread int
	// Progress is told of ReadAll's reads.
	Progress Progress
	// Now is the clock of the reads' times (nil: time.Now).
	Now func() time.Time
	// ReadOnly is set for a session that calls nothing but Read (plan): an
	// imported id is read by id, and nothing is kept for Checks.
	ReadOnly bool

	pre preflight
}

func (rd *Reader) now() time.Time {
	if rd.Now != nil {
		return rd.Now()
	}
	return time.Now()
}

// Observed is what a Read answered, as the planner sees it.
func Observed(resp *providers.ReadResponse, byIdentity bool) *plan.Observation {
	o := Observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, byIdentity, resp.Private)
	o.Planned = resp.Planned
	return o
}

// Observation is what a read found.
func Observation(exists bool, id string, attrs map[string]any, key string, byIdentity bool, private []byte) *plan.Observation {
	return &plan.Observation{Exists: exists, ID: id, Attributes: attrs, Key: key, ByIdentity: byIdentity, Private: private}
}

// Read asks the provider what exists for a resource of the spec: by the
// recorded id when the state records one of the same kind; by the id the
// spec imports (Import, or Read by id for a provider without it); else by
// natural identity.
func (rd *Reader) Read(ctx context.Context, r *spec.Resource, cur *state.Resource) (*plan.Observation, error) {
	return rd.Run(ctx, rd.JobFor(r, cur))
}

// JobFor is Read as a job, for ReadAll.
func (rd *Reader) JobFor(r *spec.Resource, cur *state.Resource) Job {
	j := Job{name: r.Name, provider: r.Provider}
	switch {
	case cur != nil && cur.Type == r.Type && cur.Provider == r.Provider:
		j.req = &providers.ReadRequest{Type: r.Type, Name: r.Name, ID: cur.ID, Config: r.Config, Private: cur.PrivateData()}
	case cur == nil && r.Import != "" && rd.ReadOnly:
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
			return Observation(resp.Exists, resp.ID, resp.Attributes, resp.IdempotencyKey, false, resp.Private), nil
		}
	default:
		j.req = &providers.ReadRequest{Type: r.Type, Name: r.Name, Config: r.Config}
		j.byIdentity = true
	}
	return j
}

// Recorded is the job that reads what exists under a recorded id.
func Recorded(cur *state.Resource) Job {
	return Job{name: cur.Name, provider: cur.Provider,
		req: &providers.ReadRequest{Type: cur.Type, Name: cur.Address(), ID: cur.ID, Config: cur.Config, Private: cur.PrivateData()}}
}

// Job reads one resource: req, a Read that may travel in a batch with
// others of its provider; or, when req is nil, alone.
type Job struct {
	name       string
	provider   string
	req        *providers.ReadRequest
	byIdentity bool   // req finds by natural identity, not by id
	wrap       string // what its error is prefixed with, if anything
	alone      func(context.Context, Provider) (*plan.Observation, error)
	// began and ended are when ReadAll's call for it was made (see
	// Reader.CheckRecorded).
	began, ended time.Time
}

// Run makes j's read, alone.
func (rd *Reader) Run(ctx context.Context, j Job) (*plan.Observation, error) {
	p, ok := rd.Lookup(j.provider)
	if !ok {
		return nil, fmt.Errorf("%s: provider %q is not running", j.name, j.provider)
	}
	if j.alone != nil {
		return j.alone(ctx, p)
	}
	resp, err := p.Read(ctx, j.req)
	return j.observed(resp, err)
}

func (j Job) observed(resp *providers.ReadResponse, err error) (*plan.Observation, error) {
	if err != nil {
		if j.wrap != "" {
			return nil, fmt.Errorf("%s: %w", j.wrap, err)
		}
		return nil, err
	}
	return Observed(resp, j.byIdentity), nil
}

// ReadAll runs jobs, up to Parallelism calls at once: the reads of a
// provider that offers ReadMany in batches (as many batches as there are
// calls to spread them over, of at most maxBatch reads), the others one
// call each. The error of the first job (in order) that failed wins. What
// each found is returned by its resource's name.
func (rd *Reader) ReadAll(ctx context.Context, jobs []Job) (map[string]*plan.Observation, error) {
	got := make([]*plan.Observation, len(jobs))
	rd.Progress.ReadsStarted(len(jobs))
	defer rd.Progress.ReadsEnded()
	errs := make([]error, len(jobs))
	// Every call records its own outcome and returns nil: a failed read
	// stops no other (the first failed job, in order, is reported below).
	_ = InBatches(ctx, len(jobs), rd.Parallelism, Batches[Provider]{
		Spread: rd.Spread,
		Lookup: rd.Lookup,
		ProviderOf: func(i int) string {
			if jobs[i].req == nil {
				return ""
			}
			return jobs[i].provider
		},
		Many: Provider.ReadsMany,
		Single: func(ctx context.Context, i int) error {
			rd.Progress.ReadStarted(jobs[i].name)
			jobs[i].began = rd.now()
			got[i], errs[i] = rd.Run(ctx, jobs[i])
			jobs[i].ended = rd.now()
			rd.Progress.ReadEnded(jobs[i].name)
			return nil
		},
		Batch: func(ctx context.Context, p Provider, chunk []int) error {
			reqs := make([]*providers.ReadRequest, len(chunk))
			for k, i := range chunk {
				reqs[k] = jobs[i].req
				rd.Progress.ReadStarted(jobs[i].name)
			}
			began := rd.now()
			res, err := p.ReadMany(ctx, reqs)
			ended := rd.now()
			for k, i := range chunk {
				jobs[i].began, jobs[i].ended = began, ended
				rd.Progress.ReadEnded(jobs[i].name)
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
