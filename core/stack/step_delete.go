package stack

import (
	"context"
	"errors"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/opstore"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/state"
)

// reason says why a resource is being deleted; the ladder treats them
// differently.
type reason int

const (
	reasonRollback reason = iota // undoing a failed apply: durable is preserved
	reasonTeardown               // an explicit teardown: durable is deleted
	reasonRemoved                // gone from the spec: durable is deleted
	reasonReplace                // replaced: durable is deleted (the run consented: --replace)
	// reasonDeleteFirst is a replace whose old and new cannot exist at
	// once: the old one (set aside, see state.DeposedName) is deleted
	// before the new one is made, and its record stays until the
	// operation ends, so a rollback can make its configuration again.
	reasonDeleteFirst
	// reasonUndoReplace is a rollback deleting the replacement its run
	// made, so the old resource it replaced is current again: that is
	// what "the system is where it started" (exit 11) means. A durable
	// replacement is deleted too: it exists only since this run, which
	// the user consented to replace it in (--replace), it holds nothing
	// that existed before the run, and keeping it would leave two where
	// there was one (CloudFormation's update rollback deletes the new
	// physical resources the same way). A protected one is never replaced,
	// so never reaches here; were it to, it is refused like any other.
	reasonUndoReplace
)

// ErrProtected is returned (wrapped) when something asks to delete a
// protected resource.
var ErrProtected = errors.New("refused to delete a protected resource")

// levelOf is the protection that governs deleting res: the higher of the
// state's record and the spec's, so neither editing the spec nor a stale
// record can lower it.
//
// A record that holds a protection word no level names (kept aside as
// UnknownProtection when it was read) counts as protected, whatever the
// spec says: every Load and every write refuses such a record first, and
// this is the deletion path's own guess that deletes nothing, should one
// ever reach it.
func (s *session) levelOf(res *state.Resource) protection.Level {
	if res.UnknownProtection != "" {
		return protection.Protected
	}
	desired := protection.Ephemeral
	if r, ok := s.specResource(res.Name); ok {
		desired = r.Protection
	}
	return plan.Level(res.Protection, desired)
}

// isRetained reports whether res is retained: its record says so, or the
// state's record of the same resource now does.
func (s *session) isRetained(res *state.Resource) bool {
	if res.RetainedBy != "" {
		return true
	}
	cur := s.store.Resource(res.Name)
	return cur != nil && cur.ID == res.ID && cur.RetainedBy != ""
}

// deleteResource is the one code path in bulwark that asks a provider to
// delete. It never deletes a protected resource, whatever the reason, and
// preserves a durable one during a rollback. It returns the action taken
// ("delete", "preserve" or "refuse") and, after a delete, what the provider
// read of the resource once deleted in the same call, when it offers that
// (providers.Capabilities.DeleteReadsBack), it runs outside a run's steps
// (engine.InRun says why a step's Delete asks for none), it is no
// rollback's (nothing verifies a compensation), and the read could be
// made, for the step's Verify (nil otherwise: Verify reads). seen is what
// the step's Check read of res right before, when it did (nil: none): a
// keyless provider (built for Terraform, which reads what it destroys
// first) is given that read's private data as observed
// (DeleteRequest.Observed), instead of reading it a second time.
//
// The record of what it deleted is dropped with staged's record, the
// Delete's answer taken as the proof; a step that verifies its delete
// passes staged nil and drops the record only once its read has found the
// resource gone (deleteThenVerify), so that a crash between the answer and
// the read leaves the record, and the resume reads it again.
func (s *session) deleteResource(ctx context.Context, staged *opstore.Stage, res *state.Resource, why reason, seen *plan.Observation) (string, *providers.ReadResponse, error) {
	level := s.levelOf(res)
	switch {
	case (why == reasonRollback || why == reasonRemoved) && s.isRetained(res):
		// Retained (kept by a rollback): no apply or rollback deletes it;
		// only a teardown does, under its level (see step_retain.go).
		return "preserve", nil, nil
	case why == reasonRollback && level != protection.Ephemeral:
		// The ladder's first column: a rollback preserves what holds data.
		return "preserve", nil, nil
	case level == protection.Protected:
		return "refuse", nil, fmt.Errorf("%s (%s): %w", res.Name, res.Type, ErrProtected)
	case level != protection.Ephemeral && level != protection.Durable:
		return "refuse", nil, fmt.Errorf("%s (%s): unknown protection level: %w", res.Name, res.Type, ErrProtected)
	}
	p := s.plugins[res.Provider]
	if p == nil {
		return "delete", nil, fmt.Errorf("delete %s: provider %q is not running", res.Name, res.Provider)
	}
	// A rollback's delete asks for no read-back: nothing verifies a
	// compensation, and the read would hold its slot for a round trip
	// more (the undo of a run goes up to --parallelism at once).
	undoing := why == reasonRollback || why == reasonUndoReplace
	req := &providers.DeleteRequest{Type: res.Type, Name: res.Address(), ID: res.ID, Attributes: res.Attributes, Protection: level, Private: res.PrivateData(),
		ReadBack: capsOf(p).DeleteReadsBack && !engine.InRun(ctx) && !undoing}
	if seen != nil && seen.Exists && seen.ID == res.ID && len(seen.Private) > 0 && capsOf(p).Keyless {
		req.Private, req.Observed = seen.Private, true
	}
	if capsOf(p).DeleteChecksKey {
		// The provider deletes only what still carries the key this
		// stack recorded, as one act: a takeover at any moment before
		// the Delete is refused by the Delete itself.
		req.ExpectedKey = res.IdempotencyKey
	}
	resp, err := p.Delete(ctx, req)
	if err != nil {
		if req.ExpectedKey != "" && providers.IsConflict(err) {
			return "delete", nil, fmt.Errorf("%s: the state records %s under key %s, but the provider found another key there: it is not deleted (run `bulwark state forget`): %w", res.Name, res.ID, res.IdempotencyKey, err)
		}
		return "delete", nil, err
	}
	if why != reasonDeleteFirst && staged != nil {
		s.forget(staged, res)
	}
	if resp == nil {
		return "delete", nil, nil
	}
	return "delete", trusted(resp.ReadBack), nil
}
