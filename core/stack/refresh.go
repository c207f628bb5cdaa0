package stack

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// OpRefresh is the type of a refresh-only apply's operation: it records
// what reality holds in the state and changes nothing in reality.
const OpRefresh = "refresh"

// Refresh actions: what a refresh-only run does to one record.
const (
	RefreshNoOp     = "no-op"     // reality matches the record
	RefreshUpdate   = "update"    // the record takes what reality holds (Drifted)
	RefreshDrop     = "drop"      // gone from reality, ephemeral: the record is dropped
	RefreshVanished = "vanished"  // gone from reality, durable or protected: the record is kept
	RefreshConflict = "conflict"  // what the recorded id holds is not this stack's: the record is kept
	RefreshSkipped  = "unchanged" // not covered by --target
)

// Refreshed is one recorded resource as a refresh-only run found it.
type Refreshed struct {
	Address    string           `json:"address"`
	Type       string           `json:"type"`
	Provider   string           `json:"provider"`
	Protection protection.Level `json:"protection"`
	ID         string           `json:"id"`
	Action     string           `json:"action"`
	// Drifted names the attributes whose recorded values differ from
	// reality's, sorted; Before and After are the recorded and the observed
	// values of those, a sensitive one's never shown (Sensitive names it).
	Drifted   []string       `json:"drifted,omitempty"`
	Before    map[string]any `json:"before,omitempty"`
	After     map[string]any `json:"after,omitempty"`
	Sensitive []string       `json:"sensitive,omitempty"`
	Reason    string         `json:"reason,omitempty"`
	// observed is what the Read returned, for the apply; secret names
	// every attribute of it that is sensitive (sealed in the state).
	observed *plan.Observation
	secret   []string
}

// RefreshPreview is the plan of a refresh-only run: which records would
// change, and how.
type RefreshPreview struct {
	Stack     string      `json:"stack"`
	Resources []Refreshed `json:"resources"`
	Targets   []string    `json:"targets,omitempty"`
}

// HasChanges reports whether applying it would change any record.
func (p *RefreshPreview) HasChanges() bool {
	for _, r := range p.Resources {
		if r.Action == RefreshUpdate || r.Action == RefreshDrop {
			return true
		}
	}
	return false
}

// RefreshPlan reads every resource the state records and says what a
// refresh-only apply would record: no lock, nothing written, no call that
// changes anything.
func RefreshPlan(ctx context.Context, sp *spec.Spec, opts Options) (*RefreshPreview, error) {
	s, st, done, err := inspect(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.refreshPreview(ctx, st)
}

// Refresh is apply --refresh-only: it reads every resource the state
// records and records what reality holds (drifted attributes; an
// ephemeral resource gone from reality is dropped from the state), as one
// journaled operation of type refresh whose one state write is atomic. It
// makes no Create, Update or Delete. A durable or protected resource gone
// from reality keeps its record (its data may be gone: a person decides,
// with `state forget`); what the recorded id holds now under another
// stack's key is left alone. opts.ReviewRefresh, when set, is shown the
// plan first; false cancels.
func Refresh(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	st := s.store.Snapshot()
	var names []string
	for _, r := range st.Resources {
		names = append(names, r.Provider)
	}
	if err := s.startProviders(ctx, names, st); err != nil {
		return nil, err
	}
	pv, err := s.refreshPreview(ctx, st)
	if err != nil {
		return nil, err
	}
	if s.opts.ReviewRefresh != nil && !s.opts.ReviewRefresh(pv) {
		return nil, &CancelledError{Op: OpRefresh}
	}
	s.opType = OpRefresh
	res := s.stateOp(ctx, OpRefresh, "refresh", "state", "", func(ctx context.Context) error {
		return s.store.MutateNow(ctx, func(now *state.State) error {
			for _, r := range pv.Resources {
				cur := now.Resources[r.Address]
				if cur == nil || cur.ID != r.ID {
					continue // changed since it was read: left for the next refresh
				}
				switch r.Action {
				case RefreshUpdate:
					c := *cur
					c.Attributes = maps.Clone(r.observed.Attributes)
					c.Sensitive = slices.Clone(cur.Sensitive)
					for _, k := range r.secret {
						if !slices.Contains(c.Sensitive, k) {
							c.Sensitive = append(c.Sensitive, k)
						}
					}
					if r.observed.Private != nil {
						c.SetPrivate(r.observed.Private)
					}
					c.UpdatedBy = s.opID
					now.Resources[r.Address] = &c
				case RefreshDrop:
					delete(now.Resources, r.Address)
				}
			}
			return nil
		})
	})
	res.Changed = 0
	for _, r := range pv.Resources {
		if res.Outcome == engine.Succeeded && (r.Action == RefreshUpdate || r.Action == RefreshDrop) {
			res.Changed++
		}
	}
	res.Unchanged = len(pv.Resources) - res.Changed
	res.Targets = slices.Clone(s.opts.Targets)
	return res, nil
}

// refreshPreview reads every record of st (the targets' only, under
// --target) and decides what a refresh records of each.
func (s *session) refreshPreview(ctx context.Context, st *state.State) (*RefreshPreview, error) {
	if err := s.useTargets(st, false); err != nil {
		return nil, err
	}
	var jobs []observe.Job
	var recs []*state.Resource
	for _, n := range st.Names() {
		cur := st.Resources[n]
		if cur.Deposed() || !s.inScope(n, st) {
			continue
		}
		recs = append(recs, cur)
		jobs = append(jobs, observe.Recorded(cur))
	}
	obs, err := s.reads.ReadAll(ctx, jobs)
	if err != nil {
		return nil, err
	}
	pv := &RefreshPreview{Stack: s.sp.Stack, Resources: []Refreshed{}, Targets: slices.Clone(s.opts.Targets)}
	sensitive := s.attrSensitive(func(addr string) *state.Resource { return st.Resources[addr] })
	for _, cur := range recs {
		o := obs[cur.Name]
		r := Refreshed{Address: cur.Name, Type: cur.Type, Provider: cur.Provider, Protection: cur.Protection, ID: cur.ID, Action: RefreshNoOp, observed: o}
		switch {
		case o == nil || !o.Exists:
			if cur.Protection == protection.Ephemeral {
				r.Action, r.Reason = RefreshDrop, "gone from reality: its record is dropped"
			} else {
				r.Action = RefreshVanished
				r.Reason = fmt.Sprintf("gone from reality, and %s: its record is kept (its data may be gone; `bulwark state forget` drops the record once you decide)", cur.Protection)
			}
		case plan.Decide(s.input(nil, cur, o)).Action == plan.Conflict:
			r.Action, r.Reason = RefreshConflict, "what its recorded id holds now is not this stack's: its record is left as it is"
		default:
			for _, k := range slices.Sorted(maps.Keys(unionKeys(cur.Attributes, o.Attributes))) {
				if !plan.Equal(cur.Attributes[k], o.Attributes[k]) {
					r.Drifted = append(r.Drifted, k)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(o.Attributes)) {
				if sensitive(cur.Name, k) {
					r.secret = append(r.secret, k)
					s.opts.Redactor.Add(o.Attributes[k])
				}
			}
			if len(r.Drifted) > 0 {
				r.Action = RefreshUpdate
				r.Before, r.After = map[string]any{}, map[string]any{}
				for _, k := range r.Drifted {
					if sensitive(cur.Name, k) {
						r.Sensitive = append(r.Sensitive, k)
						s.opts.Redactor.Add(o.Attributes[k])
						continue
					}
					r.Before[k], r.After[k] = cur.Attributes[k], o.Attributes[k]
				}
			}
		}
		pv.Resources = append(pv.Resources, r)
	}
	return pv, nil
}

func unionKeys(a, b map[string]any) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
