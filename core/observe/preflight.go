package observe

import (
	"bytes"
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// preflight is what an operation read before its first step (the plan of
// an apply, the ownership check of a teardown), for each step's Check to use
// instead of a second Read of the same thing (see CheckRead).
type preflight struct {
	mu   sync.Mutex
	seen map[string]preRead
}

type preRead struct {
	req          *providers.ReadRequest
	obs          *plan.Observation
	began, ended time.Time // the call that read it
}

// Keep records what jobs read (got, by name) for the Checks of a session
// that will run steps.
func (rd *Reader) Keep(jobs []Job, got map[string]*plan.Observation) {
	if rd.ReadOnly {
		return
	}
	rd.pre.mu.Lock()
	defer rd.pre.mu.Unlock()
	if rd.pre.seen == nil {
		rd.pre.seen = make(map[string]preRead, len(jobs))
	}
	for _, j := range jobs {
		if j.req != nil && got[j.name] != nil {
			rd.pre.seen[j.name] = preRead{req: j.req, obs: got[j.name], began: j.began, ended: j.ended}
		}
	}
}

// take returns, once, what the pre-flight read of name saw when it was
// req.
func (rd *Reader) take(name string, req *providers.ReadRequest) (preRead, bool) {
	rd.pre.mu.Lock()
	defer rd.pre.mu.Unlock()
	p, ok := rd.pre.seen[name]
	if !ok {
		return preRead{}, false
	}
	delete(rd.pre.seen, name)
	return p, sameRead(p.req, req)
}

func sameRead(a, b *providers.ReadRequest) bool {
	return a.Type == b.Type && a.Name == b.Name && a.ID == b.ID && a.IdempotencyKey == b.IdempotencyKey &&
		bytes.Equal(a.Private, b.Private) && reflect.DeepEqual(a.Config, b.Config)
}

// Reuse is what CheckRead needs to know of the operation and the resource's
// provider to use a pre-flight read again.
type Reuse struct {
	// Saved: the operation carries out a saved plan (apply FILE).
	Saved bool
	// KeysReported: the resource's provider reports idempotency keys.
	KeysReported bool
}

// CheckRead is Read for a step's Check. It uses what the operation's
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
func (rd *Reader) CheckRead(ctx context.Context, r *spec.Resource, cur *state.Resource, reuse Reuse) (*plan.Observation, error) {
	j := rd.JobFor(r, cur)
	if j.req != nil && !reuse.Saved {
		if p, ok := rd.take(r.Name, j.req); ok && (j.req.ID != "" || reuse.KeysReported) {
			return p.obs, nil
		}
	}
	return rd.Run(ctx, j)
}

// CheckRecorded is the Read for the Check of a recorded resource's delete.
// The deletion path decides ownership from what the recorded id holds right
// before the Delete, not from what it held when the operation began (a
// chain of a thousand steps can take minutes, and another stack may take a
// freed identity meanwhile): it reads again, unless the pre-flight read of
// it (a teardown's ownership check) ended less long ago than it took. Such
// a read is as fresh as one this Check would make: a Check that read now
// would see what was there up to its own round trip before the Delete too.
// So the first deletes of a teardown go on the ownership check's reads,
// and every later one reads again.
func (rd *Reader) CheckRecorded(ctx context.Context, res *state.Resource) (*plan.Observation, error) {
	j := Recorded(res)
	if p, ok := rd.take(res.Name, j.req); ok && !p.ended.IsZero() && rd.now().Sub(p.ended) < p.ended.Sub(p.began) {
		return p.obs, nil
	}
	return rd.Run(ctx, j)
}
