package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Result is what an operation did.
type Result struct {
	Op      string
	Type    string
	Outcome engine.Outcome
	Run     engine.Result
	// Preserved lists the resources a rollback kept (durable or protected).
	Preserved []string
	// Inherited lists, sorted, the resources whose steps the operation's
	// interrupted earlier part executed (a resumed run): changed by this
	// operation, though not by this run.
	Inherited []string
	// Left lists, after a teardown, what it left because it is not this
	// stack's: the spec's resources the state did not record that reality
	// holds under the spec's identity (see strangers), as the planner
	// decided them.
	Left []plan.Change
	// Retained lists the resources this operation recorded as retained:
	// kept by its rollback, or by `rollback --to`, though the revision it
	// went back to lacks them (see step_retain.go).
	Retained []string
	// Changed and Unchanged count the resources executed and skipped.
	Changed, Unchanged int
	Err                error
	// Outputs are the spec's outputs after a successful apply, update or
	// rollback, sorted by name, a sensitive one's value secrets.Mask.
	Outputs []OutputValue
	// Targets are the run's --target addresses: it was partial (see
	// PartialWarning).
	Targets []string
	// Secrets is, after `secrets rotate`, the secrets provider the state
	// is sealed under.
	Secrets string
}

// CancelledError is an apply or a rollback the person asked declined:
// nothing was changed.
type CancelledError struct{ Op string }

func (e *CancelledError) Error() string {
	return fmt.Sprintf("%s cancelled: nothing was changed", e.Op)
}

// refused journals and reports a plan the ladder or ownership refused.
func (s *session) refused(ctx context.Context, err error, pl *plan.Plan) error {
	var re *plan.RefusedError
	var ce *plan.ConflictError
	// A refusal is an operation of its own in the journal: its lifecycle
	// lines say so, with the resources refused and the exit code; its
	// record (refusedRecord) names who ran it, so history shows who tried
	// to delete what the ladder protects.
	switch {
	case errors.As(err, &ce):
		s.prog.opStart(s.opID, ce.Op)
		defer s.prog.opRefused(s.opID, ce.Op, err)
	case errors.As(err, &re):
		s.prog.opStart(s.opID, re.Op)
		defer s.prog.opRefused(s.opID, re.Op, err)
	}
	if errors.As(err, &ce) {
		s.prog.conflict(s.opID, ce.Conflicts)
		var names []string
		for _, c := range ce.Conflicts {
			names = append(names, c.Resource)
		}
		if _, jerr := s.jr.Append(ctx, s.refusedRecord(ce.Op, names, err)); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	if errors.As(err, &re) {
		names := slices.Concat(re.Resources, re.Gone)
		refused := map[string]bool{}
		for _, n := range names {
			refused[n] = true
		}
		var cs []plan.Change
		for _, c := range pl.Changes {
			if refused[c.Resource] {
				cs = append(cs, c)
			}
		}
		slices.SortFunc(cs, func(a, b plan.Change) int { return strings.Compare(a.Resource, b.Resource) })
		s.prog.refuse(s.opID, cs)
		if _, jerr := s.jr.Append(ctx, s.refusedRecord(re.Op, names, err)); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	return err
}

// refusedRecord is the journal record of an operation refused whole:
// what it was, the resources refused, why, and, as a started operation's
// record does, the spec and who ran it.
func (s *session) refusedRecord(op string, targets []string, err error) journal.Record {
	return journal.Record{Op: s.opID, Kind: journal.KindOp, Type: op, Status: journal.OpRefused,
		Spec: s.sp.File, User: s.holder.User, Targets: targets, Error: err.Error()}
}

// record writes to the state what an operation's outcome means — the
// revision on success (or what it staged dropped), pending interventions —
// in one write, before the engine journals the operation's end.
func (s *session) record(op *engine.Operation) func(*engine.Result) error {
	return func(res *engine.Result) error {
		// It rides on the operation's end record: the outcome and what it
		// means for the state are one durable write.
		var takeBack []*state.Resource
		if op.Type != "teardown" && res.Outcome == engine.Succeeded {
			takeBack = s.takeBack()
		}
		end := s.store.AtEnd(op.ID)
		if res.Outcome == engine.Failed {
			// A run that failed without a rollback (a step's on_failure
			// continue or abort) runs no cleanup phase: what a delete-first
			// replace deleted is gone, and no rollback will make it again,
			// so its record goes with the operation's end instead of
			// claiming what does not exist until the next run's cleanup.
			s.deletedFirst.Lock()
			for _, n := range s.deletedFirst.names {
				if r := s.store.Resource(n); r != nil {
					end.Forget(n)
				}
			}
			s.deletedFirst.Unlock()
		}
		return end.MutateMeta(func(st *state.State) error {
			switch {
			case op.Type != "teardown":
				s.recordRevision(st, op, res.Outcome == engine.Succeeded)
				if res.Outcome == engine.Succeeded {
					st.Outputs = s.evalOutputs(st)
				}
			case res.Outcome == engine.Succeeded && s.targeted():
				// A partial teardown: the rest of the revision still
				// exists, and stays current; outputs that named what went
				// are dropped.
				st.Outputs = s.evalOutputs(st)
			case res.Outcome == engine.Succeeded:
				// Nothing of any revision exists any more: none is current.
				// The revisions stay, for history and rollback --to.
				st.Current = 0
				st.Outputs = nil
			}
			if res.Outcome == engine.NeedsIntervention {
				for _, id := range res.Failed {
					st.Interventions = append(st.Interventions, state.Intervention{Op: op.ID, Resource: id, Error: s.opts.Redactor.Redact(fmt.Sprint(res.Errors[id])), Since: s.opts.Now().UTC()})
				}
			}
			return nil
		}, takeBack...)
	}
}

// finish builds the Result of a run: counts, and what a rollback kept.
func (s *session) finish(op *engine.Operation, res engine.Result) *Result {
	out := &Result{Op: op.ID, Type: op.Type, Outcome: res.Outcome, Run: res, Err: s.opts.Redactor.Error(res.Err), Targets: slices.Clone(s.opts.Targets)}
	if err := s.lostError(op, res); err != nil {
		// The lock was lost: that is the outcome, whatever the steps met.
		out.Err = s.opts.Redactor.Error(err)
	}
	if res.Outcome == engine.Succeeded && op.Type != "teardown" {
		out.Outputs = ShownOutputs(s.store.Snapshot())
	}
	for _, id := range res.Done {
		// A cleanup step deletes what a replace set aside: part of that
		// replace, not a resource changed of its own.
		if !isMeta(id) && !strings.Contains(id, "#") {
			out.Changed++
		}
	}
	for _, id := range res.Skipped {
		if !isMeta(id) {
			out.Unchanged++
		}
	}
	if res.Outcome == engine.Compensated || res.Outcome == engine.RollbackIncomplete {
		out.Preserved = s.preserved(op.ID, res.Rollback)
	}
	out.Retained = s.retainedBy(op.ID)
	for _, st := range op.Inherited {
		if !isMeta(st.ID) && !slices.Contains(out.Inherited, st.ID) {
			out.Inherited = append(out.Inherited, st.ID)
		}
	}
	sort.Strings(out.Inherited)
	return out
}

// preserved lists, sorted, the durable and protected resources among names
// that operation op created and a rollback kept.
func (s *session) preserved(op string, names []string) []string {
	st := s.store.Snapshot()
	var out []string
	for _, id := range names {
		if r := st.Resources[id]; r != nil && r.CreatedBy == op && s.levelOf(r) != protection.Ephemeral {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
