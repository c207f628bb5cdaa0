package inspect

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// StatusResource is one recorded resource, as status shows it.
type StatusResource struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Provider   string `json:"provider"`
	Protection string `json:"protection"`
	ID         string `json:"id"`
	CreatedBy  string `json:"created_by,omitempty"`
	// Retained: kept by a rollback though the revision it went back to
	// lacks it (see step_retain.go): still this stack's, never deleted by an
	// apply.
	Retained bool `json:"retained,omitempty"`
}

// OpSummary is one operation in the journal.
type OpSummary struct {
	ID     string    `json:"id"`
	Type   string    `json:"type"`
	Status string    `json:"status"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"`
	Error  string    `json:"error,omitempty"`
	// User names who ran it ("" for an operation journaled before users
	// were kept).
	User string `json:"user,omitempty"`
	// Repeated is set (above 1) on a compacted line that stands for that
	// many operations in a row that changed nothing (no-op applies,
	// journal.Collapse): ID and Start are the first's, LastID and
	// LastStart the last one's, End when the last ended.
	Repeated  int       `json:"repeated,omitempty"`
	LastID    string    `json:"last_id,omitempty"`
	LastStart time.Time `json:"last_start,omitzero"`
}

// StatusReport is what status prints.
type StatusReport struct {
	Stack         string               `json:"stack"`
	Resources     []StatusResource     `json:"resources"`
	Interventions []state.Intervention `json:"interventions"`
	LastOp        *OpSummary           `json:"last_operation,omitempty"`
	Revision      int                  `json:"revision"` // the current revision (0: none)
	Unfinished    []string             `json:"unfinished,omitempty"`
	// Running names the unfinished operation the lock's live holder is
	// running: in progress, not stopped (resume would exit 4 for it).
	Running []string        `json:"running,omitempty"`
	Lock    *storage.Holder `json:"lock,omitempty"`
	// LockLive: Lock's holder still holds it (a dead one's record, or a
	// lease whose process is gone from this machine, is taken over by the
	// next command that locks).
	LockLive bool `json:"-"`
	// JournalProblems names each journal line that is not a record, with how
	// to repair it; the rest of the report is read from the good lines.
	JournalProblems []string `json:"journal_problems,omitempty"`
	// UnknownCreates are the creates of the unfinished operations whose
	// outcome is unknown: a provider built for Terraform takes no
	// idempotency key, so resume stops at each until a person imports what
	// was made or says nothing was (stack.PendingCreate).
	UnknownCreates []stack.PendingCreate `json:"unknown_creates,omitempty"`
}

// Status reads a stack's state and journal without taking the lock.
func Status(sp *spec.Spec, opts stack.Options) (*StatusReport, error) {
	ctx := context.Background()
	be, st, err := openState(ctx, sp, opts)
	if err != nil {
		return nil, err
	}
	defer be.Close()
	// A bad journal line must not hide the rest: status reports it, named,
	// with the repair, and everything the good lines say.
	// Every line is read (a bad one is reported), the operations' own
	// records alone kept: what History and Unfinished are told by.
	var recs []journal.Record
	bad, err := storage.ScanJournal(ctx, be, nil, func(r journal.Record) error {
		if r.Kind == journal.KindOp || r.Kind == journal.KindSummary {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep := &StatusReport{Stack: sp.Stack, Resources: []StatusResource{}, Interventions: st.Interventions, Revision: st.Current}
	for _, b := range bad {
		rep.JournalProblems = append(rep.JournalProblems, b.Error())
	}
	if rep.Interventions == nil {
		rep.Interventions = []state.Intervention{}
	}
	for _, n := range st.Names() {
		r := st.Resources[n]
		rep.Resources = append(rep.Resources, StatusResource{Name: r.Name, Type: r.Type, Provider: r.Provider, Protection: r.Protection.String(), ID: stack.ShownID(r), CreatedBy: r.CreatedBy, Retained: r.RetainedBy != ""})
	}
	if ops := History(recs); len(ops) > 0 {
		rep.LastOp = &ops[len(ops)-1]
	}
	for _, u := range stack.Unfinished(recs) {
		rep.Unfinished = append(rep.Unfinished, u.Op)
	}
	rep.Lock, _ = be.Holder(ctx)
	live := stack.LiveHolder(ctx, be)
	rep.LockLive = live != nil
	if h := live; h != nil && slices.Contains(rep.Unfinished, h.Op) {
		// Its journal says it has not ended because it is running: the
		// holder is alive (a dead one loses the lock).
		rep.Running = []string{h.Op}
		rep.Unfinished = slices.DeleteFunc(rep.Unfinished, func(op string) bool { return op == h.Op })
	}
	if rep.UnknownCreates, err = unknownCreates(ctx, be, sp, st, recs, rep.Unfinished); err != nil {
		return nil, err
	}
	return rep, nil
}

// unknownCreates lists the creates of the unfinished operations ops
// (stopped, not running) whose outcome is unknown (stack.PendingCreates),
// reading their Execute step records: none when sp declares no Terraform
// provider.
func unknownCreates(ctx context.Context, be storage.Backend, sp *spec.Spec, st *state.State, opRecs []journal.Record, ops []string) ([]stack.PendingCreate, error) {
	terraform := false
	for _, p := range sp.Providers {
		terraform = terraform || p.Terraform()
	}
	if len(ops) == 0 || !terraform {
		return nil, nil
	}
	recs := slices.Clone(opRecs)
	if _, err := storage.ScanJournal(ctx, be, []string{journal.KindStep}, func(r journal.Record) error {
		if r.Phase == "execute" && slices.Contains(ops, r.Op) {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	recs = slices.DeleteFunc(recs, func(r journal.Record) bool { return !slices.Contains(ops, r.Op) })
	return stack.PendingCreates(sp, st, recs), nil
}

// History summarises the operations in a journal, oldest first.
func History(recs []journal.Record) []OpSummary {
	byOp := map[string]*OpSummary{}
	var order []string
	for _, r := range recs {
		if r.Kind != journal.KindOp && r.Kind != journal.KindSummary {
			continue
		}
		o := byOp[r.Op]
		if o == nil {
			o = &OpSummary{ID: r.Op, Start: r.Time}
			byOp[r.Op] = o
			order = append(order, r.Op)
		}
		if r.Kind == journal.KindSummary {
			// An old finished operation, compacted to one line.
			o.Type, o.Status, o.Error, o.End, o.User = r.Type, r.Status, r.Error, r.End, r.User
			if r.Repeated > 1 {
				o.Repeated, o.LastID, o.LastStart = r.Repeated, r.Last, r.LastTime
			}
			continue
		}
		if r.Type != "" {
			o.Type = r.Type
		}
		if r.User != "" && o.User == "" {
			o.User = r.User // who started it, not who resumed it
		}
		o.Status, o.Error = r.Status, r.Error
		if r.Status != journal.OpRunning {
			o.End = r.Time
		}
	}
	out := make([]OpSummary, len(order))
	for i, id := range order {
		out[i] = *byOp[id]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RevisionSummary is one revision, as history shows it.
type RevisionSummary struct {
	N        int       `json:"n"`
	Op       string    `json:"op"`
	Time     time.Time `json:"time"`
	File     string    `json:"file"`
	Provider string    `json:"provider,omitempty"`
	Status   string    `json:"status"`
	User     string    `json:"user,omitempty"` // who applied it
	Current  bool      `json:"current"`
	// Targets are the --target addresses of a partial apply: only they
	// and what they depend on were converged to the revision's spec.
	Targets []string `json:"targets,omitempty"`
	// Variables are the variable values the revision was applied with, a
	// sensitive one's as secrets.Mask (history needs no key).
	Variables map[string]any `json:"variables,omitempty"`
}

// HistoryReport is what history prints.
type HistoryReport struct {
	Stack      string            `json:"stack"`
	Operations []OpSummary       `json:"operations"`
	Revisions  []RevisionSummary `json:"revisions"`
	Current    int               `json:"current"`
}

// StackHistory reads a stack's operations (from the journal) and revisions
// (from the state) without taking the lock.
func StackHistory(sp *spec.Spec, opts stack.Options) (*HistoryReport, error) {
	ctx := context.Background()
	be, st, err := openState(ctx, sp, opts)
	if err != nil {
		return nil, err
	}
	defer be.Close()
	recs, err := stack.JournalKinds(ctx, be, journal.KindOp, journal.KindSummary)
	if err != nil {
		return nil, err
	}
	rep := &HistoryReport{Stack: sp.Stack, Operations: History(recs), Revisions: []RevisionSummary{}, Current: st.Current}
	if rep.Operations == nil {
		rep.Operations = []OpSummary{}
	}
	for _, r := range st.Revisions {
		rep.Revisions = append(rep.Revisions, RevisionSummary{N: r.N, Op: r.Op, Time: r.Time, File: r.File, Provider: r.Provider, Status: r.Status, User: r.User, Current: r.N == st.Current, Targets: r.Targets,
			Variables: secrets.MaskKeys(r.Variables, r.SensitiveVariables)})
	}
	return rep, nil
}

// openState opens the stack's backend and reads its state as
// stack.LoadState does (no lock, sealed values left sealed), for a command
// that reads more through the same backend: one PostgreSQL session or S3
// client per command, not one per read. The caller closes be.
func openState(ctx context.Context, sp *spec.Spec, opts stack.Options) (storage.Backend, *state.State, error) {
	opts.Defaults()
	be, err := opts.Backend(ctx, sp.Stack, state.Sealing{})
	if err != nil {
		return nil, nil, err
	}
	st, err := be.Load(ctx)
	if err != nil {
		be.Close()
		return nil, nil, err
	}
	return be, st, nil
}
