package stack

import (
	"context"
	"slices"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// LoadState reads a stack's state without the lock (a missing one is
// empty), its sealed values left sealed.
func LoadState(sp *spec.Spec, opts Options) (*state.State, error) {
	opts.Defaults()
	be, err := opts.Backend(context.Background(), sp.Stack, state.Sealing{})
	if err != nil {
		return nil, err
	}
	defer be.Close()
	return be.Load(context.Background())
}

// readJournal reads a stack's journal without the lock; a bad line is an
// error (a *journal.CorruptError naming it).
func readJournal(sp *spec.Spec, opts Options) ([]journal.Record, error) {
	return ReadJournalKinds(sp, opts)
}

// readJournalKinds is readJournal keeping only the records of kinds (all
// when none): every line is read and checked, a stream, and only what is
// kept is held (the journal of 20 whole operations of 10,000 resources is
// hundreds of megabytes of records).
func ReadJournalKinds(sp *spec.Spec, opts Options, kinds ...string) ([]journal.Record, error) {
	opts.Defaults()
	be, err := opts.Backend(context.Background(), sp.Stack, state.Sealing{})
	if err != nil {
		return nil, err
	}
	defer be.Close()
	return JournalKinds(context.Background(), be, kinds...)
}

// JournalKinds streams be's journal, keeping the records of kinds (all
// when none); a bad line is an error.
func JournalKinds(ctx context.Context, be storage.Backend, kinds ...string) ([]journal.Record, error) {
	var recs []journal.Record
	bad, err := storage.ScanJournal(ctx, be, nil, func(r journal.Record) error {
		if len(kinds) == 0 || slices.Contains(kinds, r.Kind) {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0]
	}
	return recs, nil
}

// loadOpened reads the stack's state without the lock, its sealed values
// opened (a missing state is empty). It never creates a key.
// LoadOpened loads sp's stack's state without taking the lock, its sealed
// values opened with the stack's key (an error when there is none).
func LoadOpened(sp *spec.Spec, opts Options) (*state.State, error) {
	opts.Defaults()
	s := &session{opts: opts, sp: sp, dir: StackDir(opts.StateDir, sp.Stack)}
	return s.loadOpened()
}

func (s *session) loadOpened() (*state.State, error) {
	be, err := s.opts.Backend(context.Background(), s.sp.Stack, s.sealing())
	if err != nil {
		return nil, err
	}
	defer be.Close()
	return be.Load(context.Background())
}
