package stack

import (
	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/state"
	"slices"
)

func nextRevision(st *state.State) int {
	n := 0
	for _, r := range st.Revisions {
		n = max(n, r.N)
	}
	return n + 1
}

// unstage drops what an unfinished update or rollback staged.
func (s *session) unstage(st *state.State) {
	if st.Staged == 0 {
		return
	}
	if r, ok := st.Revision(st.Staged); ok && r.Status == state.RevisionStaged && r.Op == s.opID {
		r.Status = state.RevisionFailed
	}
	st.Staged = 0
}

// recordRevision makes the run's spec the current revision when it
// succeeded, and drops what it staged when it did not.
func (s *session) recordRevision(st *state.State, op *engine.Operation, ok bool) {
	if !ok {
		s.unstage(st)
		return
	}
	switch {
	case s.noop && op.Type == "update":
		// Nothing changed and the spec is the current revision's: a no-op
		// run records nothing new, so history stays bounded.
	case op.Type == "rollback":
		st.Current = op.Revision
	case st.Staged != 0:
		if r, found := st.Revision(st.Staged); found {
			r.Status = state.RevisionApplied
		}
		st.Current = st.Staged
	default:
		n := nextRevision(st)
		st.Revisions = append(st.Revisions, state.Revision{
			N: n, Op: op.ID, Time: s.opts.Now().UTC(), File: s.sp.File, Spec: string(s.sp.Recorded()),
			Provider: s.sp.Override, Status: state.RevisionApplied, User: s.holder.User, Targets: slices.Clone(s.opts.Targets),
			Variables: s.variableValues(), SensitiveVariables: s.sensitiveVariableNames(),
		})
		st.Current = n
	}
	st.Staged = 0
	s.pruneRevisions(st)
}
