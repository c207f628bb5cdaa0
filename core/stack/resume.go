package stack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/bulwark-iac/bulwark/core/dag"
	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// ErrNothingToResume is returned by Resume when no operation is unfinished.
var ErrNothingToResume = errors.New("nothing to resume: no operation is unfinished")

// Resume finishes the newest unfinished operation from the journal: an
// interrupted or incomplete rollback is carried on to convergence (its
// journaled target set, order recomputed from the graph; deletes are
// idempotent); an apply or teardown interrupted mid-way has its in-flight
// steps resolved (what a Create made is found by its idempotency key and
// recorded) and is then run again forward, which converges because every step
// checks first.
func Resume(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	s, err := open(sp, opts, true)
	if err != nil {
		return nil, err
	}
	defer s.close()
	recs, err := journal.Read(filepath.Join(s.dir, journal.FileName))
	if err != nil {
		return nil, err
	}
	u := Unfinished(recs)
	if len(u) == 0 {
		return nil, ErrNothingToResume
	}
	target := u[len(u)-1]
	var mine []journal.Record
	for _, r := range recs {
		if r.Op == target.Op {
			mine = append(mine, r)
		}
	}
	if target.Type == "rollback" {
		// An interrupted revision rollback is resumed against the spec of
		// the revision it was going to, not the one given to resume: that
		// is the spec its steps came from.
		if _, err := s.useRevision(rollbackRevision(mine)); err != nil {
			return nil, err
		}
	}
	st := s.store.Snapshot()
	providers := s.sp.ProvidersUsed()
	for _, r := range st.Resources {
		providers = append(providers, r.Provider)
	}
	if err := s.startProviders(ctx, providers, st); err != nil {
		return nil, err
	}
	// The resumed operation keeps its id: its records, and what it created,
	// stay its own.
	s.opID = target.Op
	s.prog.levels = map[string]string{}
	for _, r := range st.Resources {
		s.prog.levels[r.Name] = r.Protection
	}
	for _, r := range s.sp.Resources {
		if _, ok := s.prog.levels[r.Name]; !ok {
			s.prog.levels[r.Name] = r.Protection.String()
		}
	}
	if targets, ok := rollbackTargets(mine); ok || target.Status == journal.OpRollbackIncomplete {
		return s.resumeRollback(ctx, target, mine, targets)
	}
	return s.resumeForward(ctx, target, mine)
}

// rollbackTargets returns the newest journaled rollback target set of an
// operation, less what has been compensated since.
func rollbackTargets(recs []journal.Record) ([]string, bool) {
	at := -1
	for i, r := range recs {
		if r.Kind == journal.KindRollback {
			at = i
		}
	}
	if at < 0 {
		return nil, false
	}
	done := map[string]bool{}
	for _, r := range recs[at:] {
		if r.Phase == "compensate" && (r.Status == journal.StepOK || r.Status == journal.StepSkipped) {
			done[r.Step] = true
		}
	}
	var out []string
	for _, t := range recs[at].Targets {
		if !done[t] {
			out = append(out, t)
		}
	}
	return out, true
}

// executions returns, per step, the action and idempotency key of its newest
// Execute.
func executions(recs []journal.Record) map[string]journal.Record {
	out := map[string]journal.Record{}
	for _, r := range recs {
		if r.Kind == journal.KindStep && r.Phase == "execute" && r.Status == journal.StepStarted {
			out[r.Step] = r
		}
	}
	return out
}

func originalError(recs []journal.Record) error {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == journal.KindOp && recs[i].Error != "" {
			return errors.New(recs[i].Error)
		}
	}
	return errors.New("the operation was interrupted")
}

// graph is the dependency graph of the spec and the state together.
func (s *session) graph(st *state.State) *dag.Graph {
	var steps []*engine.Step
	seen := map[string]bool{}
	for _, r := range s.sp.Resources {
		steps = append(steps, &engine.Step{ID: r.Name, DependsOn: r.DependsOn})
		seen[r.Name] = true
	}
	for _, n := range st.Names() {
		if !seen[n] {
			steps = append(steps, &engine.Step{ID: n, DependsOn: st.Resources[n].DependsOn})
		}
	}
	return engine.Graph(steps)
}

func (s *session) resumeRollback(ctx context.Context, target UnfinishedError, recs []journal.Record, targets []string) (*Result, error) {
	if targets == nil {
		targets = []string{}
	}
	st := s.store.Snapshot()
	ex := executions(recs)
	var steps []*engine.Step
	for _, name := range targets {
		e := ex[name]
		typ := ""
		if r := st.Resources[name]; r != nil {
			typ = r.Type
		} else if r, ok := s.sp.Resource(name); ok {
			typ = r.Type
		}
		action, key := plan.Action(e.Action), e.ID
		steps = append(steps, &engine.Step{ID: name, Resource: name, Type: typ, Action: e.Action,
			Compensate: func(ctx context.Context) (string, error) { return s.undo(ctx, name, action, key) }})
	}
	s.prog.printf("resume %s: rolling back %d resource(s) of %s\n", s.sp.Stack, len(steps), target.Op)
	g := s.graph(st)
	outcome, err := s.eng.Compensate(ctx, target.Op, g, steps, originalError(recs))
	// What the rolled-back operation staged is dropped before its end is
	// journaled.
	if merr := s.store.Mutate(func(st *state.State) error {
		s.unstage(st)
		return nil
	}); merr != nil {
		err = errors.Join(err, merr)
	}
	rec := journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: outcome.JournalStatus()}
	if err != nil {
		rec.Error = err.Error()
	}
	if _, jerr := s.jr.Append(rec); jerr != nil {
		err = errors.Join(err, jerr)
	}
	res := &Result{Op: target.Op, Type: target.Type, Outcome: outcome, Err: err}
	res.Preserved = s.preserved(target.Op, targets)
	return res, nil
}

func (s *session) resumeForward(ctx context.Context, target UnfinishedError, recs []journal.Record) (*Result, error) {
	// Resolve every Execute that started without an end: what a Create made
	// under its key is recorded, so the forward run finds it instead of
	// making a second one.
	ended := map[string]bool{}
	for _, r := range recs {
		if r.Kind == journal.KindStep && r.Phase == "execute" && r.Status != journal.StepStarted {
			ended[r.Step] = true
		}
	}
	for name, e := range executions(recs) {
		if ended[name] || (e.Action != string(plan.Create) && e.Action != string(plan.Replace)) {
			continue
		}
		cur := s.store.Snapshot().Resources[name]
		if cur != nil && cur.CreatedBy == target.Op {
			continue
		}
		if _, err := s.findByKey(ctx, name, cur, e.ID); err != nil {
			return nil, err
		}
	}
	if err := s.store.Mutate(func(st *state.State) error {
		s.unstage(st)
		return nil
	}); err != nil {
		return nil, err
	}
	if _, err := s.jr.Append(journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: journal.OpFailed,
		Error: "interrupted; resumed by running it again"}); err != nil {
		return nil, err
	}
	s.prog.printf("resume %s: %s %s was interrupted; running it again\n", s.sp.Stack, target.Type, target.Op)
	s.opID = journal.NewOpID()
	switch target.Type {
	case "teardown":
		return s.teardown(ctx)
	case "apply", "update":
		return s.apply(ctx)
	case "rollback":
		return s.rollbackTo(ctx, rollbackRevision(recs))
	}
	return nil, fmt.Errorf("resume: cannot resume an operation of type %q", target.Type)
}

// loadState reads a stack's state without the lock (a missing one is empty).
func loadState(sp *spec.Spec, opts Options) (*state.State, error) {
	st, err := state.Load(filepath.Join(StackDir(opts.StateDir, sp.Stack), state.FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return &state.State{Version: state.Version, Stack: sp.Stack, Resources: map[string]*state.Resource{}}, nil
	}
	return st, err
}

// rollbackRevision is the target revision an operation's records name.
func rollbackRevision(recs []journal.Record) int {
	rev := 0
	for _, r := range recs {
		if r.Kind == journal.KindOp && r.Revision != 0 {
			rev = r.Revision
		}
	}
	return rev
}
