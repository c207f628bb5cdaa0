package stack

import (
	"context"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/opstore"
	"github.com/bulwark-iac/bulwark/core/storage"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/state"
)

// undo compensates one executed step of this operation, from the state and
// the journal alone (so resume can call it after a crash): what the operation
// created is deleted under the rollback column of the ladder (durable and
// protected are preserved, and stay recorded), what it updated is put back.
// An empty action means there was nothing to undo. What it records rides on
// staged's record.
func (s *session) undo(ctx context.Context, staged *opstore.Stage, name string, action plan.Action, key string) (string, error) {
	cur := s.store.Snapshot().Resources[name]
	switch action {
	case plan.Replace:
		return s.undoReplace(ctx, staged, name, key)
	case plan.Create:
		if cur == nil || cur.CreatedBy != s.opID {
			found, err := s.findByKey(ctx, name, cur, key)
			if err != nil || found == nil {
				return "", err
			}
			cur = found
		}
		action, _, err := s.deleteResource(ctx, staged, cur, reasonRollback, nil)
		if err == nil && action == "preserve" {
			s.retainIfLacking(staged, cur.Name)
		}
		return action, err
	case actionPreserve:
		return s.unretain(staged, name), nil
	case plan.Update:
		if cur == nil {
			return "", nil
		}
		return s.restore(ctx, staged, cur)
	}
	return "", nil
}

// findByKey looks for what a Create under key made, when the state does not
// record it (the Create failed, crashed, or the host died before recording
// it), and records it as created by this operation.
func (s *session) findByKey(ctx context.Context, name string, cur *state.Resource, key string) (*state.Resource, error) {
	if key == "" {
		return nil, nil
	}
	typ, provider, level := "", "", protection.Ephemeral
	var deps []string
	var cfg map[string]any
	if r, ok := s.specResource(name); ok {
		r = readable(r, s.store.Snapshot())
		typ, provider, level, deps, cfg = r.Type, r.Provider, r.Protection, r.DependsOn, r.Config
	} else if cur != nil {
		// The recorded config names what to look for (a bucket's name): a
		// provider finds by key only what the request lets it name.
		typ, provider, cfg = cur.Type, cur.Provider, cur.Config
	} else {
		return nil, fmt.Errorf("undo %s: neither the spec nor the state says what it is", name)
	}
	p := s.plugins[provider]
	if p == nil {
		return nil, fmt.Errorf("undo %s: provider %q is not running", name, provider)
	}
	if capsOf(p).Keyless {
		return s.findUnkeyed(name, cur, typ)
	}
	resp, err := p.Read(ctx, &providers.ReadRequest{Type: typ, Name: name, IdempotencyKey: key, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("undo %s: find what its create made: %w", name, err)
	}
	if !resp.Exists || (cur != nil && resp.ID == cur.ID) {
		return nil, nil
	}
	found := &state.Resource{
		Name: name, Type: typ, Provider: provider, Source: p.Source(), ID: resp.ID,
		Protection: level, DependsOn: deps, Config: cfg, Attributes: resp.Attributes,
		CreatedBy: s.opID, UpdatedBy: s.opID, IdempotencyKey: key,
	}
	found.SetPrivate(resp.Private)
	// Record it before deciding its fate, so a preserved one stays tracked.
	return found, s.store.WriteNow(ctx, storage.Change{Put: []*state.Resource{found}})
}

// restore puts an updated resource back to what it was before this
// operation: the Prior the update recorded, or the recorded config when the
// host died between the provider's Update and the state write.
func (s *session) restore(ctx context.Context, staged *opstore.Stage, cur *state.Resource) (string, error) {
	target := &state.Prior{Config: cur.Config, Attributes: cur.Attributes, Protection: cur.Protection, DependsOn: cur.DependsOn, RetainedBy: cur.RetainedBy}
	if cur.Prior != nil && cur.Prior.Op == s.opID {
		target = cur.Prior
	}
	p := s.plugins[cur.Provider]
	if p == nil {
		return "update", fmt.Errorf("undo %s: provider %q is not running", cur.Name, cur.Provider)
	}
	resp, err := p.Read(ctx, &providers.ReadRequest{Type: cur.Type, Name: cur.Name, ID: cur.ID, Config: target.Config, Private: cur.PrivateData()})
	if err != nil {
		return "update", err
	}
	attrs, private := resp.Attributes, resp.Private
	if len(private) == 0 {
		private = cur.PrivateData()
	}
	if resp.Exists && len(plan.DriftOf(target.Config, resp)) > 0 {
		prot := plan.Level(protection.Unspecified, target.Protection) // ephemeral when none was recorded
		u, err := p.Update(ctx, &providers.UpdateRequest{Type: cur.Type, Name: cur.Name, ID: cur.ID, PriorAttributes: resp.Attributes, Config: target.Config, Protection: prot, Private: private})
		if err != nil {
			return "update", err
		}
		attrs = u.Attributes
		if len(u.Private) > 0 {
			private = u.Private
		}
	}
	r := s.store.Resource(cur.Name)
	if r == nil {
		return "update", nil
	}
	{
		next := *r
		next.Config, next.Attributes, next.DependsOn, next.Prior = target.Config, attrs, target.DependsOn, nil
		next.RetainedBy = target.RetainedBy
		next.SetPrivate(private)
		// The recorded level never drops below what it was.
		next.Protection = plan.Level(r.Protection, target.Protection)
		staged.Put(&next)
		return "update", nil
	}
}
