package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
)

// Options configure an operation: one small struct per concern, embedded
// so that each field reads as opts.Field. A function that needs one
// concern takes that struct alone.
type Options struct {
	StorageOptions
	PluginOptions
	OutputOptions
	RunOptions
	SecretOptions
	TestHooks

	// resumeOp is the operation a resume runs: the lock is taken in its
	// name, and only its own interventions may be pending (set by Resume).
	resumeOp string
	// forgetting is the resource a state forget drops: its private data
	// may be damaged (forgetting it is the way out), nothing reads it.
	forgetting string
}

// StorageOptions say where a stack's state lives, how much history it
// keeps, and how long to wait for its lock.
type StorageOptions struct {
	StateDir string // folder of stack folders (default ./.bulwark)
	// Open opens the stack's storage from StateURL (cmd/bulwark builds it
	// from the backends it links: file, postgres, s3). When Open or
	// StateURL is unset, the state is the file backend's, in the stack's
	// folder under StateDir.
	Open     storage.Opener
	StateURL string
	// ListStacks, when set, lists the stacks StateURL's backend holds, for
	// doctor without a spec (default: the stack folders under StateDir).
	ListStacks func(ctx context.Context) ([]string, error)
	// DataDir is the folder of the providers' data folders (one per
	// provider); default: the stack folder's providers/ under StateDir.
	// A remote backend's data folders stay on this machine: its CLI sets
	// a local folder here.
	DataDir string
	// KeepRevisions is how many revisions the state keeps (default 20);
	// older ones are pruned, never the current or a staged one.
	KeepRevisions int
	// KeepOperations is how many of the newest operations keep every
	// journal record (default 20); older finished ones are compacted to one
	// summary line each.
	KeepOperations int
	// LockTimeout is how long an operation waits for the stack's lock
	// while another holds it, trying again with backoff (Terraform's
	// -lock-timeout); 0 fails at once (exit 4, naming the holder). A first
	// interrupt (Stop) stops the wait. LockWaiting, when set, is told once,
	// when the wait begins, whose lock it waits for (nil: unreadable).
	LockTimeout time.Duration
	LockWaiting func(stack string, holder *storage.Holder)
}

// PluginOptions say where providers are found and how they are run.
type PluginOptions struct {
	PluginDirs []string     // plugin lookup folders, in order
	Logger     hclog.Logger // plugin machinery; nil discards
	// StartTimeout and CallTimeout bound a plugin's handshake and each call
	// (0: pluginhost's defaults).
	StartTimeout, CallTimeout time.Duration
	// ProviderLock, when set (bulwark.lock exists beside the spec), pins
	// every plugin's sha256; LockPath names the file for messages.
	ProviderLock *providerlock.File
	LockPath     string
}

// OutputOptions say what an operation shows a person and a program, and
// what it asks.
type OutputOptions struct {
	Events *events.Writer // lifecycle events; nil discards
	// Reporter is shown what an operation does, for a person (progress,
	// notes, warnings); nil reports nothing. The stack writes no line of
	// its own: rendering is the Reporter's (see report.go).
	Reporter Reporter
	// Confirm, when set, is asked before a teardown deletes anything; false
	// cancels it.
	Confirm func(names []string) bool
	// Review, when set, is shown the plan of an apply or a rollback once it
	// is made and passed the ladder, before its first step (not for a saved
	// plan, which was reviewed when it was made); false cancels the run
	// (a *CancelledError: nothing was changed, nothing journaled).
	Review func(*Preview) bool
}

// RunOptions say how this one run behaves.
type RunOptions struct {
	Now         func() time.Time
	Parallelism int // steps at once (default 10)
	// SimulateFailure names a resource whose Execute fails in this run.
	SimulateFailure string
	// Replace names the resources (addresses) this run replaces even with
	// no change, and whose replace it consents to when they are durable
	// (apply and plan --replace ADDRESS, repeatable).
	Replace []string
	// ImportFrom names the stack an import may take a resource from when
	// the resource carries that stack's key (bulwark import --from).
	ImportFrom string
	// Stop, when closed (a first interrupt), stops an operation
	// gracefully: no step starts, the running ones finish, and what ran is
	// rolled back. Cancelling the context instead (a second interrupt)
	// stops waiting at once and leaves the operation for resume.
	Stop <-chan struct{}
}

// SecretOptions say how sensitive values are sealed and masked.
type SecretOptions struct {
	// Secrets finds the key that seals the state's sensitive values and
	// revisions' specs; nil seals nothing (in-process tests only: the CLI
	// always sets it).
	Secrets *secrets.Source
	// Redactor collects the sensitive values the command sees (provider
	// config, sensitive attributes) and masks them in journal lines,
	// events and errors; nil: one per operation. The CLI shares one with
	// its own output.
	Redactor *secrets.Redactor
}

// TestHooks let tests reach inside an operation. The CLI sets none but
// Failpoint (from the environment, for the crash harness).
type TestHooks struct {
	// Starter starts providers; nil starts plugin processes found in
	// PluginDirs. Tests pass in-process providers.
	Starter func() Starter
	// Failpoint, when armed, kills the process at a chosen instant (tests
	// only; see package failpoint).
	Failpoint *failpoint.Set
}

// Provider is what an operation needs of a running provider.
// *pluginhost.Plugin is one; unit tests use in-process fakes.
type Provider interface {
	Source() string
	Protocol() int
	Schema() *providers.GetSchemaResponse
	ValidateResource(ctx context.Context, req *providers.ValidateResourceRequest) (providers.Diagnostics, error)
	Read(ctx context.Context, req *providers.ReadRequest) (*providers.ReadResponse, error)
	Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error)
	Update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error)
	// Import reads a resource by id for a take-over: the provider's Import
	// when it has one, else Read by id.
	Import(ctx context.Context, req *providers.ImportRequest) (*providers.ImportResponse, error)
	// Delete is called by deleteResource alone.
	Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error)

	// The optional abilities are asked about, never found by asserting a
	// type. ReadsMany says whether ReadMany is one call (else it reads one
	// after the other); ValidatesMany the same for ValidateMany.
	ReadsMany() bool
	ReadMany(ctx context.Context, reqs []*providers.ReadRequest) ([]pluginhost.ReadResult, error)
	ValidatesMany() bool
	ValidateMany(ctx context.Context, reqs []*providers.ValidateResourceRequest) ([]pluginhost.ValidateResult, error)
	// Release gives up a claim; a provider that cannot answers an error
	// that wraps providers.ErrReleaseUnsupported.
	Release(ctx context.Context, req *providers.ReleaseRequest) (*providers.ReleaseResponse, error)
}

// Starter starts the providers of one command and stops them all on Close.
type Starter interface {
	Start(ctx context.Context, cfg pluginhost.Config) (Provider, error)
	Close()
}

// plugins starts real plugin processes.
type plugins struct{ h *pluginhost.Host }

func (p plugins) Start(ctx context.Context, cfg pluginhost.Config) (Provider, error) {
	pl, err := p.h.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return pl, nil
}

func (p plugins) Close() { p.h.Close() }

func (o *Options) starter() Starter {
	if o.Starter != nil {
		return o.Starter()
	}
	return plugins{pluginhost.New(o.HostOptions())}
}

func (o *Options) HostOptions() pluginhost.Options {
	return pluginhost.Options{Dirs: o.PluginDirs, Logger: o.Logger, StartTimeout: o.StartTimeout, CallTimeout: o.CallTimeout,
		CopyDir: PluginCopyDir(o.StateDir)}
}

// PluginCopyDir is the folder under the state folder where the verified
// copies of plugins pinned by bulwark.lock run from (each command in a
// private folder of its own, removed when it ends): not the system temp
// folder, which is often mounted noexec. Its name is no stack's.
func PluginCopyDir(stateDir string) string {
	if stateDir == "" {
		stateDir = ".bulwark"
	}
	return filepath.Join(stateDir, ".plugins")
}

// Defaults fills in what o leaves unset (the state folder, the clock, the
// parallelism, the revisions kept, a reporter and a redactor).
func (o *Options) Defaults() {
	if o.StateDir == "" {
		o.StateDir = ".bulwark"
	}
	if o.Reporter == nil {
		o.Reporter = NopReporter{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.KeepRevisions <= 0 {
		o.KeepRevisions = DefaultKeepRevisions
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 10
	}
	if o.Redactor == nil {
		o.Redactor = secrets.NewRedactor()
	}
}

// StackDir is the folder of a stack's state, journal and lock.
func StackDir(stateDir, stack string) string {
	if stateDir == "" {
		stateDir = ".bulwark"
	}
	return filepath.Join(stateDir, stack)
}

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
	opts    Options
	sp      *spec.Spec
	dir     string // the stack's folder under StateDir (the file backend's, and the default data folders')
	be      storage.Backend
	store   *store         // nil in a read-only session (inspect)
	holder  storage.Holder // who this session took the lock as
	jr      engine.Journal
	host    Starter
	plugins map[string]Provider
	opID    string
	dataDir string // providers' data folders live under it
	eng     *engine.Engine
	prog    *progress
	// inherited are the steps an interrupted earlier run of the operation
	// being resumed executed; its rollback undoes them too.
	inherited []*engine.Step
	lineage   string     // the stack's lineage (see stackLineage)
	forgotten []string   // keys this stack gave up (state forget)
	opType    string     // the operation a converge runs, for its refusals
	saved     *SavedPlan // the saved plan a converge carries out (apply FILE), or nil
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
	pre     preflight // what the pre-flight reads saw (checkRead)
	// restored: the resource names of the revision a failed operation's
	// rollback returns to (see retainIfLacking).
	restored restoredSet
}

// Backend opens the stack's storage: Options.Open on Options.StateURL, or
// the file backend on the stack's folder under StateDir.
func (o *Options) Backend(ctx context.Context, stack string, sl state.Sealing) (storage.Backend, error) {
	so := storage.Options{Stack: stack, Sealing: sl, Now: o.Now}
	if o.Open != nil && o.StateURL != "" {
		return o.Open(ctx, o.StateURL, so)
	}
	return filestore.New(StackDir(o.StateDir, stack), so), nil
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
	s.holder = storage.Holder{Op: s.opID, PID: os.Getpid(), Host: host, Since: opts.Now().UTC()}
	w, err := lockWait(ctx, be, s.holder, sp.Stack, opts)
	if err != nil {
		be.Close()
		return nil, err
	}
	s.store = &store{be: be, w: w, fp: opts.Failpoint, red: opts.Redactor, warn: opts.Reporter.Note}
	if h := w.Stale(); h != nil {
		opts.Reporter.Note(fmt.Sprintf("note: took over a stale lock left by %s", h))
	}
	if s.store.st, err = be.Load(ctx); err != nil {
		s.close()
		return nil, err
	}
	if err := state.CheckPrivate(s.store.st, opts.forgetting); err != nil {
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
		if u := Unfinished(recs); len(u) > 0 {
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
	_ = w.Checkpoint(ctx, opts.KeepOperations)
	s.host = opts.starter()
	s.prog = newProgress(opts.Reporter, opts.Events, opts.Redactor, opts.Now)
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
		s.store.mu.RLock()
		wrote := s.store.wrote
		s.store.mu.RUnlock()
		lost := s.store.lost() != nil // the lock is another's, or nobody's: nothing more is written
		if !lost && wrote {
			if err := s.store.w.Checkpoint(ctx, s.opts.KeepOperations); err == nil {
				s.opts.Failpoint.Hit("state")
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
		if err := s.store.w.Release(ctx); err != nil {
			s.warn(fmt.Sprintf("warning: could not release the lock of stack %s at %s: %v (a later command may find it held until the backend lets it go: the kernel, the server or the lease's end)", s.sp.Stack, s.be.Location(), err))
		}
	}
	pluginsGone()
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

// providerFor returns the source and config of a local provider name: from
// the spec when it declares it, else (a resource recorded in the state under
// a provider the spec no longer declares) the recorded source with its
// default config.
func (s *session) providerFor(name, recordedSource string) (string, map[string]any) {
	if p, ok := s.sp.Providers[name]; ok {
		return p.Source, p.Config
	}
	if recordedSource != "" {
		return recordedSource, nil
	}
	return name, nil
}

// readOnly reports whether the session only reads: one that holds no lock
// (inspect: plan, validate) never changes anything, so its providers are
// told to write nothing anywhere (no clean-up, no persisted counters).
func (s *session) readOnly() bool { return s.store == nil }

// startProviders starts the named local providers, each with its own data
// folder under the stack's folder.
func (s *session) startProviders(ctx context.Context, names []string, st *state.State) error {
	sources := map[string]string{}
	for _, r := range st.Resources {
		sources[r.Provider] = r.Source
	}
	sort.Strings(names)
	names = slices.Compact(names)
	var cfgs []pluginhost.Config
	for _, n := range names {
		if _, ok := s.plugins[n]; ok {
			continue
		}
		src, cfg := s.providerFor(n, sources[n])
		pc := pluginhost.Config{Name: n, Source: src, Config: cfg, DataDir: filepath.Join(s.dataRoot(), n), ReadOnly: s.readOnly()}
		// The data folders are made here, never through a link planted in
		// their place (the host's MkdirAll would follow it).
		// Nor through a stack folder that is a link (on a backend off this
		// machine the file backend, which refuses one, never looks at it).
		if err := nofollow.CheckDir(s.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("provider %s: data folder: %w", n, err)
		}
		var above []string
		for d := filepath.Dir(s.dataRoot()); s.dataDir == "" && len(above) < 2; d = filepath.Dir(d) {
			if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
				break
			}
			above = append(above, d)
		}
		if made, err := nofollow.Mkdir(s.dataRoot(), 0o700); err != nil {
			return fmt.Errorf("provider %s: data folder: %w", n, err)
		} else if made && s.dataDir == "" {
			s.freshData, s.freshDirs = s.dataRoot(), above
		}
		if _, err := nofollow.Mkdir(pc.DataDir, 0o700); err != nil {
			return fmt.Errorf("provider %s: data folder: %w", n, err)
		}
		if lf := s.opts.ProviderLock; lf != nil {
			e, ok := lf.Providers[src]
			if !ok {
				return &providerlock.NotPinnedError{Source: src, Path: s.opts.LockPath}
			}
			pc.SHA256 = e.SHA256
		}
		pc.Check = func(schema *providers.GetSchemaResponse) error { return s.checkProvider(n, schema) }
		cfgs = append(cfgs, pc)
	}
	// The processes start at once (each start is a fork, an exec and a
	// handshake); the first failure in name order is the one reported.
	started := make([]Provider, len(cfgs))
	err := forEach(ctx, len(cfgs), len(cfgs), func(ctx context.Context, i int) error {
		p, err := s.host.Start(ctx, cfgs[i])
		started[i] = p
		return err
	})
	if err != nil {
		return err
	}
	for i, pc := range cfgs {
		s.plugins[pc.Name] = failProvider{started[i], s.opts.Failpoint}
		s.learnSecrets(pc.Name, started[i].Schema(), st)
	}
	if s.store != nil {
		s.store.sensitiveOf = s.sensitiveOf
		if _, err := s.store.reseal(ctx); err != nil {
			return err
		}
	}
	return nil
}

// failProvider passes the "provider" failpoint after every mutation a
// provider returns from, before anything records its result.
type failProvider struct {
	Provider
	fp *failpoint.Set
}

func (p failProvider) Create(ctx context.Context, req *providers.CreateRequest) (*providers.CreateResponse, error) {
	resp, err := p.Provider.Create(ctx, req)
	p.fp.Hit("provider")
	return resp, err
}

func (p failProvider) Update(ctx context.Context, req *providers.UpdateRequest) (*providers.UpdateResponse, error) {
	resp, err := p.Provider.Update(ctx, req)
	p.fp.Hit("provider")
	return resp, err
}

func (p failProvider) Delete(ctx context.Context, req *providers.DeleteRequest) (*providers.DeleteResponse, error) {
	resp, err := p.Provider.Delete(ctx, req)
	p.fp.Hit("provider")
	return resp, err
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

func (s *session) schemas() map[string]*providers.GetSchemaResponse {
	out := map[string]*providers.GetSchemaResponse{}
	for n, p := range s.plugins {
		out[n] = p.Schema()
	}
	return out
}

// validate checks the spec against the providers' schemas and asks each
// provider to validate its resources; every problem is positioned in the spec.
func (s *session) validate(ctx context.Context) error {
	if err := s.sp.CheckSchemas(s.schemas()); err != nil {
		return err
	}
	// Up to Parallelism calls at once (a provider's every call may take a
	// round trip): the resources of a provider that offers ValidateMany in
	// batches, the others one call each (inBatches). The problems keep the
	// spec's order.
	n := len(s.sp.Resources)
	found := make([]spec.Problems, n)
	reqs := make([]*providers.ValidateResourceRequest, n)
	unknowns := make([]map[string]bool, n)
	for i, r := range s.sp.Resources {
		// A value that references another resource is not known before
		// apply: the provider sees the config without it (CheckSchemas
		// type-checked it), and a "missing" complaint about it is moot.
		cfg, unknown := knownConfig(r.Config)
		reqs[i], unknowns[i] = &providers.ValidateResourceRequest{Type: r.Type, Name: r.Name, Config: cfg}, unknown
	}
	report := func(i int, ds providers.Diagnostics) {
		r := s.sp.Resources[i]
		for _, d := range ds {
			if d.Severity == providers.SeverityWarning || (len(d.AttributePath) > 0 && unknowns[i][d.AttributePath[0]]) {
				continue
			}
			pos := r.Pos
			if len(d.AttributePath) > 0 {
				if fp, ok := r.FieldPos["config."+d.AttributePath[0]]; ok {
					pos = fp
				} else if fp, ok := r.FieldPos["config"]; ok {
					pos = fp
				}
			}
			found[i] = append(found[i], spec.Problem{File: s.sp.File, Pos: pos, Msg: fmt.Sprintf("resource %q: %s", r.Name, d.Error())})
		}
	}
	if err := s.inBatches(ctx, n,
		func(i int) string { return s.sp.Resources[i].Provider },
		Provider.ValidatesMany,
		func(ctx context.Context, i int) error {
			ds, err := s.plugins[s.sp.Resources[i].Provider].ValidateResource(ctx, reqs[i])
			if err != nil {
				return err
			}
			report(i, ds)
			return nil
		},
		func(ctx context.Context, p Provider, chunk []int) error {
			batch := make([]*providers.ValidateResourceRequest, len(chunk))
			for k, i := range chunk {
				batch[k] = reqs[i]
			}
			res, err := p.ValidateMany(ctx, batch)
			if err != nil {
				return err
			}
			for k, i := range chunk {
				if res[k].Err != nil {
					return res[k].Err
				}
				report(i, res[k].Diagnostics)
			}
			return nil
		}); err != nil {
		return err
	}
	var problems spec.Problems
	for _, ps := range found {
		problems = append(problems, ps...)
	}
	if len(problems) > 0 {
		return problems
	}
	return nil
}

// knownConfig returns cfg without the keys whose values reference
// resources (still *spec.Template), and those keys; cfg itself when it has
// none.
func knownConfig(cfg map[string]any) (map[string]any, map[string]bool) {
	var unknown map[string]bool
	for k, v := range cfg {
		if !resolve.Known(v) {
			if unknown == nil {
				unknown = map[string]bool{}
			}
			unknown[k] = true
		}
	}
	if unknown == nil {
		return cfg, nil
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if !unknown[k] {
			out[k] = v
		}
	}
	return out, unknown
}

// Validate checks a spec against its providers' schemas without mutating
// anything and without taking the lock.
func Validate(ctx context.Context, sp *spec.Spec, opts Options) error {
	s, _, done, err := inspect(ctx, sp, opts, true)
	if err != nil {
		return err
	}
	defer done()
	return s.validate(ctx)
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
	load := s.loadOpened
	if scratch {
		load = func() (*state.State, error) { return LoadState(sp, opts) }
	}
	st, err := load()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := state.CheckPrivate(st); err != nil {
		return nil, nil, nil, fmt.Errorf("load state: %w", err)
	}
	// The backend settled the lineage from the state and the journal
	// (refusing the two of different ones).
	s.lineage = st.Lineage
	s.forgotten = st.Forgotten
	// Progress on a terminal only (the live line while it reads): a
	// read-only command writes no event and no other line.
	s.prog = newProgress(opts.Reporter, nil, opts.Redactor, opts.Now)
	s.host = opts.starter()
	cleanup := []func(){s.host.Close}
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

// providersFor lists the local providers a converge of sp over st talks to:
// the spec's, and the ones that made recorded resources the spec drops or
// moves to another provider (they are deleted through them).
func providersFor(sp *spec.Spec, st *state.State) []string {
	names := sp.ProvidersUsed()
	provider := make(map[string]string, len(sp.Resources)) // Spec.Resource walks the list
	for _, r := range sp.Resources {
		if _, dup := provider[r.Name]; !dup {
			provider[r.Name] = r.Provider
		}
	}
	for _, n := range st.Names() {
		if p, ok := provider[n]; !ok || p != st.Resources[n].Provider {
			names = append(names, st.Resources[n].Provider)
		}
	}
	return names
}
