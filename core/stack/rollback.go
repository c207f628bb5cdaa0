package stack

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Rollback converges the stack back to an earlier applied revision (to; 0
// means the one applied before the current one) with the same pipeline as
// apply, then makes it current. What that revision lacks follows the
// ladder's rollback column, as the rollback of a failed apply does: an
// ephemeral resource is deleted, a durable or protected one is kept and
// recorded as retained (see step_retain.go), so no rollback destroys data.
// After a teardown no revision is current, and 0 means the newest applied.
func Rollback(ctx context.Context, sp *spec.Spec, opts Options, to int) (*Result, error) {
	s, err := open(ctx, sp, opts, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if to == 0 {
		st := s.store.Snapshot()
		if to = previousRevision(st); to == 0 {
			return nil, fmt.Errorf("rollback: stack %s has no revision applied before the current one (%d)", sp.Stack, st.Current)
		}
	}
	return s.rollbackTo(ctx, to)
}

// rollbackTo swaps the session's spec for revision n's and converges.
func (s *session) rollbackTo(ctx context.Context, n int) (*Result, error) {
	rev, err := s.useRevision(n)
	if err != nil {
		return nil, err
	}
	s.prog.printf("rollback %s to revision %d (applied by %s)\n", s.sp.Stack, n, rev.Op)
	return s.converge(ctx, "rollback", n)
}

// useRevision makes the session's spec the one recorded as revision n.
func (s *session) useRevision(n int) (*state.Revision, error) {
	st := s.store.Snapshot()
	rev, ok := st.Revision(n)
	if !ok || rev.Status != state.RevisionApplied {
		return nil, fmt.Errorf("rollback: stack %s has no applied revision %d (see `bulwark history`)", s.sp.Stack, n)
	}
	rev, err := s.withBody(rev)
	if err != nil {
		return nil, fmt.Errorf("rollback: %w", err)
	}
	rsp, err := revisionSpec(rev)
	if err != nil {
		return nil, fmt.Errorf("rollback: %w", err)
	}
	if rsp.Stack != s.sp.Stack {
		return nil, fmt.Errorf("rollback: revision %d is of stack %q, not %q", n, rsp.Stack, s.sp.Stack)
	}
	s.sp = rsp
	s.learnVariables()
	return rev, nil
}

// withBody returns rev with its spec's text and its variable values, read
// from the backend's revision body when the state's list does not hold
// them (it holds only their digest).
func (s *session) withBody(rev *state.Revision) (*state.Revision, error) {
	if rev.Spec != "" {
		return rev, nil
	}
	body, err := s.be.Revision(context.Background(), rev.N)
	if err != nil {
		return nil, fmt.Errorf("revision %d: %w", rev.N, err)
	}
	c := *rev
	c.Spec = body.Spec
	if c.Variables == nil {
		c.Variables, c.SensitiveVariables = body.Variables, body.Sensitive
	}
	return &c, nil
}

// revisionSpec is the concrete spec a revision applied: its text, with its
// --provider, expanded with the variable values it recorded (sensitive
// ones included), not the ones this command was given: a rollback
// re-applies exactly what was applied. A variable the revision did not
// record (one recorded before revisions held variables) takes its default.
func revisionSpec(rev *state.Revision) (*spec.Spec, error) {
	rsp, err := spec.Parse(fmt.Sprintf("%s@revision-%d", rev.File, rev.N), []byte(rev.Spec))
	if err != nil {
		return nil, fmt.Errorf("revision %d no longer parses: %w", rev.N, err)
	}
	if rev.Provider != "" {
		rsp = rsp.WithDefaultProvider(rev.Provider)
	}
	vals := maps.Clone(rev.Variables)
	if vals == nil {
		vals = map[string]any{}
	}
	var missing []string
	for _, v := range rsp.Variables {
		if _, ok := vals[v.Name]; ok {
			continue
		}
		if !v.HasDefault {
			missing = append(missing, v.Name)
			continue
		}
		vals[v.Name] = v.Default
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("revision %d did not record the value of variable(s) %s, which have no default", rev.N, strings.Join(missing, ", "))
	}
	if rsp, err = resolve.Expand(rsp, vals); err != nil {
		return nil, fmt.Errorf("revision %d: %w", rev.N, err)
	}
	return rsp, nil
}
