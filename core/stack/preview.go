package stack

import (
	"context"
	"errors"
	"slices"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/sdk"

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
	// Sensitive lists attributes whose values must not be shown.
	Sensitive []string `json:"sensitive,omitempty"`
}

// Preview is what a dry run found: every step's Check, no Execute.
type Preview struct {
	Stack   string    `json:"stack"`
	Changes []Planned `json:"changes"`
	// Refused is the ladder's refusal of this plan, if any.
	Refused *plan.RefusedError `json:"refused,omitempty"`
}

// HasChanges reports whether anything would be executed.
func (p *Preview) HasChanges() bool {
	for _, c := range p.Changes {
		if c.Action != plan.NoOp {
			return true
		}
	}
	return false
}

// Plan is the dry run of an apply: it starts the providers, runs every
// step's Check (a provider Read) and never Execute. It takes no lock and
// writes nothing under the state folder, so it can inspect a stack while an
// apply is in flight.
func Plan(ctx context.Context, sp *spec.Spec, opts Options) (*Preview, error) {
	s, st, done, err := inspect(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.validate(ctx); err != nil {
		return nil, err
	}
	pl := plan.ForApply(sp, st, s.schemas())
	pv := &Preview{Stack: sp.Stack, Changes: []Planned{}}
	if err := pl.Check("apply"); err != nil {
		errors.As(err, &pv.Refused)
	}
	for _, c := range pl.Changes {
		pc, err := s.preview(ctx, c, st)
		if err != nil {
			return nil, err
		}
		pv.Changes = append(pv.Changes, pc)
	}
	return pv, nil
}

// preview runs one change's Check.
func (s *session) preview(ctx context.Context, c plan.Change, st *state.State) (Planned, error) {
	cur := st.Resources[c.Resource]
	pc := Planned{Change: c}
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
	if c.Action == plan.Delete {
		resp, err := s.plugins[cur.Provider].Read(ctx, &sdk.ReadRequest{Type: cur.Type, Name: cur.Name, ID: cur.ID, Config: cur.Config})
		if err != nil {
			return pc, err
		}
		if !resp.Exists {
			pc.Action, pc.Drift = plan.NoOp, "already gone"
		}
		pc.Observed = resp.Attributes
		return pc, nil
	}
	r, _ := s.sp.Resource(c.Resource)
	d, err := s.decide(ctx, c, r, cur)
	if err != nil {
		return pc, err
	}
	if d.observe != nil {
		pc.Observed = d.observe.Attributes
	}
	switch {
	case d.done:
		pc.Action = plan.NoOp
	default:
		pc.Action = d.action
	}
	if d.gone {
		pc.Drift = "recorded in the state but not found: it will be created again"
		pc.Vanished = cur.Protection == "durable" || cur.Protection == "protected"
		pc.Before = nil
	}
	if d.adopt {
		pc.Drift = "exists but is not recorded: it will be adopted"
	}
	if d.action == plan.Update && !d.remote && !d.done {
		pc.Drift = "only the recorded protection or dependencies change"
	}
	if pc.Action == plan.Replace && len(pc.ForceNew) == 0 && d.observe != nil {
		// The replace was found in reality, not in the state's record.
		for _, k := range plan.Drift(r.Config, d.observe.Attributes) {
			pc.ForceNew = append(pc.ForceNew, k)
		}
	}
	return pc, nil
}
