package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/backends/awskms"
	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/progressview"
	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/nofollow"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/sdk/hugeheap"
)

// options builds the core's options from the flags, and from the
// bulwark.lock beside the spec when there is one.
func (c *cli) options(sp *spec.Spec) (stack.Options, func(), error) {
	if c.keepOperations < 1 {
		return stack.Options{}, nil, fmt.Errorf("--keep-operations %d: must be at least 1", c.keepOperations)
	}
	if c.keepRevisions < 1 {
		return stack.Options{}, nil, fmt.Errorf("--keep-revisions %d: must be at least 1 (the current revision is always kept)", c.keepRevisions)
	}
	exe, _ := os.Executable()
	opts := stack.Options{
		StorageOptions: c.stateOptions().StorageOptions,
		PluginOptions: stack.PluginOptions{
			PluginDirs:   pluginhost.LookupDirs(c.pluginDir, os.Getenv("BULWARK_PLUGIN_DIR"), exe),
			StartTimeout: c.startTimeout,
			CallTimeout:  c.callTimeout,
		},
		SecretOptions: stack.SecretOptions{Secrets: c.secretsSource(), Redactor: c.red},
	}
	opts.KeepRevisions, opts.KeepOperations = c.keepRevisions, c.keepOperations
	if sp != nil {
		opts.LockPath = providerlock.PathFor(sp.File)
		lf, err := providerlock.Read(opts.LockPath)
		if err != nil {
			return opts, nil, err
		}
		opts.ProviderLock = lf
	}
	if lvl := os.Getenv("BULWARK_LOG"); lvl != "" {
		opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "bulwark", Output: c.red.Writer(c.stderr), Level: hclog.LevelFromString(lvl)})
	}
	opts.Reporter = c.progressView(true)
	opts.Throttled = c.throttled
	opts.PrepareHeap = c.prepareHeap
	fp, err := failpoint.FromEnv()
	if err != nil {
		return opts, nil, err
	}
	opts.Failpoint = fp
	closeFn := func() {}
	// Events are JSON lines: their error is masked where it is made (the
	// operation's progress), never by rewriting a line as text.
	if c.eventsFile != "" {
		if err := c.eventsOutsideState(c.eventsFile, opts); err != nil {
			return opts, nil, err
		}
		f, err := events.OpenFile(c.eventsFile)
		if err != nil {
			return opts, nil, err
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if n, err := nofollow.Links(f); err == nil && n > 1 {
				// Another name of the same file could be a journal's or a
				// state's: appended to, it would be corrupted.
				f.Close()
				return opts, nil, fmt.Errorf("--events %s: the file has %d names (hard links): bulwark appends events only to a file of its own", c.eventsFile, n)
			}
		}
		opts.Events = events.NewWriter(f, nil)
		c.eventsTo = f
		closeFn = func() { f.Close() }
	} else if !c.terminal(c.stderr) {
		// A machine reads stderr (CI, a pipe, a file). On a terminal a
		// person reads it, beside the progress on stdout: JSON lines there
		// would only break up the live line, so they go nowhere unless
		// --events names a file (as Terraform keeps its machine output
		// behind -json and its log behind TF_LOG).
		opts.Events = events.NewWriter(c.stderr, nil)
	}
	return opts, closeFn, nil
}

// eventsOutsideState refuses an events file inside the state folder
// (--state-dir, or a file:// --state's folder): its stacks' journals,
// states and providers' data folders are bulwark's own, and events appended
// to a journal would corrupt it. The path is compared once every link and
// ".." in the folders above it is resolved, so no other spelling of the
// same place gets through; the file itself is opened without following a
// link (events.OpenFile).
func (c *cli) eventsOutsideState(path string, opts stack.Options) error {
	dirs := []string{opts.StateDir}
	if opts.StateURL != "" && backends.Scheme(opts.StateURL) == "file" {
		if d, err := fileDir(opts.StateURL); err == nil {
			dirs = append(dirs, d)
		}
	}
	at, err := resolvedPath(path)
	if err != nil {
		return fmt.Errorf("--events %s: %w", path, err)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		dir, err := resolvedPath(d)
		if err != nil {
			return fmt.Errorf("--events %s: %w", path, err)
		}
		if rel, err := filepath.Rel(dir, at); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("--events %s: the file is inside the state folder %s, whose journals and states are bulwark's own (events appended there would corrupt them): name a file outside it", path, d)
		}
	}
	return nil
}

// resolvedPath is path made absolute with every symbolic link in it
// resolved, a dangling one included (it names where a file made through it
// would go); what does not exist is joined on as written, cleaned.
func resolvedPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return resolveLinks(abs, 0)
}

func resolveLinks(p string, depth int) (string, error) {
	if depth > 40 {
		return "", fmt.Errorf("%s: too many levels of symbolic links", p)
	}
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		to, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(p), to)
		}
		return resolveLinks(filepath.Clean(to), depth+1)
	case err == nil:
		return filepath.EvalSymlinks(p)
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	dir, err := resolveLinks(parent, depth+1)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(p)), nil
}

// progressView is the view core reports an operation's progress to, on
// stdout (masked). When stdout is a terminal a person is watching: colours
// unless NO_COLOR (https://no-color.org) is set to anything, and, when
// live, the status line of what is running or being read (a --json command
// passes live false: stdout carries the JSON alone).
func (c *cli) progressView(live bool) stack.Reporter {
	return progressview.New(c.red.Writer(c.stdout), c.color(), live && c.terminal(c.stdout), nil)
}

// streamEvents makes an operation's --json output: its lifecycle events, one
// JSON object a line, on stdout, operation start and end lines included,
// and nothing else there (no progress, no report: the end line says how it
// ended, and errors still go to stderr). The --events file, when named,
// gets them too; stderr no longer does. Each line is redacted where it is
// made and again on its way out.
func (c *cli) streamEvents(opts *stack.Options) {
	c.streaming = true
	var w io.Writer = &endWatch{w: c.red.Writer(c.stdout), ended: &c.streamEnded}
	if c.eventsTo != nil {
		w = io.MultiWriter(w, c.eventsTo)
	}
	opts.Events = events.NewWriter(w, nil)
	opts.Reporter = stack.NopReporter{}
}

// streamOperation prepares a mutating command's --json (rollback, resume;
// apply has its own, for saved plans): the event stream on stdout and no
// question, so on a terminal it needs --yes, as apply --json does.
func (c *cli) streamOperation(opts *stack.Options, name string, yes bool) error {
	if !yes && c.terminal(c.stdin) {
		return fmt.Errorf("%s --json on a terminal needs --yes (stdout carries only JSON: no plan is shown and nothing asks)", name)
	}
	c.streamEvents(opts)
	return nil
}

// secretsSource says where the key comes from: $BULWARK_SECRETS_KEY, else
// --secrets-key-file, else the default key file in the user's config
// folder (created, and said so on stderr, the first time a state needs it);
// never a file under the state folder.
func (c *cli) secretsSource() *secrets.Source {
	def, _ := secrets.DefaultKeyFile()
	pass, next := os.Getenv(secrets.EnvPassphrase), os.Getenv(secrets.EnvNewPassphrase)
	// The passphrases are secrets of this invocation: masked in any text.
	c.red.Add(pass, next, os.Getenv(secrets.EnvNewKey))
	return &secrets.Source{
		Env: os.Getenv(secrets.EnvKey), File: c.secretsKeyFile, Default: def,
		Notice: c.stderr, Forbidden: []string{c.stateDir},
		Passphrase: pass, NewPassphrase: next, Provider: c.secretsProvider, KMS: awskms.Open,
		NewKey: os.Getenv(secrets.EnvNewKey),
	}
}

// load reads the spec at path (with --provider applied) and builds the
// options for it; done releases what the options opened.
func (c *cli) load(path, provider string) (*spec.Spec, stack.Options, func(), error) {
	sp, err := c.loadSpec(path, provider)
	if err != nil {
		return nil, stack.Options{}, nil, err
	}
	opts, done, err := c.options(sp)
	if err != nil {
		return nil, stack.Options{}, nil, err
	}
	return sp, opts, done, nil
}

// printJSON prints a --json document (one of package jsonview's types):
// indented, with no HTML escaping, and through the Redactor, so no
// sensitive value this invocation has seen is printed in clear.
func (c *cli) printJSON(v any) error {
	return jsonview.Write(c.red.Writer(c.stdout), v)
}

// prepareHeap prepares this process's heap for a command with much work
// ahead (core/stack calls it; sdk/hugeheap says why), once.
func (c *cli) prepareHeap() {
	c.heapPrepared.Do(func() { hugeheap.Prepare(hugeheap.Size) })
}

// throttled says, on stderr, once a command's providers are closed, how a
// provider that answered calls throttled (its API's rate limit) was backed
// off: none of those calls failed a step, but the run took longer for it.
func (c *cli) throttled(provider string, t pluginhost.Throttling) {
	fmt.Fprintf(c.stderr, "provider %s throttled: %d calls retried, concurrency lowered to %d\n", provider, t.Retried, t.Lowest)
}
