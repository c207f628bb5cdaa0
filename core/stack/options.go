package stack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
	"github.com/hashicorp/go-hclog"
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
	// savedTerraform: source → the sha256 of the executable of each
	// Terraform provider a saved plan being applied read reality through:
	// the apply runs those very bytes (see SavedPlan.providerPins).
	savedTerraform map[string]string
	// forgetting is the resource a state forget drops: its private data
	// may be damaged (forgetting it is the way out), nothing reads it.
	forgetting string
	// importPast is the unfinished operation an import may run beside:
	// one whose Create of the resource imported is unknown (see
	// UnknownCreateError), which the import settles.
	importPast string
	// rotating: a `secrets rotate`, whose --secrets-provider is the one it
	// moves to, not a mismatch with the recorded one.
	rotating bool
	// planSecrets is the secrets provider a saved plan of a stack's first
	// apply chose: applying it makes it the stack's.
	planSecrets *secrets.Config
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
	// ClaimsLock, when set, tries to take StateURL's backend's claims lock
	// (storage.ClaimsLock), which an import of a provider that cannot
	// stamp a claim holds from its check of the other stacks to its
	// record. The file backend under StateDir needs none (its state
	// folder's .claims is locked); a remote backend without one refuses
	// such imports.
	ClaimsLock storage.ClaimsLocker
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
	// Throttled, when set, is told at the end of the operation what each
	// provider that throttled calls made the plugin host do (see
	// pluginhost.Options.Throttled).
	Throttled func(provider string, t pluginhost.Throttling)
	// PrepareHeap, when set, is run (in a goroutine of its own, beside the
	// plugins' start) when a command has much work ahead: the CLI prepares
	// its heap for it, once per process (sdk/hugeheap). The plugins are
	// asked to prepare theirs either way (pluginhost.Config.HugeHeap).
	PrepareHeap func()
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
	// ReviewRefresh is Review for apply --refresh-only: shown what the
	// refresh would record; false cancels it (nothing was changed).
	ReviewRefresh func(*RefreshPreview) bool
}

// DefaultReadParallelism is the default ReadParallelism: a plan of a few
// hundred resources on a provider without batch calls (every real cloud's,
// every Terraform provider) reads in one round trip, not one per ten
// resources. Pulumi runs its steps unbounded by default; a provider whose
// API cannot take this many answers "throttled", and the plugin host lowers
// that provider's concurrency (see core/pluginhost).
const DefaultReadParallelism = 256

// RunOptions say how this one run behaves.
type RunOptions struct {
	Now func() time.Time
	// Parallelism is the most writes (Create, Update, Delete) in flight at
	// once (default 10): --parallelism, as Terraform's -parallelism.
	Parallelism int
	// ReadParallelism is the most reads and validations in flight at once
	// (default DefaultReadParallelism, and never fewer than Parallelism):
	// --read-parallelism. Reads
	// change nothing and a cloud's read quotas are far larger than its
	// write quotas, so a plan's reads, a teardown's ownership check and
	// the Verify after each write are not held to the writes' limit; a
	// provider that answers "throttled" lowers the concurrency of its own
	// calls whatever these say.
	ReadParallelism int
	// SimulateFailure names a resource whose Execute fails in this run.
	SimulateFailure string
	// Replace names the resources (addresses) this run replaces even with
	// no change, and whose replace it consents to when they are durable
	// (apply and plan --replace ADDRESS, repeatable).
	Replace []string
	// Targets limits the run to these addresses (--target, repeatable):
	// NAME[KEY], NAME for every instance, CALL.NAME, or CALL for a module
	// call's every resource. A plan or an apply covers them and what they
	// depend on, a teardown them and what depends on them; nothing else is
	// read, changed or deleted (see target.go).
	Targets []string
	// NotCreated names resources whose Create an interrupted operation
	// left unknown (UnknownCreateError) and of which a person says nothing
	// was made (resume --not-created NAME, repeatable): the resume
	// journals their word, then creates them again.
	NotCreated []string
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

// prepareHeap runs PrepareHeap, if set, in a goroutine.
func (o *Options) prepareHeap() {
	if o.PrepareHeap != nil {
		go o.PrepareHeap()
	}
}

func (o *Options) starter() Starter {
	if o.Starter != nil {
		return o.Starter()
	}
	return plugins{pluginhost.New(o.HostOptions())}
}

func (o *Options) HostOptions() pluginhost.Options {
	return pluginhost.Options{Dirs: o.PluginDirs, Logger: o.Logger, StartTimeout: o.StartTimeout, CallTimeout: o.CallTimeout,
		CopyDir: PluginCopyDir(o.StateDir), Throttled: o.Throttled}
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
	if o.ReadParallelism <= 0 {
		o.ReadParallelism = max(DefaultReadParallelism, o.Parallelism)
	}
	if o.Redactor == nil {
		o.Redactor = secrets.NewRedactor()
	}
}

// ErrNoStackName is returned for a spec whose stack name (one that uses
// variables) was not resolved (resolve.Expand, resolve.StackName): no
// state is opened under a name that may be another environment's.
var ErrNoStackName = errors.New("the spec's stack name is not resolved: it uses variables, and their values were not read")

// StackDir is the folder of a stack's state, journal and lock.
func StackDir(stateDir, stack string) string {
	if stateDir == "" {
		stateDir = ".bulwark"
	}
	return filepath.Join(stateDir, stack)
}

// Backend opens the stack's storage: Options.Open on Options.StateURL, or
// the file backend on the stack's folder under StateDir.
func (o *Options) Backend(ctx context.Context, stack string, sl state.Sealing) (storage.Backend, error) {
	if stack == "" {
		return nil, ErrNoStackName
	}
	if !spec.ValidStackName(stack) {
		// An expression's text (validate without values names the stack
		// by it), or anything else that is not a name: never a folder,
		// schema row or key prefix.
		return nil, fmt.Errorf("%w: %q is not a stack name", ErrNoStackName, stack)
	}
	so := storage.Options{Stack: stack, Sealing: sl, Now: o.Now}
	if o.Open != nil && o.StateURL != "" {
		return o.Open(ctx, o.StateURL, so)
	}
	return filestore.New(StackDir(o.StateDir, stack), so), nil
}
