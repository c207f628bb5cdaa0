package stack

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/bulwark-iac/bulwark/core/engine"
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
	return ok && cur.Status == state.RevisionApplied && sameText(cur, string(sp.Recorded())) && cur.Provider == sp.Override &&
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

// Backups. An update or a rollback copies the state before its first
// change (its "backup" step), named by its operation id; what a careful
// user expects of those copies, and what keeps retries on a full disk from
// filling it further:
//
//   - A resumed operation keeps the backup of its first part (the step's
//     Check), never one of its half-done state.
//   - The state as it is now is copied once: when the newest backup already
//     holds it (same serial), the backend stores no second copy. Retrying
//     an attempt that failed before changing anything adds nothing.
//   - An operation that ended (failed, or rolled back) having executed no
//     step of a resource drops its own backup when it ends: the state it
//     copied is still the current one. One that changed something keeps
//     it, even when it was rolled back: the rollback made things anew, and
//     the backup is the record of what was there before. An operation
//     whose end could not be recorded keeps it, for its resume.
//   - KeepBackups are kept, newest first; but a backup of a state that a
//     failed operation left (a staged or failed newest revision, pending
//     interventions, resources set aside, or resources with no revision)
//     never pushes out the newest backup of a settled state, the last
//     state a user could go back to knowing it worked.

// takeBackup is the backup step's work: a copy of the state under the
// operation's id, and retention as above.
func (s *session) takeBackup(ctx context.Context) error {
	if settled(s.store.Snapshot()) {
		// This copy is the newest settled one: plain retention keeps it.
		_, err := s.store.Writer().PutBackup(ctx, s.opID, KeepBackups)
		return err
	}
	if _, err := s.store.Writer().PutBackup(ctx, s.opID, 0); err != nil {
		return err
	}
	return s.pruneBackups(ctx)
}

// pruneBackups drops the oldest backups beyond KeepBackups, but never this
// operation's nor the newest one of a settled state (read back to tell:
// only after a failure, and at most KeepBackups+1 of them).
func (s *session) pruneBackups(ctx context.Context) error {
	list, err := s.be.Backups(ctx)
	if err != nil {
		return err
	}
	excess := len(list) - KeepBackups
	if excess <= 0 {
		return nil
	}
	good := ""
	for i := len(list) - 1; i >= 0 && good == ""; i-- {
		if list[i].Name == s.opID {
			continue
		}
		restore := func() {}
		if sl, ok := s.sealing().Sealer.(*sealer); ok {
			// A backup records the provider of its time: reading one
			// must not change what this session seals with.
			restore = sl.hold()
		}
		st, err := s.be.Backup(ctx, list[i].Name)
		restore()
		if err == nil && settled(st) {
			good = list[i].Name
		}
	}
	for _, b := range list {
		if excess == 0 {
			break
		}
		if b.Name == good || b.Name == s.opID {
			continue
		}
		if err := s.store.Writer().DropBackup(ctx, b.Name); err != nil {
			return err
		}
		excess--
	}
	return nil
}

// dropIdleBackup drops the backup of an operation that ended having
// changed nothing. It changes no outcome: a backup left behind is only
// space, and retention takes it later.
func (s *session) dropIdleBackup(ctx context.Context, out *Result) {
	if out.Outcome != engine.Failed && out.Outcome != engine.Compensated {
		return
	}
	if !slices.Contains(out.Run.Executed, metaPrefix+"backup") || !out.ChangedNothing() {
		return
	}
	if err := s.store.Writer().DropBackup(context.WithoutCancel(ctx), s.opID); err != nil {
		s.warn(fmt.Sprintf("warning: could not drop the backup of %s, which changed nothing: %v", s.opID, err))
	}
}

// settled reports whether st is a state a successful operation left, as
// far as the state tells: nothing staged, no pending intervention, nothing
// set aside, and its newest revision applied (no revision at all only when
// it holds nothing). A successful rollback after a failed update still
// looks unsettled (the revisions do not record it): an older settled backup
// is then kept a while longer, never one backup more.
func settled(st *state.State) bool {
	if st.Staged != 0 || len(st.Interventions) > 0 {
		return false
	}
	for _, r := range st.Resources {
		if r.Deposed() {
			return false
		}
	}
	var newest *state.Revision
	for i := range st.Revisions {
		if newest == nil || st.Revisions[i].N > newest.N {
			newest = &st.Revisions[i]
		}
	}
	if newest == nil {
		return len(st.Resources) == 0
	}
	return newest.Status == state.RevisionApplied
}
