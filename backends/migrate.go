package backends

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// Mover is a Writer that can fence its stack for a migration: from then on
// its Load and Lock refuse with a *storage.MovedError naming the migration
// and the new place, except to that migration (storage.CheckMoved). The
// marker is a storage.MovedMarker's text.
type Mover interface {
	MarkMoved(ctx context.Context, marker string) error
}

// BackupCopier is a Writer that can store a backup read from another
// backend, under its name and time (filestore, pgstore and s3store writers
// are): state migrate copies the backups with the stack. A backup already
// stored under the name is kept as it is.
type BackupCopier interface {
	CopyBackup(ctx context.Context, info storage.BackupInfo, st *state.State) error
}

// OpMigrate is the type of a migration's operation records.
const OpMigrate = "migrate"

// kindLock is the kind of the record a backend writes when it takes over a
// dead holder's lock (s3store's): it belongs to the place, not to the
// stack's history, and is left out when a copy is compared.
const kindLock = "lock"

// Migration is one `state migrate`.
type Migration struct {
	// From and To are the --state URLs of the two places, as given
	// (credentials included: they open the places; never printed or
	// recorded: Redact's form is).
	From, To string
	// Options open both places (the stack's name and sealing).
	Options storage.Options
	Holder  storage.Holder
	Open    storage.Opener
	// Locking, when set, wraps a backend before its lock is taken
	// (--lock-timeout).
	Locking func(storage.Backend) storage.Backend
	// Boundary, when set, is called after each durable step of the
	// migration (the crash harness's failpoint "state").
	Boundary func()
}

// Moved is what Migrate did.
type Moved struct {
	// From and To are the places as --state URLs without credentials: To
	// is the place to use from now on.
	From, To string
	Op       string // the migration's operation id
	// Finished: an interrupted migration was taken up and finished.
	// Already: it had been finished before; nothing was written.
	Finished, Already bool
	Serial            int64 // the source's serial
	Resources         int
	Records           int // journal records
	Revisions         int // revision bodies copied (pruned ones have none)
	Backups           int // backups copied
}

// Migrate moves a stack from m.From to m.To, as one operation that a kill
// at any point leaves finishable, never with two places that take writes:
//
//  1. Under the source's lock, the destination is checked (under its lock
//     too): empty, or a copy this migration left (same lineage, its start
//     record there), or finished by it; anything else is refused before
//     anything is written.
//  2. The migration's start record (type migrate, Targets [from, to]) is
//     committed to the source's journal: from then on every operation at
//     the source refuses (an unfinished operation) and `resume` finishes
//     the migration.
//  3. The source is fenced (Mover.MarkMoved): its Load and Lock refuse,
//     naming the migration and the destination, to everyone but this
//     migration. The fence is never taken back.
//  4. The state (its lineage included) and the whole journal (the start
//     record with it) are copied in one Commit at the destination, then
//     every revision body and every backup. While the start record is the
//     migration's last there, the destination refuses every operation too
//     (an unfinished operation, which `resume` there finishes).
//  5. The copy is read back from a fresh open and compared; only then is
//     the migration's end record committed at the destination: one atomic
//     write that makes it the stack's one live place.
//
// Run again (or by `resume` at either place) after a kill, Migrate finds
// where the migration stopped from the source's journal and fence and the
// destination's records, and goes on from there. A destination is created
// with the source's lineage (storage.Options.Lineage), so one a kill left
// locked but empty is still recognised as this migration's.
//
// Values travel as they are stored: opened with the key when the places
// were opened with one (and sealed again by the destination), or sealed as
// they are without. Either way nothing is written in clear.
func Migrate(ctx context.Context, m Migration) (*Moved, error) {
	from, to := Redact(m.From), Redact(m.To)
	out := &Moved{From: from, To: to}
	if from == to {
		return nil, fmt.Errorf("state migrate: %s is where the stack is already", to)
	}
	locking := m.Locking
	if locking == nil {
		locking = func(b storage.Backend) storage.Backend { return b }
	}
	boundary := m.Boundary
	if boundary == nil {
		boundary = func() {}
	}

	// The source, and the migration its fence names, if any.
	so := m.Options
	src, err := m.Open(ctx, m.From, so)
	if err != nil {
		return nil, err
	}
	defer func() { src.Close() }()
	fenced := false
	if _, err := src.Load(ctx); err != nil {
		var me *storage.MovedError
		if !errors.As(err, &me) {
			return nil, fmt.Errorf("state migrate: %w", err)
		}
		if me.Migration == "" || me.To != to {
			return nil, fmt.Errorf("state migrate: %w", err)
		}
		// Fenced by a migration to the same place: this one, interrupted.
		out.Op, fenced = me.Migration, true
		src.Close()
		so.Migration = out.Op
		if src, err = m.Open(ctx, m.From, so); err != nil {
			return nil, err
		}
	}
	ws, err := locking(src).Lock(ctx, m.Holder)
	if err != nil {
		return nil, fmt.Errorf("state migrate: lock %s: %w", from, err)
	}
	defer ws.Release(context.WithoutCancel(ctx))
	mover, ok := ws.(Mover)
	if !ok {
		return nil, fmt.Errorf("state migrate: the backend at %s cannot be fenced, so it would stay usable beside the copy: nothing was copied", from)
	}
	st, recs, err := readSource(ctx, src, from)
	if err != nil {
		return nil, err
	}
	if start := lastMigration(recs); start != nil && running(recs, start.Op) {
		switch {
		case fenced && start.Op != out.Op:
			return nil, fmt.Errorf("state migrate: %s is fenced by migration %s, but its journal's unfinished migration is %s: repair it by hand; nothing was copied", from, out.Op, start.Op)
		case migrationTo(*start) != to:
			return nil, fmt.Errorf("state migrate: migration %s of stack %s from %s to %s is unfinished: run it again with --to %s (or `bulwark resume`) to finish it; nothing was copied",
				start.Op, st.Stack, from, migrationTo(*start), migrationTo(*start))
		}
		out.Op = start.Op
	} else if fenced {
		return nil, fmt.Errorf("state migrate: %s is fenced by migration %s, whose start record is not in its journal: repair it by hand; nothing was copied", from, out.Op)
	}
	if out.Op == "" && st.Serial == 0 && len(recs) == 0 {
		return nil, fmt.Errorf("state migrate: %s holds nothing of stack %s: nothing to move", from, st.Stack)
	}
	lineage := st.Lineage
	if lineage == "" {
		// A state from before lineages: the journal's, if it has one.
		for _, r := range recs {
			if r.Lineage != "" {
				lineage = r.Lineage
			}
		}
	}

	// The destination, under its lock, before anything is written.
	do := m.Options
	do.Lineage = lineage
	dst, err := m.Open(ctx, m.To, do)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	wd, err := locking(dst).Lock(ctx, m.Holder)
	if err != nil {
		return nil, fmt.Errorf("state migrate: lock %s: %w", to, err)
	}
	defer wd.Release(context.WithoutCancel(ctx))
	copier, ok := wd.(BackupCopier)
	if !ok {
		return nil, fmt.Errorf("state migrate: the backend at %s cannot store the stack's backups: nothing was copied", to)
	}
	have, err := dst.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", to, err)
	}
	haveRecs, _, err := dst.Journal(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", to, err)
	}
	ours := out.Op != "" && (have.Lineage == lineage || lineage == "")
	switch {
	case ours && ended(haveRecs, out.Op):
		// Finished before: the destination went live with the end record.
		if !fenced {
			if err := mover.MarkMoved(ctx, storage.MovedMarker{Migration: out.Op, To: to}.String()); err != nil {
				return nil, fmt.Errorf("state migrate: fence %s: %w", from, err)
			}
			boundary()
		}
		out.Already = true
		out.Serial, out.Resources, out.Records = st.Serial, len(st.Resources), len(recs)
		return out, nil
	case ours && started(haveRecs, out.Op):
		// The copy's commit is there (not live yet): what follows it is
		// done again.
	case blank(have, haveRecs):
	default:
		return nil, fmt.Errorf("state migrate: %s already holds stack %s (serial %d, %d resources, %d journal records) that is not this migration's copy: refusing to overwrite it; nothing was copied",
			to, have.Stack, have.Serial, len(have.Resources), len(haveRecs))
	}
	out.Finished = out.Op != "" // an interrupted migration, taken up

	// Everything the source holds, read under its lock (it cannot change
	// from here on: the lock, then the fence).
	backups, err := src.Backups(ctx)
	if err != nil {
		return nil, fmt.Errorf("state migrate: %s: %w", from, err)
	}
	type rev struct {
		n    int
		body *storage.RevisionBody
	}
	var revs []rev
	for _, r := range st.Revisions {
		body, err := src.Revision(ctx, r.N)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("state migrate: %s: %w", from, err)
		}
		revs = append(revs, rev{r.N, body})
	}
	backupStates := make([]*state.State, len(backups))
	for i, b := range backups {
		if backupStates[i], err = src.Backup(ctx, b.Name); err != nil {
			return nil, fmt.Errorf("state migrate: %s: backup %s: %w", from, b.Name, err)
		}
	}

	// 2. The start record, at the source.
	if out.Op == "" {
		out.Op = m.Holder.Op
		if out.Op == "" || slices.ContainsFunc(recs, func(r journal.Record) bool { return r.Op == out.Op }) {
			out.Op = journal.NewOpID()
		}
		start := journal.Record{Op: out.Op, Kind: journal.KindOp, Type: OpMigrate, Status: journal.OpRunning, Targets: []string{from, to}}
		if _, err := ws.Commit(ctx, storage.Commit{Records: []journal.Record{start}}); err != nil {
			return nil, fmt.Errorf("state migrate: journal at %s: %w", from, err)
		}
		boundary()
		if st, recs, err = readSource(ctx, src, from); err != nil {
			return nil, err
		}
	}
	// 3. The fence.
	if !fenced {
		if err := mover.MarkMoved(ctx, storage.MovedMarker{Migration: out.Op, To: to}.String()); err != nil {
			return nil, fmt.Errorf("state migrate: fence %s (nothing was copied yet; run the migration again, or `bulwark resume`, to finish it): %w", from, err)
		}
		boundary()
	}
	out.Serial, out.Resources, out.Records = st.Serial, len(st.Resources), len(recs)

	// 4. The copy.
	if !started(haveRecs, out.Op) {
		meta := storage.MetaOf(st)
		meta.Lineage = lineage
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
			return nil, fmt.Errorf("state migrate: write %s: %w", to, err)
		}
		boundary()
	}
	for _, r := range revs {
		if err := wd.PutRevision(ctx, r.n, *r.body); err != nil {
			return nil, fmt.Errorf("state migrate: %s: %w", to, err)
		}
		boundary()
		out.Revisions++
	}
	// The backups, oldest first (the order backends prune by); one already
	// there (a run before this one copied it) is kept.
	for i, b := range backups {
		if err := copier.CopyBackup(ctx, b, backupStates[i]); err != nil {
			return nil, fmt.Errorf("state migrate: %s: backup %s: %w", to, b.Name, err)
		}
		boundary()
		out.Backups++
	}

	// 5. Verify from a fresh open, as the next command will read it; then
	// the end record makes the destination live.
	check, err := m.Open(ctx, m.To, m.Options)
	if err != nil {
		return nil, fmt.Errorf("state migrate: verify %s: %w", to, err)
	}
	defer check.Close()
	err = verify(ctx, st, recs, check)
	if err == nil {
		err = verifyBackups(ctx, backups, backupStates, check)
	}
	if err != nil {
		return nil, fmt.Errorf("state migrate: the copy at %s differs from %s (%w): neither place takes writes until migration %s is finished; find what changed the copy, then run the migration again", to, from, err, out.Op)
	}
	end := journal.Record{Op: out.Op, Kind: journal.KindOp, Type: OpMigrate, Status: journal.OpSucceeded, Targets: []string{from, to}}
	if _, err := wd.Commit(ctx, storage.Commit{Records: []journal.Record{end}}); err != nil {
		return nil, fmt.Errorf("state migrate: write %s: %w (run the migration again to finish it)", to, err)
	}
	boundary()
	return out, nil
}

// readSource reads the source's state and journal under its lock.
func readSource(ctx context.Context, src storage.Backend, from string) (*state.State, []journal.Record, error) {
	st, err := src.Load(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("state migrate: %s: %w", from, err)
	}
	recs, bad, err := src.Journal(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("state migrate: %s: %w", from, err)
	}
	if len(bad) > 0 {
		return nil, nil, fmt.Errorf("state migrate: %s: the journal has %d damaged record(s) (first: %v): repair it first (bulwark doctor); nothing was copied", from, len(bad), bad[0])
	}
	return st, recs, nil
}

// lastMigration is the newest migration's first record in recs (nil: none).
func lastMigration(recs []journal.Record) *journal.Record {
	for i := len(recs) - 1; i >= 0; i-- {
		if r := recs[i]; r.Kind == journal.KindOp && r.Type == OpMigrate && r.Status == journal.OpRunning {
			return &recs[i]
		}
	}
	return nil
}

// running reports whether op's last operation record leaves it running.
func running(recs []journal.Record, op string) bool {
	status := ""
	for _, r := range recs {
		if r.Op == op && r.Kind == journal.KindOp {
			status = r.Status
		}
	}
	return status == journal.OpRunning
}

// started and ended report whether recs hold op's start or end record.
func started(recs []journal.Record, op string) bool {
	for _, r := range recs {
		if r.Op == op && r.Kind == journal.KindOp && r.Status == journal.OpRunning {
			return true
		}
	}
	return false
}

func ended(recs []journal.Record, op string) bool {
	for _, r := range recs {
		if r.Op == op && r.Kind == journal.KindOp && r.Status == journal.OpSucceeded {
			return true
		}
	}
	return false
}

// blank reports whether a destination holds nothing of a stack: no state,
// and no records but those of its own lock.
func blank(st *state.State, recs []journal.Record) bool {
	if st.Serial != 0 || len(st.Resources) > 0 {
		return false
	}
	for _, r := range recs {
		if r.Kind != kindLock {
			return false
		}
	}
	return true
}

// migrationTo and migrationFrom read a migrate record's places.
func migrationTo(r journal.Record) string {
	if len(r.Targets) == 2 {
		return r.Targets[1]
	}
	return ""
}

func migrationFrom(r journal.Record) string {
	if len(r.Targets) == 2 {
		return r.Targets[0]
	}
	return ""
}

// Pending is an unfinished migration found at a place.
type Pending struct {
	Op       string
	From, To string // --state URLs without credentials
}

// PendingMigration reports the unfinished migration of the stack at url,
// if any (nil: none): the place is fenced by one (the source), or its
// journal's last unfinished operation is one (a source killed before its
// fence, or a destination not live yet). `resume` finishes it.
func PendingMigration(ctx context.Context, open storage.Opener, url string, opts storage.Options) (*Pending, error) {
	b, err := open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if _, err := b.Load(ctx); err != nil {
		var me *storage.MovedError
		if errors.As(err, &me) && me.Migration != "" {
			return &Pending{Op: me.Migration, From: Redact(url), To: me.To}, nil
		}
		return nil, nil // what is wrong is the command's to say
	}
	var ops []journal.Record
	if _, err := storage.ScanJournal(ctx, b, []string{journal.KindOp}, func(r journal.Record) error {
		ops = append(ops, r)
		return nil
	}); err != nil {
		return nil, nil
	}
	if r := lastMigration(ops); r != nil && running(ops, r.Op) && lastUnfinished(ops) == r.Op {
		return &Pending{Op: r.Op, From: migrationFrom(*r), To: migrationTo(*r)}, nil
	}
	return nil, nil
}

// lastUnfinished is the newest operation that is running in ops.
func lastUnfinished(ops []journal.Record) string {
	last := ""
	for _, r := range ops {
		if r.Kind == journal.KindOp && r.Status == journal.OpRunning && running(ops, r.Op) {
			last = r.Op
		}
	}
	return last
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
	recs, wantRecs = withoutLock(recs), withoutLock(wantRecs)
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

// withoutLock is recs without the records of a place's own lock.
func withoutLock(recs []journal.Record) []journal.Record {
	out := make([]journal.Record, 0, len(recs))
	for _, r := range recs {
		if r.Kind != kindLock {
			out = append(out, r)
		}
	}
	return out
}

// verifyBackups compares the backups dst lists and holds with the
// source's.
func verifyBackups(ctx context.Context, want []storage.BackupInfo, wantStates []*state.State, dst storage.Backend) error {
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
		ws := wantStates[i]
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
