package storage

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
)

// The writing rules every backend shares, written once here: what a Commit
// is checked against and sealed into before a backend stores it (its own
// bytes, its own place), how its records are stamped, which lineage it may
// name, and who a lock's holder is when the caller left parts of it out. A
// backend decides only where and how the result is stored (a journal line,
// rows, a WAL object) and how it is fenced.

// ErrNoName refuses a Commit that puts a resource without a name.
var ErrNoName = errors.New("a resource put has no name")

// SealChange returns ch as a backend stores it: every put checked (a
// resource without a name, or with a protection level Load would refuse,
// is never written: where names the place for that error) and its
// sensitive values sealed with sl, and the metadata sealed as SealMeta
// seals it. ch is not changed; the resources and metadata with nothing to
// seal are shared with it.
func SealChange(ch Change, where string, sl state.Sealing) (Change, error) {
	out := Change{Delete: ch.Delete}
	if len(ch.Put) > 0 {
		out.Put = make([]*state.Resource, 0, len(ch.Put))
	}
	for _, r := range ch.Put {
		sr, err := SealPut(r, where, sl)
		if err != nil {
			return Change{}, err
		}
		out.Put = append(out.Put, sr)
	}
	if ch.Meta != nil {
		m, err := SealMeta(ch.Meta, sl)
		if err != nil {
			return Change{}, err
		}
		out.Meta = m
	}
	return out, nil
}

// SealPut is one put of SealChange: r checked (a name, a level Load takes)
// and its sensitive values sealed. r is not changed.
func SealPut(r *state.Resource, where string, sl state.Sealing) (*state.Resource, error) {
	if r == nil || r.Name == "" {
		return nil, ErrNoName
	}
	if err := state.CheckResourceLevel(where, r); err != nil {
		return nil, err
	}
	return state.SealResource(r, sl)
}

// SealMeta returns m as a backend stores it: a copy whose revisions carry
// no spec text (the bodies are PutRevision's) and whose sensitive outputs
// and revision variables are sealed (what state.SealState seals of a
// state). The rest, the lineage included, is m's.
func SealMeta(m *Meta, sl state.Sealing) (*Meta, error) {
	out := *m
	out.Revisions = slices.Clone(m.Revisions)
	for i := range out.Revisions {
		out.Revisions[i].Spec = ""
	}
	sealed, err := state.SealState(&state.State{Revisions: out.Revisions, Outputs: out.Outputs}, sl)
	if err != nil {
		return nil, err
	}
	out.Revisions, out.Outputs = sealed.Revisions, sealed.Outputs
	return &out, nil
}

// Stamp sets, in place, what a Writer's Commit promises of each record: an
// id and a time when empty (now), and the stack's lineage.
func Stamp(recs []journal.Record, now time.Time, lineage string) {
	for i := range recs {
		r := &recs[i]
		if r.ID == "" {
			r.ID = ulid.Make().String()
		}
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Lineage = lineage
	}
}

// NextLineage is the lineage of a stack whose lineage is current after a
// Commit whose metadata is m: current, unless m names another. A stack that
// holds nothing yet (adoptable) takes the one m names (state migrate's
// destination keeps its source's); any other refuses it with an error
// matching ErrLineage, and nothing of that Commit is written.
func NextLineage(loc, current string, m *Meta, adoptable bool) (string, error) {
	if m == nil || m.Lineage == "" || m.Lineage == current {
		return current, nil
	}
	if !adoptable {
		return current, fmt.Errorf("commit to %s: lineage %s is not the stack's %s: %w", loc, m.Lineage, current, ErrLineage)
	}
	return m.Lineage, nil
}

// HolderDefaults returns h with what the caller left out filled in: this
// process's pid and host, and the time the lock is taken (now). Since is
// stored in UTC.
func HolderDefaults(h Holder, now time.Time) Holder {
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	if h.Host == "" {
		h.Host, _ = os.Hostname()
	}
	if h.User == "" {
		h.User = CurrentUser()
	}
	if h.Since.IsZero() {
		h.Since = now
	}
	h.Since = h.Since.UTC()
	return h
}

// SealSnapshot returns st as a backend stores a whole state (a snapshot, a
// backup): its sensitive values sealed (state.SealState) and its revisions
// without spec text (the bodies are PutRevision's). st must be a copy the
// caller owns: without a Sealer it is returned, its specs dropped.
func SealSnapshot(st *state.State, sl state.Sealing) (*state.State, error) {
	sst, err := state.SealState(st, sl)
	if err != nil {
		return nil, err
	}
	for i := range sst.Revisions {
		sst.Revisions[i].Spec = ""
	}
	return sst, nil
}
