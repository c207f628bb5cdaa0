package stack

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/opstore"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Retention: every rollback (of a failed apply, or `bulwark rollback --to N`)
// follows the ladder's rollback column. A durable or protected resource that
// the revision it goes back to lacks is kept, and recorded as retained
// (state.Resource.RetainedBy): still this stack's, listed by status and plan,
// never deleted by an apply (one whose spec has it again takes it back as an
// ordinary resource); a teardown deletes it under its level (durable deleted,
// protected refused), `state forget` releases it. CloudFormation's
// DeletionPolicy: Retain and Pulumi's retainOnDelete keep a resource the
// same way; here the stack keeps owning it, so nothing is orphaned unseen.
//
// A protected resource the target revision lacks is kept the same way: the
// ladder's rollback column preserves it, so `rollback --to N` is not refused
// for it (a rollback deletes nothing that holds data, so there is nothing to
// refuse), and it stays protected.

// actionPreserve is what a retain step does, as its events and journal
// records name it (the lifecycle events' "preserve").
const actionPreserve plan.Action = "preserve"

// retainStep is a rollback's step for a resource its target revision lacks
// that the ladder keeps (plan.Retain): Check = already retained (or no
// longer recorded): skipped; Execute = record it as retained by this
// operation; Verify = the record says so; Compensate = the mark is taken
// off again (see undo). Nothing is asked of a provider: nothing is deleted.
func (s *session) retainStep(c plan.Change, st *state.State) *engine.Step {
	res := st.Resources[c.Resource]
	step := &engine.Step{ID: c.Resource, Resource: c.Resource, Type: res.Type, Action: string(actionPreserve)}
	staged := s.store.ForStep(step.ID)
	step.Check = func(context.Context) (bool, error) {
		cur := s.store.Resource(c.Resource)
		return cur == nil || cur.RetainedBy != "", nil
	}
	step.Execute = func(context.Context, string) error {
		s.retain(staged, c.Resource)
		return nil
	}
	step.Verify = func(context.Context) error {
		if cur := staged.Resource(c.Resource); cur == nil || cur.RetainedBy == "" {
			return fmt.Errorf("%s is not recorded as retained", c.Resource)
		}
		return nil
	}
	step.Compensate = func(ctx context.Context) (string, error) {
		return s.undo(ctx, staged, c.Resource, actionPreserve, "")
	}
	return step
}

// retain records name as retained by this operation, with staged's record
// (a no-op when it is no longer recorded, or already retained).
func (s *session) retain(staged *opstore.Stage, name string) {
	cur := s.store.Resource(name)
	if cur == nil || cur.RetainedBy != "" {
		return
	}
	next := *cur
	next.RetainedBy = s.opID
	staged.Put(&next)
}

// unretain undoes retain: the mark this operation put on name comes off
// (one another operation put stays), with staged's record. It returns the
// action taken ("": nothing to undo).
func (s *session) unretain(staged *opstore.Stage, name string) string {
	cur := s.store.Resource(name)
	if cur == nil || cur.RetainedBy != s.opID {
		return ""
	}
	next := *cur
	next.RetainedBy = ""
	staged.Put(&next)
	return string(actionPreserve)
}

// retainIfLacking records as retained a resource a failed operation's
// rollback kept (durable or protected, preserved by the deletion path)
// when the revision that rollback returns to lacks it: the current one
// (an operation makes its own revision current only when it succeeds;
// none before the first apply and after a teardown). A resource that
// revision has (one replaced, or created again after drift) is an ordinary
// resource of it, not retained.
func (s *session) retainIfLacking(staged *opstore.Stage, name string) {
	if s.restoredNames()[name] {
		return
	}
	s.retain(staged, name)
}

// restoredSet is the names of the resources of the revision a failed
// operation's rollback returns to, read once per session.
type restoredSet struct {
	once  sync.Once
	names map[string]bool
}

// restoredNames is the current revision's resource names. A revision whose
// spec cannot be read back (its body lost, a variable it did not record)
// counts as lacking every resource: a resource is then retained, which
// only ever keeps more.
func (s *session) restoredNames() map[string]bool {
	s.restored.once.Do(func() {
		s.restored.names = map[string]bool{}
		st := s.store.Snapshot()
		rev, ok := st.Revision(st.Current)
		if !ok || rev.Status != state.RevisionApplied {
			return
		}
		rev, err := s.withBody(rev)
		if err != nil {
			return
		}
		rsp, err := revisionSpec(rev)
		if err != nil {
			return
		}
		for _, r := range rsp.Resources {
			s.restored.names[r.Name] = true
		}
	})
	return s.restored.names
}

// takeBack is what a successful apply, update or rollback writes with its
// end: every retained resource its spec has, the mark taken off (an
// ordinary resource of the revision it made current). It rides on the
// operation's end record, so the plan and the steps need not change for
// it: a retained resource the spec has again is planned as any other.
func (s *session) takeBack() []*state.Resource {
	st := s.store.Snapshot()
	var out []*state.Resource
	for _, n := range st.Names() {
		r := st.Resources[n]
		if r.RetainedBy == "" {
			continue
		}
		if _, inSpec := s.specResource(n); !inSpec {
			continue
		}
		next := *r
		next.RetainedBy = ""
		out = append(out, &next)
	}
	return out
}

// retainedBy lists, sorted, the resources operation op recorded as retained.
func (s *session) retainedBy(op string) []string {
	st := s.store.Snapshot()
	var out []string
	for name, r := range st.Resources {
		if r.RetainedBy == op {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
