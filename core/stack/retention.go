package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// What the state folder keeps, so its size does not grow with the stack's
// history (DESIGN.md, "State backends and retention").
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
	return ok && cur.Status == state.RevisionApplied && cur.Spec == string(sp.Text) && cur.Provider == sp.Override
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

// pruneBackups removes all but the newest keep backups in dir. Backups are
// named state-op_<ULID>.json, so their names sort by age; nothing else in
// the folder is touched, and a link is removed, never followed.
func pruneBackups(dir string, keep int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("backups: %w", err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "state-op_") && strings.HasSuffix(n, ".json") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		if err := os.Remove(filepath.Join(dir, names[0])); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("backups: prune: %w", err)
		}
		names = names[1:]
	}
	return nil
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
		if st.Current != 0 && (r.N >= st.Current || (hasCur && r.Spec == cur.Spec && r.Provider == cur.Provider)) {
			continue
		}
		best = r.N
	}
	return best
}
