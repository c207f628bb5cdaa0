package remote

import (
	"context"
	"errors"
	"testing"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// fakeSource returns what a backend would have read, as stored.
type fakeSource struct {
	st     *state.State
	backup *StoredBackup
}

func (f *fakeSource) Location() string                  { return "fake://home" }
func (f *fakeSource) Wrap(what string, err error) error { return err }
func (f *fakeSource) State(context.Context) (*state.State, string, error) {
	return copyState(f.st), "fake resources", nil
}

// copyState copies st as a Source hands it over, without a JSON round
// trip (which could not carry a level off the ladder, as a damaged store
// can).
func copyState(st *state.State) *state.State {
	cp := *st
	cp.Resources = make(map[string]*state.Resource, len(st.Resources))
	for n, r := range st.Resources {
		rc := *r
		if r.Prior != nil {
			pc := *r.Prior
			rc.Prior = &pc
		}
		cp.Resources[n] = &rc
	}
	return &cp
}
func (f *fakeSource) Journal(context.Context) ([]journal.Record, []*journal.CorruptError, error) {
	return nil, nil, nil
}
func (f *fakeSource) Revision(context.Context, int) (*storage.RevisionBody, error) {
	return nil, storage.ErrNotFound
}
func (f *fakeSource) Backups(context.Context) ([]storage.BackupInfo, error) { return nil, nil }
func (f *fakeSource) Backup(context.Context, string) (*StoredBackup, error) {
	b := *f.backup
	b.State = copyState(b.State)
	return &b, nil
}
func (f *fakeSource) Stats(context.Context) (storage.Stats, error)    { return storage.Stats{}, nil }
func (f *fakeSource) Holder(context.Context) (*storage.Holder, error) { return nil, nil }
func (f *fakeSource) Close() error                                    { return nil }
func (f *fakeSource) Lock(context.Context, storage.Holder) (storage.Writer, error) {
	return nil, errors.New("not here")
}

// TestBackendRefusesWhatEveryBackendRefuses: whatever a backend's Source
// returns, a state or backup with a protection level bulwark does not know
// (a level lowered by hand to a word that lets a delete through) is
// refused, and so is a backup of another stack or lineage, the same way on
// every backend.
func TestBackendRefusesWhatEveryBackendRefuses(t *testing.T) {
	good := func() *state.State {
		return &state.State{Version: state.Version, Stack: "web", Lineage: "L1", Serial: 2,
			Resources: map[string]*state.Resource{"db": {Name: "db", Type: "t", Protection: protection.Protected}}}
	}
	cases := []struct {
		name       string
		change     func(st *state.State, sb *StoredBackup)
		wantLoad   error
		wantBackup error
	}{
		{"as stored", func(*state.State, *StoredBackup) {}, nil, nil},
		{"level lowered to an unknown word", func(st *state.State, sb *StoredBackup) {
			st.Resources["db"].Protection = protection.Level(99)
			sb.State.Resources["db"].Protection = protection.Level(99)
		}, state.ErrCorrupt, state.ErrCorrupt},
		{"prior's level unknown", func(st *state.State, sb *StoredBackup) {
			st.Resources["db"].Prior = &state.Prior{Protection: protection.Level(99)}
			sb.State.Resources["db"].Prior = &state.Prior{Protection: protection.Level(99)}
		}, state.ErrCorrupt, state.ErrCorrupt},
		{"backup of another lineage", func(_ *state.State, sb *StoredBackup) { sb.State.Lineage = "L2" }, nil, storage.ErrLineage},
		{"backup of another stack", func(_ *state.State, sb *StoredBackup) { sb.State.Stack = "other" }, nil, storage.ErrLineage},
		{"backup taken before the stack had a lineage", func(_ *state.State, sb *StoredBackup) { sb.Lineage = "" }, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &fakeSource{st: good(), backup: &StoredBackup{State: good(), Where: "fake backup", Lineage: "L1"}}
			c.change(src.st, src.backup)
			b := NewBackend(src, storage.Options{Stack: "web"})
			if _, err := b.Load(context.Background()); !errors.Is(err, c.wantLoad) || (c.wantLoad == nil && err != nil) {
				t.Errorf("Load: %v, want %v", err, c.wantLoad)
			}
			if _, err := b.Backup(context.Background(), "op_1"); !errors.Is(err, c.wantBackup) || (c.wantBackup == nil && err != nil) {
				t.Errorf("Backup: %v, want %v", err, c.wantBackup)
			}
		})
	}
}
