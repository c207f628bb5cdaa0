package stack

import (
	"sort"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// What the state folder keeps, so its size does not grow with the stack's
// history (docs/architecture.md, "State backends and retention").
const (
	// DefaultKeepRevisions is how many revisions are kept unless
	// --keep-revisions says otherwise.
	DefaultKeepRevisions = 20
	// KeepBackups is how many state backups an update leaves.
	KeepBackups = 5
)

// isCurrentSpec reports whether sp (its text and the --provider it runs
// under) is what the current revision applied.
func isCurrentSpec(st *state.State, sp *spec.Spec) bool {
	cur, ok := st.Revision(st.Current)
	return ok && cur.Status == state.RevisionApplied && sameText(cur, string(sp.Text)) && cur.Provider == sp.Override &&
		sameValues(cur.Variables, sp.Values)
}

// sameValues reports whether two sets of variable values are the same (no
// variables and an empty set are).
func sameValues(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return plan.Equal(a, b)
}

// pruneRevisions drops the oldest revisions beyond the ones the options
// keep. The current and the staged revision are never dropped; numbers are
// never reused (nextRevision counts from the newest kept).
func (s *session) pruneRevisions(st *state.State) {
	keep := s.opts.KeepRevisions
	if keep <= 0 {
		keep = DefaultKeepRevisions
	}
	excess := len(st.Revisions) - keep
	if excess <= 0 {
		return
	}
	sort.SliceStable(st.Revisions, func(i, j int) bool { return st.Revisions[i].N < st.Revisions[j].N })
	kept := st.Revisions[:0]
	for _, r := range st.Revisions {
		if excess > 0 && r.N != st.Current && r.N != st.Staged {
			excess--
			continue
		}
		kept = append(kept, r)
	}
	st.Revisions = kept
}

// sameText reports whether rev applied text: by its digest (a revision
// carries its text only until it is stored apart).
func sameText(rev *state.Revision, text string) bool {
	if rev.Spec != "" {
		return rev.Spec == text
	}
	return rev.Digest != "" && rev.Digest == state.SpecDigest(text)
}

// sameSpec reports whether two revisions applied the same text.
func sameSpec(a, b *state.Revision) bool {
	da, db := a.Digest, b.Digest
	if a.Spec != "" {
		da = state.SpecDigest(a.Spec)
	}
	if b.Spec != "" {
		db = state.SpecDigest(b.Spec)
	}
	return da != "" && da == db
}

// previousRevision is what `rollback` with no --to goes to: the newest
// applied revision before the current one whose spec differs from the
// current one's (an earlier no-op or a re-apply of the same spec would make
// the rollback do nothing); after a teardown (none current), the newest
// applied one.
func previousRevision(st *state.State) int {
	cur, hasCur := st.Revision(st.Current)
	best := 0
	for _, r := range st.Revisions {
		if r.Status != state.RevisionApplied || r.N <= best {
			continue
		}
		if st.Current != 0 && (r.N >= st.Current || (hasCur && sameSpec(&r, cur) && r.Provider == cur.Provider && sameValues(r.Variables, cur.Variables))) {
			continue
		}
		best = r.N
	}
	return best
}
