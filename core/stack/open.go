package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/observe"
	"github.com/bulwark-iac/bulwark/core/opstore"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// UnfinishedError refuses an operation while an earlier one is unfinished.
type UnfinishedError struct {
	Op     string
	Type   string
	Status string
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("operation %s (%s) is unfinished (%s): run `bulwark resume` first", e.Op, e.Type, e.Status)
}

// InterventionError refuses an operation while an intervention is pending.
type InterventionError struct {
	Pending []state.Intervention
}

func (e *InterventionError) Error() string {
	i := e.Pending[0]
	return fmt.Sprintf("operation %s needs manual intervention (%s: %s): fix it, then run `bulwark ack %s`", i.Op, i.Resource, i.Error, i.Op)
}

// session is one command's hold on a stack.
type session struct {
	opts Options
	sp   *spec.Spec
	dir  string // the stack's folder under StateDir (the file backend's, and the default data folders')
	be   storage.Backend
	// view is a read-only session's backend (inspect's), opened once for
	// every read the command makes of the stack (its state, and again
	// while it plans; who holds the lock): one PostgreSQL session, one S3
	// client, not one per read. Set in every inspect session but a scratch
	// one whose stack name is not resolved (it reads no state); nil in a
	// locked session, which reads be.
	view   storage.Backend
	store  *opstore.Store // nil in a read-only session (inspect)
	holder storage.Holder // who this session took the lock as
	jr     engine.Journal
	host   Starter
	// tfCopies is this session's folder of verified copies of Terraform
	// providers (under a bulwark.lock), removed by close.
	tfCopies string
	plugins  map[string]Provider
	opID     string
	dataDir  string // providers' data folders live under it
	eng      *engine.Engine
	prog     *progress
	// inherited are the steps an interrupted earlier run of the operation
	// being resumed executed; its rollback undoes them too.
	inherited []*engine.Step
	// settled are the creates of the operation being resumed whose
	// outcome was unknown and which a person said made nothing (resume
	// --not-created): there is nothing to look for.
	settled map[string]bool
	// unanswered are the resources whose Create, of a keyless provider,
	// ended in this run without the provider's answer (see findUnkeyed).
	unanswered sync.Map
	lineage    string     // the stack's lineage (see stackLineage)
	forgotten  []string   // keys this stack gave up (state forget)
	opType     string     // the operation a converge runs, for its refusals
	saved      *SavedPlan // the saved plan a converge carries out (apply FILE), or nil
	// noop is set when a converge found nothing to change and the spec is
	// the current revision's: it records no revision and no backup.
	noop bool
	// freshData is the providers' data folder this session made: a command
	// that ends before its first journal record (a spec the schemas
	// reject, a provider that does not start) removes it, and the backend
	// the stack folder it made.
	freshData string
	// freshDirs are the folders above freshData this session made for it
	// (innermost first): the stack folder, and the state folder, on a
	// backend off this machine (the file backend makes its own, and
	// removes them). Removed, when empty, with freshData.
	freshDirs []string
	// derived names, per resource, the config keys its plan found derived
	// from a secret (see derivedSensitive), for the preview to mask.
	derived map[string][]string
	idx     specIndex // s.sp by name (specResource)
	// reads makes the session's reads and keeps what its pre-flight reads
	// saw (checkRead); set with prog (see reader).
	reads *observe.Reader
	// validated holds each provider's answer to each config it validated
	// in this session (see validations).
	validated validations
	// cleanValidations: resource name → the validationKey of its config,
	// when this session's validation of it answered no diagnostic, for
	// the records this operation writes (state.Resource.Validated).
	cleanValidations sync.Map
	// deletedFirst names the deposed records whose objects a delete-first
	// replace of this operation deleted: kept until the operation ends,
	// for its rollback (see reasonDeleteFirst), and dropped then when the
	// operation failed without one (see record).
	deletedFirst struct {
		sync.Mutex
		names []string
	}
	// dataReads are what the plan's data entries read (or a saved plan
	// recorded), in the spec's order, for the preview and a plan file;
	// dataSubstituted is the spec readData made from s.sp with their
	// values substituted; dataSecrets are their sensitive values.
	dataReads []DataRead
	// moves and forgets are what the spec's moved: and removed: entries
	// ask of the state this run (see followMoves).
	moves   []Move
	forgets []Forget
	// recordedData are the values an operation being resumed read when it
	// first ran (journaled on its start record): readData takes them
	// rather than reading again. nil outside a resume.
	recordedData    map[string]DataRead
	dataSubstituted *spec.Spec
	dataSecrets     []any
	// stackReads are the other stacks' outputs the plan read (or a saved
	// plan or a resumed operation recorded), in the order first
	// referenced; recordedStacks those a resumed operation journaled, by
	// stack; stacksSubstituted the spec readStacks made with their values.
	stackReads        []StackRead
	recordedStacks    map[string]StackRead
	stacksSubstituted *spec.Spec
	// scope is what a run limited by --target covers (see target.go); nil
	// when it is not limited.
	scope map[string]bool
	// resumedTargets: the targets are a resumed operation's (see
	// targetScope's lenient).
	resumedTargets bool
	// restored: the resource names of the revision a failed operation's
	// rollback returns to (see retainIfLacking).
	restored restoredSet
	// sl seals the state's values: one per session, so everything the
	// session seals or opens uses the provider its state records.
	sl *sealer
}

// open takes the lock and loads the state and the journal. resuming skips
// the unfinished-operation check.
//
// ctx is the command's: a backend that hangs (a PostgreSQL or S3 call that
// never answers) is let go of when it ends, while the lock is taken, the
// state loaded, and for every journal record the session writes after.
func open(ctx context.Context, sp *spec.Spec, opts Options, resuming bool) (*session, error) {
	opts.Defaults()
	if err := opts.checkKey(); err != nil {
		return nil, err
	}
	if err := opts.checkPins(sp); err != nil {
		return nil, err
	}
	s := &session{opts: opts, sp: sp, dir: StackDir(opts.StateDir, sp.Stack), opID: journal.NewOpID(), plugins: map[string]Provider{}}
	s.learnVariables()
	if resuming && opts.resumeOp != "" {
		// The lock names the operation that actually runs.
		s.opID = opts.resumeOp
	}
	be, err := opts.Backend(ctx, sp.Stack, s.sealing())
	if err != nil {
		return nil, err
	}
	s.be = be
	host, _ := os.Hostname()
	s.holder = storage.Holder{Op: s.opID, PID: os.Getpid(), Host: host, User: storage.CurrentUser(), Since: opts.Now().UTC()}
	w, err := lockWait(ctx, be, s.holder, sp.Stack, opts)
	if err != nil {
		be.Close()
		return nil, err
	}
	if h := w.Stale(); h != nil {
		opts.Reporter.Note(fmt.Sprintf("note: took over a stale lock left by %s", h))
	}
	// The store holds the lock's writer from here on, so that close
	// releases the lock whatever fails next.
	st, err := be.Load(ctx)
	s.store = opstore.New(be, w, st, opstore.Config{Failpoint: opts.Failpoint, Redactor: opts.Redactor, Warn: opts.Reporter.Note})
	if err != nil {
		s.close()
		return nil, err
	}
	if err := s.checkSecrets(ctx, st, true); err != nil {
		s.close()
		return nil, err
	}
	if err := state.CheckPrivate(st, opts.forgetting); err != nil {
		s.close()
		return nil, fmt.Errorf("load state %s: %w", be.Location(), err)
	}
	// The operations' own records are all an unfinished one is told by:
	// the journal is streamed for them, never held whole.
	var recs []journal.Record
	if _, err := storage.ScanJournal(ctx, be, []string{journal.KindOp}, func(r journal.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		s.close()
		return nil, err
	}
	s.lineage = s.store.Lineage()
	s.forgotten = s.store.Snapshot().Forgotten
	s.jr = s.store
	if !resuming {
		if u := Unfinished(recs); len(u) > 0 && (opts.importPast == "" || u[len(u)-1].Op != opts.importPast) {
			s.close()
			return nil, &u[len(u)-1]
		}
	}
	// Even a resume refuses while another operation's intervention is
	// pending; it may finish recording its own.
	var pending []state.Intervention
	for _, i := range s.store.Snapshot().Interventions {
		if !resuming || i.Op != opts.resumeOp {
			pending = append(pending, i)
		}
	}
	if len(pending) > 0 {
		s.close()
		return nil, &InterventionError{Pending: pending}
	}
	// Old finished operations are compacted to one line each, under the
	// lock and before this run writes, and a snapshot a killed command
	// never wrote is written. Only a shortcut for the next load: when it
	// cannot be written (a full disk), the run goes on from the journal,
	// and its own writes say what is wrong.
	_ = w.Checkpoint(ctx, keepOperations(recs, opts.KeepOperations))
	s.host = opts.starter()
	s.prog = newProgress(opts.Reporter, opts.Events, opts.Redactor, opts.Now)
	s.reads = s.reader()
	s.eng = &engine.Engine{Journal: s.jr, Observer: s.prog, Now: opts.Now, Lost: w.Lost()}
	return s, nil
}

// lockWait takes the lock for h, waiting up to opts.LockTimeout while
// another holds it; a first interrupt (opts.Stop) stops the wait.
func lockWait(ctx context.Context, be storage.Backend, h storage.Holder, stack string, opts Options) (storage.Writer, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Stop != nil {
		go func() {
			select {
			case <-opts.Stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var waiting func(*storage.Holder)
	if opts.LockWaiting != nil {
		waiting = func(holder *storage.Holder) { opts.LockWaiting(stack, holder) }
	}
	return storage.LockWait(ctx, be, h, opts.LockTimeout, waiting)
}

// close kills the plugins, writes the state's snapshot (so what the next
// command loads is one read) and releases everything, on every path.
//
// The plugins end while the snapshot is written: each one's own closing
// work (the mock folds its world's log into its world file, for 1,000
// resources as long as the snapshot takes) touches nothing of the state's,
// and nothing calls a plugin any more. Only what needs them gone waits for
// it: removing the data folders they wrote in, and releasing the lock (a
// plugin still writing in the stack's data folder must not meet the next
// command's).
func (s *session) close() {
	pluginsGone := func() {}
	if s.host != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.host.Close()
		}()
		pluginsGone = func() { <-done }
	}
	if s.store != nil {
		ctx := context.Background()
		wrote := s.store.Wrote()
		lost := s.store.Lost() != nil // the lock is another's, or nobody's: nothing more is written
		if !lost && wrote {
			if err := s.store.Writer().Checkpoint(ctx, s.opts.KeepOperations); err == nil {
				s.opts.Failpoint.HitAt("state", "checkpoint")
			}
		}
		pluginsGone()
		if !lost && !wrote && s.freshData != "" {
			// Nothing was recorded: the providers' data folders this
			// session made hold only what they wrote while it ran.
			if err := nofollow.CheckDir(s.freshData); err == nil {
				os.RemoveAll(s.freshData)
				for _, d := range s.freshDirs {
					os.Remove(d) // only when empty
				}
			}
		}
		if err := s.store.Writer().Release(ctx); err != nil {
			s.warn(fmt.Sprintf("warning: could not release the lock of stack %s at %s: %v (a later command may find it held until the backend lets it go: the kernel, the server or the lease's end)", s.sp.Stack, s.be.Location(), err))
		}
	}
	pluginsGone()
	if s.tfCopies != "" {
		os.RemoveAll(s.tfCopies)
	}
	if s.be != nil {
		if err := s.be.Close(); err != nil {
			s.warn(fmt.Sprintf("warning: could not close the state backend %s: %v", s.be.Location(), err))
		}
	}
}

// warn tells the person one line that changes no outcome.
func (s *session) warn(text string) {
	if s.opts.Reporter != nil {
		s.opts.Reporter.Note(s.opts.Redactor.Redact(text))
	}
}

// Unfinished returns the operations whose last record leaves them running or
// with an incomplete rollback, oldest first.
func Unfinished(recs []journal.Record) []UnfinishedError {
	last := map[string]journal.Record{}
	var order []string
	for _, r := range recs {
		if r.Kind != journal.KindOp {
			continue
		}
		if _, ok := last[r.Op]; !ok {
			order = append(order, r.Op)
		}
		if r.Type == "" {
			r.Type = last[r.Op].Type
		}
		last[r.Op] = r
	}
	var out []UnfinishedError
	for _, op := range order {
		r := last[op]
		if r.Status == journal.OpRunning || r.Status == journal.OpRollbackIncomplete {
			out = append(out, UnfinishedError{Op: op, Type: r.Type, Status: r.Status})
		}
	}
	return out
}

// keepOperations is the compaction open asks for: keep, unless a `secrets
// rotate` that succeeded still has its records whole (killed between its
// end record and the compaction that follows it, see session.rotate): then
// none, so that the records sealed under the key it retired go now.
func keepOperations(recs []journal.Record, keep int) int {
	typ := map[string]string{}
	for _, r := range recs {
		if r.Kind != journal.KindOp {
			continue
		}
		if r.Type != "" {
			typ[r.Op] = r.Type
		}
		if r.Status == journal.OpSucceeded && typ[r.Op] == OpRotate {
			return journal.KeepNone
		}
	}
	return keep
}

// readOnly reports whether the session only reads: one that holds no lock
// (inspect: plan, validate) never changes anything, so its providers are
// told to write nothing anywhere (no clean-up, no persisted counters).
func (s *session) readOnly() bool { return s.store == nil }

// reader is the session's observe.Reader: its running providers (looked up
// at each read: they start after the session opens), its parallelism and
// progress, and whether it is read-only (s.store is set, or not, before
// this is called, and never changes after).
func (s *session) reader() *observe.Reader {
	return &observe.Reader{
		Lookup: func(name string) (observe.Provider, bool) {
			p, ok := s.provider(name)
			return p, ok
		},
		Parallelism: s.opts.ReadParallelism,
		Spread:      s.opts.Parallelism,
		Now:         s.opts.Now,
		Progress:    s.prog,
		ReadOnly:    s.readOnly(),
	}
}

// dataRoot is the folder of the providers' data folders: a scratch one
// for a read-only command that needs it, else Options.DataDir, else the
// stack folder's providers/ (kept there for the file backend; a remote
// backend's CLI sets DataDir to a local folder).
func (s *session) dataRoot() string {
	if s.dataDir != "" {
		return s.dataDir
	}
	if s.opts.DataDir != "" {
		return s.opts.DataDir
	}
	return filepath.Join(s.dir, "providers")
}

// inspect prepares a read-only command: no lock, no journal, the state
// loaded as it is, and the providers started that the spec and the state
// need. With scratch, or when nothing was ever applied, the providers get a
// scratch data folder, so nothing is written under the state folder.
func inspect(ctx context.Context, sp *spec.Spec, opts Options, scratch bool) (*session, *state.State, func(), error) {
	opts.Defaults()
	s := &session{opts: opts, sp: sp, dir: StackDir(opts.StateDir, sp.Stack), plugins: map[string]Provider{}}
	s.learnVariables()
	// A plan compares the state's values with the spec's, so it opens
	// them; validate (scratch) only needs to know the providers, and no key.
	var st *state.State
	if scratch && sp.StackExpr != nil && !spec.ValidStackName(sp.Stack) {
		// validate and graph without the values the stack name needs: no
		// stack is known, so no state is read (an empty one stands in);
		// the spec alone is checked.
		st = &state.State{Resources: map[string]*state.Resource{}}
	} else {
		sealing := state.Sealing{}
		if !scratch {
			sealing = s.sealing()
		}
		be, err := opts.Backend(context.Background(), sp.Stack, sealing)
		if err != nil {
			return nil, nil, nil, err
		}
		if st, err = be.Load(context.Background()); err != nil {
			be.Close()
			return nil, nil, nil, err
		}
		s.view = be
	}
	fail := func(err error) (*session, *state.State, func(), error) {
		if s.view != nil {
			s.view.Close()
		}
		return nil, nil, nil, err
	}
	if !scratch {
		if err := s.checkSecrets(ctx, st, false); err != nil {
			return fail(err)
		}
	}
	if err := state.CheckPrivate(st); err != nil {
		return fail(fmt.Errorf("load state: %w", err))
	}
	// The backend settled the lineage from the state and the journal
	// (refusing the two of different ones).
	s.lineage = st.Lineage
	s.forgotten = st.Forgotten
	// Progress on a terminal only (the live line while it reads): a
	// read-only command writes no event and no other line.
	s.prog = newProgress(opts.Reporter, nil, opts.Redactor, opts.Now)
	s.reads = s.reader()
	s.host = opts.starter()
	cleanup := []func(){s.host.Close}
	if s.view != nil {
		cleanup = []func(){func() { s.view.Close() }, s.host.Close}
	}
	done := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	if _, err := os.Stat(s.dataRoot()); scratch || errors.Is(err, os.ErrNotExist) {
		tmp, err := os.MkdirTemp("", "bulwark-inspect-")
		if err != nil {
			done()
			return nil, nil, nil, err
		}
		cleanup = append(cleanup, func() { os.RemoveAll(tmp) })
		s.dataDir = tmp
	}
	if err := s.startProviders(ctx, providersFor(sp, st), st); err != nil {
		done()
		return nil, nil, nil, err
	}
	return s, st, done, nil
}
