package filestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// loaded is what load read: the state (values opened), the journal's whole
// commits, and where the journal's last whole commit ends.
type loaded struct {
	st      *state.State
	records int              // records of whole commits in the live segment
	ops     []journal.Record // the live segment's operation records
	bad     []*journal.CorruptError
	end     int64 // offset just past the live segment's last whole commit
	torn    bool  // the live segment's tail holds a commit cut short
	disk    int64 // the snapshot's serial (0: none)
	clear   bool  // the snapshot holds in clear what sealing seals
	legacy  bool  // the snapshot's revisions hold their spec texts
	lineage string
}

func (b *Backend) emptyState() *state.State {
	return &state.State{Version: state.Version, Stack: b.opts.Stack, Resources: map[string]*state.Resource{}}
}

// load reads the snapshot and replays the journal over it.
func (b *Backend) load() (*loaded, error) {
	out := &loaded{}
	if err := nofollow.CheckDir(b.dir); errors.Is(err, fs.ErrNotExist) {
		out.st = b.emptyState()
		return out, nil
	} else if err != nil {
		return nil, fmt.Errorf("load state: %w", err)
	}
	if err := b.moved(); err != nil {
		return nil, err
	}
	// The live segment is opened before the snapshot is read: a Checkpoint
	// that seals it meanwhile wrote a snapshot covering it first, so the
	// pair read is consistent whichever snapshot is found.
	live, err := openSegment(b.path(journalFile))
	if err != nil {
		return nil, err
	}
	if live != nil {
		defer live.Close()
	}
	st, err := state.Load(b.path(stateFile))
	var levelErr *state.LevelError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = b.emptyState()
	case errors.Is(err, state.ErrCorrupt) && !errors.As(err, &levelErr):
		// Empty, cut short, or not what its checksum says (a disk that
		// lost the last write, a copy that stopped, an edit): say how to
		// repair it. Without the snapshot the state is empty, and the next
		// plan finds the stack's resources by the keys its journal holds
		// (a lost state is a case the ownership checks already handle).
		snap := b.path(stateFile)
		return nil, fmt.Errorf("%w: to repair it, restore the newest good copy from %s (one is written before every update), or move the damaged file aside (mv %s %s.damaged) and run `bulwark plan`: bulwark then finds the stack's resources by the keys its journal holds, and the next apply records them again",
			err, b.path(backupsDir), snap, snap)
	case err != nil:
		return nil, err
	default:
		out.disk = st.Serial
	}
	if st.Stack != b.opts.Stack {
		return nil, &storage.LineageError{What: "state", Location: b.path(stateFile), Want: "of stack " + strconv.Quote(b.opts.Stack), Found: "of stack " + strconv.Quote(st.Stack)}
	}
	if out.clear, err = state.OpenState(st, b.opts.Sealing); err != nil {
		return nil, fmt.Errorf("load state %s: %w", b.path(stateFile), err)
	}
	for i := range st.Revisions {
		rev := &st.Revisions[i]
		if rev.Spec == "" {
			continue
		}
		out.legacy = true
		if rev.Digest == "" && !secrets.IsSealed(rev.Spec) {
			rev.Digest = state.SpecDigest(rev.Spec)
		}
		rev.Spec = "" // its body is Revision(n)'s
	}
	// Only the live segment can hold changes past the snapshot: a segment
	// is sealed only once a snapshot covering it is durable (Checkpoint).
	if err := b.replay(live, st, out); err != nil {
		return nil, err
	}
	where := b.path(journalFile)
	if out.lineage == "" {
		// The live segment is empty (or of records before lineages): the
		// newest sealed segment says whose the journal is.
		if where, out.lineage, err = b.sealedLineage(); err != nil {
			return nil, err
		}
	}
	if st.Lineage != "" && out.lineage != "" && out.lineage != st.Lineage {
		return nil, &storage.LineageError{What: "journal", Location: where, Want: st.Lineage, Found: out.lineage}
	}
	if st.Lineage != "" {
		out.lineage = st.Lineage
	}
	if err := state.CheckLevels(b.path(stateFile), st); err != nil {
		return nil, err
	}
	out.st = st
	return out, nil
}

// replay applies to st the changes of the live segment's whole commits
// past st's serial, streaming it, and learns the segment's lineage, where
// its last whole commit ends and whether a commit is cut short at its tail.
func (b *Backend) replay(live *segment, st *state.State, out *loaded) error {
	if live == nil {
		return nil
	}
	held := 0 // records read of a commit whose last record is not yet read
	bad, err := journal.EachIn(live.f, live.path, journal.Options{}, func(r *journal.Record, end int64) error {
		switch {
		case r.Lineage == "":
		case out.lineage == "":
			out.lineage = r.Lineage
		case r.Lineage != out.lineage:
			return &storage.LineageError{What: "journal", Location: live.path, Want: out.lineage, Found: r.Lineage}
		}
		if r.Rest > 0 {
			held++
			return nil
		}
		out.records += held + 1
		held = 0
		out.end = end
		if r.Kind == journal.KindOp || r.Kind == journal.KindSummary {
			op := *r
			op.Rest, op.Serial, op.Change = 0, 0, nil
			out.ops = append(out.ops, op)
		}
		// Replay what the journal holds past the snapshot, in order; a gap
		// in the serials is a lost change, never skipped over.
		if r.Serial <= st.Serial || len(r.Change) == 0 {
			return nil
		}
		if r.Serial != st.Serial+1 {
			return fmt.Errorf("load state %s: %w: the journal %s holds the change to serial %d after serial %d (a change is missing): restore the newest good copy from %s",
				b.dir, state.ErrCorrupt, live.path, r.Serial, st.Serial, b.path(backupsDir))
		}
		// A change carries its checksum (one an older bulwark wrote has
		// none, and is taken as it is).
		rec, _, err := storage.DiscloseLegacy(r.Change, storage.Where{Backend: b.Location(), Stack: b.opts.Stack,
			Record:  fmt.Sprintf("the state change of journal record %s (%s)", r.ID, live.path),
			Restore: "the backups in " + b.path(backupsDir) + " (written before every update)"})
		if err != nil {
			return err
		}
		var ch storage.Change
		if err := json.Unmarshal(rec, &ch); err != nil {
			return fmt.Errorf("load state %s: %w: the change of journal record %s: %v", b.dir, state.ErrCorrupt, r.ID, err)
		}
		if m := ch.Meta; m != nil {
			extra := &state.State{Revisions: m.Revisions, Outputs: m.Outputs, Secrets: m.Secrets}
			if _, err := state.OpenState(extra, b.opts.Sealing); err != nil {
				return fmt.Errorf("load state %s: %w", b.dir, err)
			}
		}
		for _, p := range ch.Put {
			if p == nil || p.Name == "" {
				return fmt.Errorf("load state %s: %w: journal record %s puts a resource with no name", b.dir, state.ErrCorrupt, r.ID)
			}
			if err := state.OpenResource(p, b.opts.Sealing); err != nil {
				return fmt.Errorf("load state %s: %w", b.dir, err)
			}
		}
		ch.Apply(st)
		return nil
	})
	out.bad = bad
	out.torn = held > 0
	return err
}

// sealedLineage is the lineage the newest sealed segment's (or the base's)
// first record with one names, and that segment ("" when none has one).
// It reads a line or two, not the segment.
func (b *Backend) sealedLineage() (where, lineage string, err error) {
	lay, err := b.layout()
	if err != nil {
		return "", "", err
	}
	var paths []string
	for i := len(lay.sealed) - 1; i >= 0; i-- {
		paths = append(paths, b.segPath(lay.sealed[i]))
	}
	if lay.base > 0 {
		paths = append(paths, b.basePath(lay.base))
	}
	found := errors.New("found")
	for _, p := range paths {
		_, err := journal.Each(p, journal.Options{NoChange: true}, func(r *journal.Record, _ int64) error {
			if r.Lineage == "" {
				return nil
			}
			lineage = r.Lineage
			return found
		})
		if err == found {
			return p, lineage, nil
		}
		if err != nil {
			return "", "", err
		}
	}
	return "", "", nil
}
