package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore/lock"
)

// Load returns the state as of the last acknowledged Commit. While this
// Backend holds the lock it is the writer's (a copy).
func (b *Backend) Load(ctx context.Context) (*state.State, error) {
	b.mu.Lock()
	w := b.w
	b.mu.Unlock()
	if w != nil {
		return w.current(), nil
	}
	l, err := b.load()
	if err != nil {
		return nil, err
	}
	if l.st.Lineage == "" {
		l.st.Lineage = l.lineage
	}
	return l.st, nil
}

// Journal returns the journal's records (of whole commits), oldest first,
// and its bad lines: every segment's, in order. Their changes are not
// decoded (they are the state's, which Load returns).
func (b *Backend) Journal(ctx context.Context) ([]journal.Record, []*journal.CorruptError, error) {
	var recs []journal.Record
	bad, err := b.ScanJournal(ctx, nil, func(r journal.Record) error {
		recs = append(recs, r)
		return nil
	})
	return recs, bad, err
}

// ScanJournal calls fn with each record of a whole commit whose kind is
// one of kinds (every kind but the state's when kinds is empty), oldest
// first, reading the segments a buffer at a time: what it holds is one
// commit, never the journal (storage.JournalScanner). Lines that cannot be
// of kinds are skipped undecoded (and unchecked).
func (b *Backend) ScanJournal(ctx context.Context, kinds []string, fn func(journal.Record) error) ([]*journal.CorruptError, error) {
	if err := nofollow.CheckDir(b.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	segs, err := b.openSegments(true)
	if err != nil {
		return nil, err
	}
	defer segs.close()
	var bad []*journal.CorruptError
	for _, sg := range segs.files {
		sb, err := eachOf(sg, journal.Options{Kinds: kinds, NoChange: true}, func(r *journal.Record, _ int64) error {
			if r.Kind == journal.KindState {
				return nil
			}
			r.Rest, r.Serial, r.Change = 0, 0, nil
			return fn(*r)
		})
		bad = append(bad, sb...)
		if err != nil {
			return bad, err
		}
	}
	return bad, nil
}

// eachWhole is journal.EachIn over one segment that holds back the records
// of a commit until its last one (Rest 0) is read, and calls fn with them
// then: a commit cut short at the segment's end is never seen. It returns
// the segment's bad lines. With o.Kinds the lines of other kinds are not
// read, so a commit's end cannot be told: records are passed on as read
// (a commit torn by a power cut is cut off by the next Lock, before any
// command that writes reads the journal).
func eachWhole(sg *segment, o journal.Options, fn func(r *journal.Record, end int64) error) ([]*journal.CorruptError, error) {
	var held []journal.Record
	var ends []int64
	return journal.EachIn(sg.f, sg.path, o, func(r *journal.Record, end int64) error {
		if len(o.Kinds) > 0 {
			return fn(r, end)
		}
		if r.Rest > 0 || len(held) > 0 {
			held = append(held, *r)
			ends = append(ends, end)
			if r.Rest > 0 {
				return nil
			}
			for i := range held {
				if err := fn(&held[i], ends[i]); err != nil {
					return err
				}
			}
			held, ends = held[:0], ends[:0]
			return nil
		}
		return fn(r, end)
	})
}

// Holder reports who holds the lock now, without taking it.
func (b *Backend) Holder(ctx context.Context) (*storage.Holder, error) {
	if err := nofollow.CheckDir(b.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	h, err := lock.Peek(b.dir)
	if err != nil || h == nil {
		return nil, err
	}
	return h, nil
}

// Inspect is Holder that also reports the record a dead holder left.
func (b *Backend) Inspect(ctx context.Context) (live, stale *storage.Holder, err error) {
	l, s, err := lock.Inspect(b.dir)
	if err != nil {
		return nil, nil, err
	}
	return l, s, nil
}

// Stats are the folder's sizes and counts.
func (b *Backend) Stats(ctx context.Context) (storage.Stats, error) {
	var s storage.Stats
	size := func(p string) int64 {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
		return 0
	}
	s.StateBytes = size(b.path(stateFile))
	s.JournalBytes = size(b.path(journalFile))
	lay, err := b.layout()
	if err != nil {
		return s, err
	}
	s.JournalBytes += lay.bytes
	if entries, err := os.ReadDir(filepath.Join(b.dir, revisionsDir)); err == nil {
		for _, e := range entries {
			s.RevisionBytes += size(filepath.Join(b.dir, revisionsDir, e.Name()))
		}
	}
	backups, err := b.Backups(ctx)
	if err != nil {
		return s, err
	}
	for _, bk := range backups {
		s.Backups++
		s.BackupBytes += bk.Bytes
	}
	st, err := b.Load(ctx)
	if err != nil {
		return s, err
	}
	s.Resources, s.Revisions = len(st.Resources), len(st.Revisions)
	whole := map[string]bool{}
	if _, err := b.ScanJournal(ctx, nil, func(r journal.Record) error {
		s.JournalRecords++
		if r.Kind == journal.KindSummary {
			s.SummarizedOps += max(r.Repeated, 1) // a collapsed line counts its operations
		} else {
			whole[r.Op] = true
		}
		return nil
	}); err != nil {
		return s, err
	}
	s.WholeOps = len(whole)
	return s, nil
}
