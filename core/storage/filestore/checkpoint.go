package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/sdk/atomicfile"
)

// Checkpoint writes the snapshot when the state moved past it (or must be
// rewritten: sealed, migrated), then compacts the journal.
func (w *writer) Checkpoint(ctx context.Context, keepOps int) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.flushDeferred(); err != nil {
		return err
	}
	w.ck.Lock()
	defer w.ck.Unlock()
	w.mu.Lock()
	need := w.st.Serial != w.disk || w.reseal || w.migrate
	if w.st.Serial == 0 && !w.wrote && !w.reseal && !w.migrate {
		need = false // nothing was ever written: no snapshot of nothing
	}
	var snap *state.State
	var err error
	var legacy map[int]string
	if need {
		if w.migrate {
			legacy, err = w.legacyTexts()
		}
		if err == nil {
			snap, err = w.sealedSnapshot()
		}
	}
	reseal := w.reseal
	sensitive := map[string][]string{}
	if reseal {
		for n, r := range w.st.Resources {
			sensitive[n] = r.Sensitive
		}
	}
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if need {
		// Revision texts of an old snapshot go to their own files before
		// the snapshot that no longer holds them replaces it.
		for n, text := range legacy {
			if _, err := os.Lstat(w.b.revisionPath(n)); err == nil {
				continue
			}
			if err := w.PutRevision(ctx, n, storage.RevisionBody{Spec: text}); err != nil {
				return err
			}
		}
		if err := state.WriteFile(w.b.path(stateFile), snap); err != nil {
			// The old snapshot stays whole (temp file, rename) and the
			// journal holds everything past it: nothing is lost.
			return fmt.Errorf("checkpoint: %w", err)
		}
		w.mu.Lock()
		w.disk, w.migrate, w.wrote = snap.Serial, false, true
		w.mu.Unlock()
		w.afterWrite()
	}
	if reseal {
		if err := w.resealBackups(sensitive); err != nil {
			return err
		}
		w.mu.Lock()
		w.reseal = false
		w.mu.Unlock()
	}
	// The snapshot now covers every change the live segment holds: it can
	// be sealed. The journal is compacted only when a segment was: with
	// none new, the last compaction saw the same segments (a command's
	// first Checkpoint finds the live segment its predecessor sealed
	// empty), and reading the operations' lines again is a pass over the
	// whole history for nothing. journal.KeepNone compacts whatever: a
	// rotation's compaction cut short after the seal is finished by the
	// next one asked for.
	sealed, err := w.rotate()
	if err != nil || (!sealed && keepOps != journal.KeepNone) {
		return err
	}
	return w.compact(keepOps)
}

// rotate seals the live segment (when it holds anything) as the journal
// folder's next numbered segment and starts a new one. The caller holds
// w.ck and has made the snapshot cover the live segment's changes.
func (w *writer) rotate() (bool, error) {
	if w.jr.Size() == 0 {
		return false, nil
	}
	dir := filepath.Join(w.b.dir, segmentsDir)
	if _, err := nofollow.Mkdir(dir, 0o700); err != nil {
		return false, fmt.Errorf("seal journal segment: %w", err)
	}
	lay, err := w.b.layout()
	if err != nil {
		return false, err
	}
	to := w.b.segPath(lay.next)
	if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("seal journal segment: %s is in the way", to)
	}
	// Its op index first: a crash before the rename leaves an index of
	// a segment that is not sealed, never read, and rewritten when the
	// live segment is sealed under that number.
	var idx bytes.Buffer
	w.mu.Lock()
	for _, r := range w.liveOps {
		line, err := r.AppendJSON(idx.AvailableBuffer())
		if err != nil {
			w.mu.Unlock()
			return false, fmt.Errorf("seal journal segment: %w", err)
		}
		idx.Write(line)
		idx.WriteByte('\n')
	}
	w.mu.Unlock()
	ip := w.b.opsPath(lay.next)
	if err := nofollow.CheckReplaceable(ip); err != nil {
		return false, fmt.Errorf("seal journal segment: %w", err)
	}
	if err := atomicfile.Write(ip, idx.Bytes(), 0o600); err != nil {
		return false, fmt.Errorf("seal journal segment: %w", err)
	}
	w.afterWrite()
	live := w.b.path(journalFile)
	if err := w.jr.Close(); err != nil {
		return false, w.fail(fmt.Errorf("seal journal segment: %w", err))
	}
	rerr := os.Rename(live, to)
	if rerr == nil {
		if rerr = atomicfile.SyncDir(dir); rerr == nil {
			rerr = atomicfile.SyncDir(w.b.dir)
		}
	}
	// Whatever happened, appending goes on in a live segment: a new one,
	// or the old one when the rename failed.
	if w.jr, err = journal.Open(live, w.b.opts.Now); err != nil {
		return false, w.fail(err)
	}
	if rerr != nil {
		return false, fmt.Errorf("seal journal segment: %w", rerr)
	}
	w.mu.Lock()
	w.liveOps = nil
	w.mu.Unlock()
	if err := atomicfile.SyncDir(w.b.dir); err != nil {
		return true, fmt.Errorf("seal journal segment: %w", err)
	}
	w.afterWrite()
	return true, nil
}

// legacyTexts reads the revision texts an old snapshot holds. w.mu is held.
func (w *writer) legacyTexts() (map[int]string, error) {
	st, err := state.Load(w.b.path(stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := state.OpenState(st, w.b.opts.Sealing); err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, r := range st.Revisions {
		if r.Spec != "" && !secrets.IsSealed(r.Spec) {
			out[r.N] = r.Spec
		}
	}
	return out, nil
}

// resealBackups seals what the backups of an old state hold in clear.
func (w *writer) resealBackups(sensitive map[string][]string) error {
	sl := w.b.opts.Sealing
	if sl.Sealer == nil {
		return nil
	}
	paths, err := filepath.Glob(filepath.Join(w.b.dir, backupsDir, backupPrefix+"*"+backupSuffix))
	if err != nil {
		return err
	}
	for _, p := range paths {
		if _, err := state.ResealFile(p, sl, func(r *state.Resource) []string { return sensitive[r.Name] }); err != nil {
			return fmt.Errorf("seal backup: %w", err)
		}
	}
	return nil
}

// compact folds the sealed segments of operations older than the newest
// keepOps into a new base segment, when the journal holds more than twice
// keepOps whole operations: each older finished operation becomes one
// summary line, the records of the others (unfinished, stopped for a
// person) are kept whole, and the changes the snapshot holds leave them.
// The new base replaces the segments it folds (and the old base), which
// are then removed whole; the newest operations' segments and the live
// one are never touched. The caller holds w.ck; the live segment was just
// sealed, so the snapshot covers every sealed segment.
func (w *writer) compact(keepOps int) error {
	if keepOps <= 0 && keepOps != journal.KeepNone {
		keepOps = journal.DefaultKeepOperations
	}
	lay, err := w.b.layout()
	if err != nil {
		return err
	}
	// What a compaction a crash cut short left behind goes first.
	if err := w.removeAll(lay.stale); err != nil {
		return err
	}
	if len(lay.sealed) == 0 {
		return nil
	}
	segs, err := w.b.openSegments(false)
	if err != nil {
		return err
	}
	defer segs.close()
	// The operations, from their op and summary lines alone: the step
	// records are not decoded.
	var ops journal.Ops
	for i, sg := range segs.files {
		bad, err := eachOf(sg, journal.Options{Kinds: []string{journal.KindOp, journal.KindSummary}, NoChange: true}, func(r *journal.Record, _ int64) error {
			ops.Add(r, i)
			return nil
		})
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			return bad[0] // never folded away: doctor names it
		}
	}
	compact := ops.Compactable(keepOps)
	if len(compact) == 0 {
		return nil
	}
	// The segments folded: up to the last that holds a record of an
	// operation summarized. A command's operation is one segment of its
	// own (sealed by the Checkpoint at its end), so these are the oldest
	// operations' alone; the records of any other operation they hold
	// (one stopped for a person, a journal sealed whole before segments)
	// are copied into the base as they are.
	cut := 0
	for id := range compact {
		cut = max(cut, ops.Get(id).LastSeg+1)
	}
	var out []journal.Record
	at := map[string]int{} // a summarized operation's line in out
	// The summaries, from every record of their operations (whether one
	// changed anything is in its step records, which the op index lacks).
	var full journal.Ops
	for _, sg := range segs.files[:cut] {
		if _, err := sg.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("compact journal: %w", err)
		}
		bad, err := journal.EachIn(sg.f, sg.path, journal.Options{NoChange: true}, func(r *journal.Record, _ int64) error {
			if r.Kind == journal.KindState {
				return nil // its change is the snapshot's
			}
			if !compact[r.Op] {
				c := *r
				c.Rest, c.Serial, c.Change = 0, 0, nil
				out = append(out, c)
				return nil
			}
			if _, ok := at[r.Op]; !ok {
				at[r.Op] = len(out)
				out = append(out, journal.Record{}) // its summary, below
			}
			full.Add(r, 0)
			return nil
		})
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			return bad[0]
		}
	}
	for op, i := range at {
		out[i] = full.Summary(op)
	}
	// Consecutive summaries of operations that changed nothing (repeated
	// no-op applies) become one line, so the journal stops growing under
	// them.
	out = journal.Collapse(out)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range out {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("compact journal: %w", err)
		}
	}
	n := segs.files[cut-1].n
	p := w.b.basePath(n)
	if err := nofollow.CheckReplaceable(p); err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	if err := atomicfile.Write(p, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	w.afterWrite()
	// The base is in force: what it folded is never read again.
	var folded []string
	for _, sg := range segs.files[:cut] {
		if sg.path != p {
			folded = append(folded, sg.path)
			if sg.ops != nil {
				folded = append(folded, w.b.opsPath(sg.n))
			}
		}
	}
	return w.removeAll(folded)
}

// removeAll removes files of the journal folder that a base covers, one
// at a time (each a write boundary), then makes the removals durable.
func (w *writer) removeAll(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("compact journal: %w", err)
		}
		w.afterWrite()
	}
	return atomicfile.SyncDir(filepath.Join(w.b.dir, segmentsDir))
}
