package stack

import (
	"context"
	"fmt"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Rollback converges the stack back to an earlier applied revision (to; 0
// means the one applied before the current one) with the same pipeline as
// apply, then makes it current. What that revision lacks is deleted under the
// ladder's third column, so a protected resource added since refuses the run.
// After a teardown no revision is current, and 0 means the newest applied.
func Rollback(ctx context.Context, sp *spec.Spec, opts Options, to int) (*Result, error) {
	s, err := open(sp, opts, false)
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
	text := rev.Spec
	if text == "" {
		body, err := s.be.Revision(context.Background(), n)
		if err != nil {
			return nil, fmt.Errorf("rollback: revision %d: %w", n, err)
		}
		text = body.Spec
	}
	rsp, err := spec.Parse(fmt.Sprintf("%s@revision-%d", rev.File, n), []byte(text))
	if err != nil {
		return nil, fmt.Errorf("rollback: revision %d no longer parses: %w", n, err)
	}
	if rev.Provider != "" {
		rsp = rsp.WithDefaultProvider(rev.Provider)
	}
	if rsp.Stack != s.sp.Stack {
		return nil, fmt.Errorf("rollback: revision %d is of stack %q, not %q", n, rsp.Stack, s.sp.Stack)
	}
	s.sp = rsp
	return rev, nil
}
