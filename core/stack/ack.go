package stack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// ErrNoSuchIntervention is returned by Ack for an operation with no pending
// intervention.
var ErrNoSuchIntervention = errors.New("no pending intervention for that operation")

// Ack clears the pending interventions of operation opID in whichever stack
// under stateDir has them, and journals the acknowledgement. It returns the
// stack's name.
func Ack(stateDir, opID string, now func() time.Time) (string, error) {
	return AckWith(stateDir, opID, now, nil)
}

// AckWith is Ack whose backends are passed through wrap first, when set
// (the CLI's --lock-timeout: storage.WithLockTimeout).
func AckWith(stateDir, opID string, now func() time.Time, wrap func(storage.Backend) storage.Backend) (string, error) {
	if stateDir == "" {
		stateDir = ".bulwark"
	}
	if now == nil {
		now = time.Now
	}
	ctx := context.Background()
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoSuchIntervention
	}
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		// The folder's name is its stack's (the file backend's layout).
		var be storage.Backend = filestore.New(filepath.Join(stateDir, e.Name()), storage.Options{Stack: e.Name(), Now: now})
		if wrap != nil {
			be = wrap(be)
		}
		if found, err := AckOn(ctx, be, opID, now); found || err != nil {
			return e.Name(), err
		}
	}
	return "", ErrNoSuchIntervention
}

// AckOn is Ack on one stack's backend: it reports whether the stack had a
// pending intervention of operation opID (and then clears it, journaling
// the acknowledgement); a stack it cannot read is not it.
func AckOn(ctx context.Context, be storage.Backend, opID string, now func() time.Time) (bool, error) {
	if now == nil {
		now = time.Now
	}
	st, err := be.Load(ctx)
	if err != nil {
		return false, nil
	}
	pending := false
	for _, i := range st.Interventions {
		pending = pending || i.Op == opID
	}
	// An operation still unfinished here is refused, pending or not: what
	// it left open (a create whose outcome may be unknown) is settled by
	// resume, an import or resume --not-created, never by an ack.
	var recs []journal.Record
	if _, err := storage.ScanJournal(ctx, be, []string{journal.KindOp, journal.KindStep}, func(r journal.Record) error {
		if r.Op == opID {
			recs = append(recs, r)
		}
		return nil
	}); err != nil && pending {
		return true, fmt.Errorf("ack %s: read the journal: %w", opID, err)
	}
	if len(Unfinished(recs)) > 0 {
		e := &UnfinishedAckError{Stack: st.Stack, Op: opID}
		for _, c := range openCreates(recs, st) {
			e.Creates = append(e.Creates, c.Step)
		}
		return true, e
	}
	if !pending {
		return false, nil
	}
	host, _ := os.Hostname()
	w, err := be.Lock(ctx, storage.Holder{Op: "ack:" + opID, PID: os.Getpid(), Host: host, Since: now().UTC()})
	if err != nil {
		return true, err
	}
	defer w.Release(ctx)
	if st, err = be.Load(ctx); err != nil {
		return true, err
	}
	m := storage.MetaOf(st)
	m.Interventions = slices.DeleteFunc(m.Interventions, func(i state.Intervention) bool { return i.Op == opID })
	// The acknowledgement and the state without the intervention, in
	// one durable write.
	if _, err := w.Commit(ctx, storage.Commit{Records: []journal.Record{{Op: opID, Kind: journal.KindAck, Status: "acknowledged"}},
		Change: storage.Change{Meta: m}}); err != nil {
		return true, fmt.Errorf("ack %s: %w", opID, err)
	}
	if err := w.Checkpoint(ctx, journal.DefaultKeepOperations); err != nil {
		return true, fmt.Errorf("ack %s: %w", opID, err)
	}
	return true, nil
}
