package backends

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Mover is a Writer that can mark its stack as moved to another backend:
// from then on its Load and Lock refuse with storage.ErrMoved, naming the
// new place.
type Mover interface {
	MarkMoved(ctx context.Context, to string) error
}

// BackupCopier is a Writer that can store a backup read from another
// backend, under its name and time (filestore, pgstore and s3store writers
// are): state migrate copies the backups with the stack.
type BackupCopier interface {
	CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error
}

// Moved is what Migrate moved.
type Moved struct {
	From, To  string // locations, without credentials
	Serial    int64  // the source's serial
	Resources int
	Records   int // journal records
	Revisions int // revision bodies copied (pruned ones have none)
	Backups   int // backups copied
}

// Migrate moves a stack from src to dst: under both locks (src's first), it
// copies the state (resources and metadata, its lineage included), the
// whole journal (ids, times and summaries as they are, so resume and
// history go on at dst), every revision body and every backup (names, times
// and serials as they are, so a restore from one works at dst), in one
// Commit at dst plus one PutRevision per body and one CopyBackup per
// backup; it reads the copy back from a fresh open of dst (through reopen)
// and compares; only then marks src moved. A dst that holds anything of the
// stack already is refused; a src that cannot be marked moved, or a dst
// that cannot store backups, is refused before anything is copied.
//
// Values travel as they are stored: opened with the key when src and dst
// were opened with one (and sealed again by dst), or sealed as they are
// without. Either way nothing is written in clear.
func Migrate(ctx context.Context, src, dst storage.Backend, h storage.Holder, reopen func(ctx context.Context) (storage.Backend, error)) (*Moved, error) {
	m := &Moved{From: src.Location(), To: dst.Location()}
	if m.From == m.To {
		return nil, fmt.Errorf("state migrate: %s is where the stack is already", m.To)
	}
	ws, err := src.Lock(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("state migrate: lock %s: %w", m.From, err)
	}
	defer ws.Release(context.WithoutCancel(ctx))
	mover, ok := ws.(Mover)
	if !ok {
		return nil, fmt.Errorf("state migrate: the backend at %s cannot be marked moved, so it would stay usable beside the copy: nothing was copied", m.From)
	}
	wd, err := dst.Lock(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("state migrate: lock %s: %w", m.To, err)
	}
	defer wd.Release(context.WithoutCancel(ctx))
	copier, ok := wd.(BackupCopier)
	if !ok {
		return nil, fmt.Errorf("state migrate: the backend at %s cannot store the stack's backups: nothing was copied", m.To)
	}

	// The destination must be empty of this stack.
	have, err := dst.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", m.To, err)
	}
	haveRecs, _, err := dst.Journal(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", m.To, err)
	}
	if have.Serial != 0 || len(have.Resources) > 0 || len(haveRecs) > 0 {
		return nil, fmt.Errorf("state migrate: %s already holds stack %s (serial %d, %d resources, %d journal records): refusing to overwrite it; nothing was copied",
			m.To, have.Stack, have.Serial, len(have.Resources), len(haveRecs))
	}

	st, err := src.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", m.From, err)
	}
	recs, bad, err := src.Journal(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", m.From, err)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("state migrate: %s: the journal has %d damaged record(s) (first: %v): repair it first (bulwark doctor); nothing was copied", m.From, len(bad), bad[0])
	}
	backups, err := src.Backups(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", m.From, err)
	}
	m.Serial, m.Resources, m.Records = st.Serial, len(st.Resources), len(recs)
	if st.Serial == 0 && len(recs) == 0 {
		return nil, fmt.Errorf("state migrate: %s holds nothing of stack %s: nothing to move", m.From, st.Stack)
	}

	for _, rev := range st.Revisions {
		body, err := src.Revision(ctx, rev.N)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("state migrate: %s: %w", m.From, err)
		}
		if err := wd.PutRevision(ctx, rev.N, *body); err != nil {
			return nil, fmt.Errorf("state migrate: %s: %w", m.To, err)
		}
		m.Revisions++
	}
	meta := storage.MetaOf(st)
	if meta.Lineage == "" {
		// A state from before lineages: the journal's, if it has one.
		for _, r := range recs {
			if r.Lineage != "" {
				meta.Lineage = r.Lineage
			}
		}
	}
	ch := storage.Change{Meta: meta}
	for _, n := range st.Names() {
		ch.Put = append(ch.Put, st.Resources[n])
	}
	copied := append([]journal.Record(nil), recs...)
	for i := range copied {
		// What a backend keeps of its own commit framing is not the record's.
		copied[i].Rest, copied[i].Serial, copied[i].Change = 0, 0, nil
	}
	if _, err := wd.Commit(ctx, storage.Commit{Records: copied, Change: ch}); err != nil {
		return nil, fmt.Errorf("state migrate: write %s: %w", m.To, err)
	}

	// The backups, oldest first (the order backends prune by), after the
	// stack itself (a backup belongs to a stack dst holds).
	for _, b := range backups {
		bst, err := src.Backup(ctx, b.Name)
		if err != nil {
			return nil, fmt.Errorf("state migrate: %s: backup %s: %w", m.From, b.Name, err)
		}
		if err := copier.CopyBackup(ctx, b, bst); err != nil {
			return nil, fmt.Errorf("state migrate: %s: backup %s: %w", m.To, b.Name, err)
		}
		m.Backups++
	}

	// Verify from a fresh open, as the next command will read it.
	check, err := reopen(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: verify %s: %w", m.To, err)
	}
	defer check.Close()
	err = verify(ctx, st, recs, check)
	if err == nil {
		err = verifyBackups(ctx, src, backups, check)
	}
	if err != nil {
		return nil, fmt.Errorf("state migrate: the copy at %s differs from %s (%w): the source is left as it was, usable; remove the copy before trying again", m.To, m.From, err)
	}
	if err := mover.MarkMoved(ctx, m.To); err != nil {
		return nil, fmt.Errorf("state migrate: the copy at %s is complete, but marking %s moved failed (%w): use --state %s from now on, and do not use the old place", m.To, m.From, err, m.To)
	}
	return m, nil
}

// verify compares what dst holds with the source's state and journal.
func verify(ctx context.Context, want *state.State, wantRecs []journal.Record, dst storage.Backend) error {
	got, err := dst.Load(ctx)
	if err != nil {
		return err
	}
	if got.Lineage != want.Lineage && want.Lineage != "" {
		return fmt.Errorf("lineage %s, want %s", got.Lineage, want.Lineage)
	}
	if !reflect.DeepEqual(got.Names(), want.Names()) {
		return fmt.Errorf("resources %v, want %v", got.Names(), want.Names())
	}
	for n, r := range want.Resources {
		if jsonish(got.Resources[n]) != jsonish(r) {
			return fmt.Errorf("resource %s differs", n)
		}
	}
	wm, gm := storage.MetaOf(want), storage.MetaOf(got)
	wm.Lineage, gm.Lineage = "", ""
	if jsonish(wm) != jsonish(gm) {
		return errors.New("the metadata (revisions, interventions, outputs) differs")
	}
	recs, _, err := dst.Journal(ctx)
	if err != nil {
		return err
	}
	if len(recs) != len(wantRecs) {
		return fmt.Errorf("%d journal records, want %d", len(recs), len(wantRecs))
	}
	for i := range recs {
		if recs[i].ID != wantRecs[i].ID || recs[i].Op != wantRecs[i].Op || recs[i].Kind != wantRecs[i].Kind || recs[i].Status != wantRecs[i].Status {
			return fmt.Errorf("journal record %d is %s, want %s", i, recs[i].ID, wantRecs[i].ID)
		}
	}
	return nil
}

// verifyBackups compares the backups dst lists and holds with src's.
func verifyBackups(ctx context.Context, src storage.Backend, want []storage.BackupInfo, dst storage.Backend) error {
	got, err := dst.Backups(ctx)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d backups, want %d", len(got), len(want))
	}
	for i, b := range want {
		if got[i].Name != b.Name || got[i].Serial != b.Serial {
			return fmt.Errorf("backup %d is %s (serial %d), want %s (serial %d)", i, got[i].Name, got[i].Serial, b.Name, b.Serial)
		}
		ws, err := src.Backup(ctx, b.Name)
		if err != nil {
			return err
		}
		gs, err := dst.Backup(ctx, b.Name)
		if err != nil {
			return fmt.Errorf("backup %s: %w", b.Name, err)
		}
		if !reflect.DeepEqual(gs.Names(), ws.Names()) {
			return fmt.Errorf("backup %s: resources %v, want %v", b.Name, gs.Names(), ws.Names())
		}
		for n, r := range ws.Resources {
			if jsonish(gs.Resources[n]) != jsonish(r) {
				return fmt.Errorf("backup %s: resource %s differs", b.Name, n)
			}
		}
	}
	return nil
}

// jsonish is v as stored: what a round trip through any backend keeps.
func jsonish(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable: %v", err)
	}
	return string(b)
}
