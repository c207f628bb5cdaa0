package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/storage"

	"github.com/bulwark-iac/bulwark/core/dag"
	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// OpMigrate is the operation type of `bulwark state migrate` (its records
// are the backends package's): the step engine never resumes one.
const OpMigrate = "migrate"

// ErrNothingToResume is returned by Resume when no operation is unfinished.
var ErrNothingToResume = errors.New("nothing to resume: no operation is unfinished")

// Resume finishes the newest unfinished operation from the journal: an
// interrupted or incomplete rollback is carried on to convergence (its
// journaled target set, order recomputed from the graph; deletes are
// idempotent); an apply or teardown interrupted mid-way has its in-flight
// steps resolved (what a Create made is found by its idempotency key and
// recorded) and is then run again forward, as the same operation: the
// interrupted run and its resume are one run, so a rollback of the resumed
// run undoes what either part created. An operation that stopped for a
// person is recorded as needing intervention, never run again.
//
// The lock is taken in the name of the operation resumed, and a resume
// refuses while another operation's intervention is pending.
func Resume(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	for attempt := 0; ; attempt++ {
		// Read without the lock only to know which operation to take it
		// for; what is resumed is decided again under the lock.
		recs, err := ReadJournalKinds(sp, opts, journal.KindOp)
		if err != nil {
			return nil, err
		}
		opts.resumeOp = ""
		if u := Unfinished(recs); len(u) > 0 {
			opts.resumeOp = u[len(u)-1].Op
		}
		// With nothing unfinished the lock is still taken, briefly, to
		// read the journal as its holder leaves it (a held lock is exit 4).
		res, err := resumeOp(ctx, sp, opts)
		if !errors.Is(err, errResumeRaced) || attempt == 2 {
			return res, err
		}
	}
}

// errResumeRaced: between the read that chose the operation and the lock,
// another command changed what is unfinished.
var errResumeRaced = errors.New("the unfinished operation changed while taking the lock")

func resumeOp(ctx context.Context, sp *spec.Spec, opts Options) (*Result, error) {
	s, err := open(ctx, sp, opts, true)
	if err != nil {
		return nil, err
	}
	defer s.close()
	ops, err := JournalKinds(ctx, s.be, journal.KindOp)
	if err != nil {
		return nil, err
	}
	u := Unfinished(ops)
	if len(u) == 0 {
		return nil, ErrNothingToResume
	}
	target := u[len(u)-1]
	if target.Op != s.opID {
		return nil, errResumeRaced
	}
	if target.Type == OpMigrate {
		// A state migration is finished by the migration (the CLI's
		// resume and state migrate), never run forward as an apply of
		// the spec at this place.
		return nil, fmt.Errorf("resume: operation %s is a state migration, unfinished: run `bulwark resume %s` with the CLI or `bulwark state migrate %s --to URL` again to finish it", target.Op, sp.File, sp.File)
	}
	// The records of the operation resumed, and only those, are held.
	var mine []journal.Record
	if _, err := storage.ScanJournal(ctx, s.be, nil, func(r journal.Record) error {
		if r.Op == target.Op {
			mine = append(mine, r)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if target.Type == OpRotate {
		// Re-sealing starts no provider and reads no spec.
		return s.resumeRotate(ctx, target, mine)
	}
	if target.Type == "rollback" {
		// An interrupted revision rollback is resumed against the spec of
		// the revision it was going to, not the one given to resume: that
		// is the spec its steps came from.
		if _, err := s.useRevision(rollbackRevision(mine)); err != nil {
			return nil, err
		}
	} else if err := s.useStagedValues(target.Op); err != nil {
		return nil, err
	}
	// Its configs are the ones it planned with: the data its plan read is
	// taken as it journaled it, not read again.
	if err := s.useRecordedData(target.Op, mine); err != nil {
		return nil, err
	}
	// The consent to replace (--replace) the interrupted run was given is
	// on its start record: it goes on with that, never a wider one.
	s.opts.Replace = nil
	for _, r := range mine {
		if r.Kind == journal.KindOp && r.Status == journal.OpRunning && len(r.Replace) > 0 {
			s.opts.Replace = slices.Clone(r.Replace)
		}
	}
	// So is its --target: a resume stays inside what it covered.
	s.opts.Targets, s.scope = nil, nil
	for _, r := range mine {
		if r.Kind == journal.KindOp && r.Status == journal.OpRunning && len(r.Scope) > 0 {
			s.opts.Targets, s.resumedTargets = slices.Clone(r.Scope), true
		}
	}
	if !s.sp.Expanded() {
		// Given without the values its variables need (the CLI lets a
		// resume go on with the ones the operation staged), and it staged
		// none for this spec: nothing has been touched yet.
		return nil, fmt.Errorf("resume: operation %s staged no variable values for this text of %s: give its variables values with --var or --var-file", target.Op, s.sp.File)
	}
	st := s.store.Snapshot()
	providers := s.sp.ProvidersUsed()
	for _, r := range st.Resources {
		providers = append(providers, r.Provider)
	}
	if err := s.startProviders(ctx, providers, st); err != nil {
		return nil, err
	}
	s.prog.levels = map[string]string{}
	for _, r := range st.Resources {
		s.prog.levels[r.Name] = r.Protection.String()
	}
	for _, r := range s.sp.Resources {
		if _, ok := s.prog.levels[r.Name]; !ok {
			s.prog.levels[r.Name] = r.Protection.String()
		}
	}
	// A Create whose outcome is unknown, of a provider that takes no
	// key, stops everything below for a person: resolving, rolling back
	// and running forward would each have to guess.
	if mine, err = s.checkUnknownCreates(ctx, target, mine); err != nil {
		return nil, err
	}
	s.settled = notCreated(mine)
	targets, ok := rollbackTargets(mine)
	if ok || target.Status == journal.OpRollbackIncomplete {
		if !ok {
			// The target set never reached the journal (its record
			// failed): it is every step the operation executed, as the
			// engine would have journaled it.
			targets = executedSteps(mine)
		}
		return s.resumeRollback(ctx, target, mine, targets)
	}
	if res, ok, err := s.resumeIntervention(ctx, target, mine); ok || err != nil {
		return res, err
	}
	return s.resumeForward(ctx, target, mine)
}

// executedSteps lists the steps whose Execute started in recs, in the order
// of their newest start. A start that ended "not_sent" sent nothing: it is
// not an Execute (journal.Sent).
func executedSteps(recs []journal.Record) []string {
	var out []string
	for _, r := range journal.Sent(recs) {
		if r.Kind == journal.KindStep && r.Phase == "execute" && r.Status == journal.StepStarted {
			out = slices.DeleteFunc(out, func(s string) bool { return s == r.Step })
			out = append(out, r.Step)
		}
	}
	return out
}

// resumeIntervention finishes an operation that stopped because a step
// needing a person failed, but whose end (or the state's pending entry) was
// never recorded: the intervention is recorded, and nothing runs again. ok
// is false when the operation did not stop for a person.
func (s *session) resumeIntervention(ctx context.Context, target UnfinishedError, recs []journal.Record) (*Result, bool, error) {
	st := s.store.Snapshot()
	pending := map[string]bool{}
	for _, i := range st.Interventions {
		if i.Op == target.Op {
			pending[i.Resource] = true
		}
	}
	failed := map[string]string{}
	var names []string
	for _, r := range recs {
		if r.Kind != journal.KindStep || r.Status != journal.StepFailed || r.Phase == "compensate" {
			continue
		}
		res, inSpec := s.specResource(r.Step)
		if pending[r.Step] || (inSpec && res.Intervention) {
			if _, seen := failed[r.Step]; !seen {
				names = append(names, r.Step)
			}
			failed[r.Step] = r.Error
		}
	}
	if len(names) == 0 && len(pending) == 0 {
		return nil, false, nil
	}
	s.prog.printf("resume %s: %s %s stopped for a person; recording it\n", s.sp.Stack, target.Type, target.Op)
	// What other steps had in flight when it stopped is recorded, not left
	// untracked; nothing runs again.
	if err := s.resolveInFlight(ctx, target, recs); err != nil {
		return nil, true, err
	}
	// With the operation's end record, in one durable write.
	if err := s.store.AtEnd(target.Op).Mutate(func(st *state.State) error {
		s.unstage(st)
		for _, n := range names {
			if !pending[n] {
				st.Interventions = append(st.Interventions, state.Intervention{Op: target.Op, Resource: n, Error: failed[n], Since: s.opts.Now().UTC()})
			}
		}
		return nil
	}); err != nil {
		return nil, true, err
	}
	errs := map[string]error{}
	for _, n := range names {
		errs[n] = errors.New(failed[n])
	}
	stepErr := &engine.StepError{Failures: errs}
	if _, err := s.jr.Append(ctx, journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: journal.OpIntervention, Error: engine.OneLine(stepErr.Error())}); err != nil {
		return nil, true, err
	}
	return &Result{Op: target.Op, Type: target.Type, Outcome: engine.NeedsIntervention, Err: stepErr,
		Run: engine.Result{Outcome: engine.NeedsIntervention, Failed: names, Errors: errs, Err: stepErr}}, true, nil
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
// Execute: of its newest start that did not end "not_sent" (that one sent
// nothing under its key; see journal.Sent).
func executions(recs []journal.Record) map[string]journal.Record {
	out := map[string]journal.Record{}
	for _, r := range journal.Sent(recs) {
		if r.Kind == journal.KindStep && r.Phase == "execute" && r.Status == journal.StepStarted {
			out[r.Step] = r
		}
	}
	return out
}

// originalError is the failure that started an operation's rollback, as
// its newest journaled error says it. An earlier run of the rollback that
// stayed incomplete journaled its whole report, the failure included
// ("rollback incomplete: FAILURES (after: CAUSE)"): the cause is taken out
// of it, so that each resume reports its own failures after the original
// one, once, instead of nesting every earlier report a level deeper.
func originalError(recs []journal.Record) error {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == journal.KindOp && recs[i].Error != "" {
			cause := causeOf(recs[i].Error)
			if cause == engine.ErrInterrupted.Error() || strings.HasSuffix(cause, ": "+engine.ErrInterrupted.Error()) {
				// Ctrl-C, not a failure ("(not started): interrupted":
				// the steps the interrupt kept from starting): said as
				// such, and matched by errors.Is, so that the report
				// says the operation was interrupted, not that it failed.
				return engine.ErrInterrupted
			}
			return errors.New(cause)
		}
	}
	// No end was recorded (a full disk, a kill): the steps that failed
	// forward say what went wrong, each of them.
	failed := map[string]error{}
	for _, r := range recs {
		if r.Kind == journal.KindStep && r.Status == journal.StepFailed && r.Phase != "compensate" && r.Error != "" {
			failed[r.Step] = errors.New(r.Error)
		}
	}
	if len(failed) > 0 {
		return &engine.StepError{Failures: failed}
	}
	return errors.New("the operation was interrupted")
}

// causeOf peels the reports a rollback wrapped around msg (see
// engine.RollbackError and the compensated outcome's "rolled back after: ")
// down to the original failure.
func causeOf(msg string) string {
	const incomplete, after, rolledBack = "rollback incomplete: ", " (after: ", "rolled back after: "
	for {
		switch {
		case strings.HasPrefix(msg, rolledBack):
			msg = strings.TrimPrefix(msg, rolledBack)
		case strings.HasPrefix(msg, incomplete) && strings.HasSuffix(msg, ")") && strings.Contains(msg, after):
			msg = msg[strings.Index(msg, after)+len(after) : len(msg)-1]
		default:
			return msg
		}
	}
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
	steps := s.compensations(targets, recs)
	s.prog.opStart(target.Op, target.Type)
	s.prog.printf("resume %s: rolling back %d resource(s) of %s\n", s.sp.Stack, len(steps), target.Op)
	g := s.graph(s.store.Snapshot())
	outcome, err := s.eng.Compensate(ctx, target.Op, g, steps, originalError(recs), s.opts.Parallelism)
	// What the rolled-back operation staged is dropped before its end is
	// journaled; if either cannot be written, the operation stays
	// unfinished, for the next resume.
	reached := outcome
	rerr := s.store.AtEnd(target.Op).Mutate(func(st *state.State) error {
		s.unstage(st)
		return nil
	})
	if rerr == nil {
		rec := journal.Record{Op: target.Op, Kind: journal.KindOp, Type: target.Type, Status: outcome.JournalStatus()}
		if err != nil {
			rec.Error = engine.OneLine(err.Error())
		}
		_, rerr = s.jr.Append(ctx, rec)
	}
	if rerr != nil {
		outcome, err = engine.Unfinished, &engine.UnrecordedError{Reached: reached, Err: rerr, Cause: err}
	}
	res := &Result{Op: target.Op, Type: target.Type, Outcome: outcome, Err: err,
		Run: engine.Result{Outcome: outcome, Reached: reached, Rollback: targets, Err: err}}
	res.Preserved = s.preserved(target.Op, targets)
	res.Retained = s.retainedBy(target.Op)
	s.prog.opEnd(res)
	return res, nil
}

// compensations are the undo steps of names, from the journal (the action
// and idempotency key of each one's newest Execute) and the state: what the
// operation created is deleted under the ladder, what it updated is put back.
func (s *session) compensations(names []string, recs []journal.Record) []*engine.Step {
	st := s.store.Snapshot()
	ex := executions(recs)
	var steps []*engine.Step
	for _, name := range names {
		e := ex[name]
		if isMeta(name) {
			// An update's own steps change nothing a rollback undoes (what
			// stage staged is dropped once the rollback ends); they stay in
			// the target set, for the record, with nothing to run.
			steps = append(steps, &engine.Step{ID: name, Action: e.Action})
			continue
		}
		typ := ""
		var deps []string
		if r := st.Resources[name]; r != nil {
			typ, deps = r.Type, r.DependsOn
		} else if r, ok := s.specResource(name); ok {
			typ, deps = r.Type, r.DependsOn
		}
		action, key, staged := plan.Action(e.Action), s.keyOf(e), s.store.ForStep(name)
		steps = append(steps, &engine.Step{ID: name, Resource: name, Type: typ, Action: e.Action, DependsOn: deps,
			Compensate: func(ctx context.Context) (string, error) { return s.undo(ctx, staged, name, action, key) }})
	}
	return steps
}

// resolveInFlight resolves every Execute of the operation that started
// without an end: what a Create made under its key is recorded, so nothing
// it made is left untracked (and a forward run finds it instead of making a
// second one).
func (s *session) resolveInFlight(ctx context.Context, target UnfinishedError, recs []journal.Record) error {
	// the step's newest Execute has ended (a start that ended "not_sent"
	// is none: journal.Sent)
	ended := map[string]bool{}
	sent := journal.Sent(recs)
	for _, r := range sent {
		if r.Kind == journal.KindStep && r.Phase == "execute" {
			ended[r.Step] = r.Status != journal.StepStarted
		}
	}
	for name, e := range executions(sent) {
		if ended[name] || (e.Action != string(plan.Create) && e.Action != string(plan.Replace)) {
			continue
		}
		cur := s.store.Snapshot().Resources[name]
		if cur != nil && cur.CreatedBy == target.Op {
			continue
		}
		found, err := s.findByKey(ctx, name, cur, s.keyOf(e))
		if err != nil {
			return err
		}
		if found == nil && cur == nil && e.Action == string(plan.Replace) {
			if err := s.undepose(ctx, name, target.Op); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *session) resumeForward(ctx context.Context, target UnfinishedError, recs []journal.Record) (*Result, error) {
	if err := s.resolveInFlight(ctx, target, recs); err != nil {
		return nil, err
	}
	if err := s.store.MutateNow(ctx, func(st *state.State) error {
		s.unstage(st)
		return nil
	}); err != nil {
		return nil, err
	}
	// The run goes on as the same operation: what its interrupted part
	// executed is inherited, so a rollback of this run undoes it too.
	s.inherited = s.compensations(executedSteps(recs), recs)
	s.prog.printf("resume %s: %s %s was interrupted; running it again (a rollback would undo both parts)\n", s.sp.Stack, target.Type, target.Op)
	switch target.Type {
	case "teardown":
		return s.teardown(ctx)
	case "apply", "update":
		// The same operation, so the same type: an apply whose first part
		// made something is not an update now.
		return s.converge(ctx, target.Type, 0)
	case "rollback":
		return s.rollbackTo(ctx, rollbackRevision(recs))
	case OpImport, OpForget, OpMove, OpRefresh:
		return s.closeStateOp(ctx, target)
	}
	return nil, fmt.Errorf("resume: cannot resume an operation of type %q", target.Type)
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

// useStagedValues makes an interrupted update go on with the variable
// values it staged, when it is resumed with the same spec but other values
// (or none given): the resumed run is the same run, so it resolves the same
// values. A resume given another spec runs that spec, as before variables.
func (s *session) useStagedValues(op string) error {
	st := s.store.Snapshot()
	rev, ok := st.Revision(st.Staged)
	if !ok || rev.Op != op || rev.Status != state.RevisionStaged || !sameText(rev, string(s.sp.Recorded())) {
		return nil
	}
	rev, err := s.withBody(rev)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if sameValues(rev.Variables, s.sp.Values) {
		return nil
	}
	rsp, err := revisionSpec(rev)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if rsp.Stack != s.sp.Stack {
		// A stack name that uses variables resolves, with the staged
		// values, to the stack whose journal staged them: anything else
		// is a state that is not this stack's.
		return fmt.Errorf("resume: operation %s staged values of stack %q, not %q", op, rsp.Stack, s.sp.Stack)
	}
	rsp.File = s.sp.File
	s.sp = rsp
	s.learnVariables()
	s.prog.printf("resume %s: with the variable values operation %s staged (revision %d)\n", s.sp.Stack, op, rev.N)
	return nil
}
