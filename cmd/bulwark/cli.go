package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/events"
	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/pluginhost"
	"github.com/bulwark-iac/bulwark/core/providerlock"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// cli holds one invocation's flags and streams; nothing is global, so the
// tests can run bulwark in-process.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	pluginDir, stateDir, eventsFile string
	secretsKeyFile                  string
	startTimeout, callTimeout       time.Duration
	keepRevisions, keepOperations   int
	exit                            int
	// red holds the sensitive values this invocation has seen; everything
	// it prints about errors goes through it.
	red *secrets.Redactor

	// stop is closed by the first interrupt of a mutating command (see
	// interrupts); graceful says a mutating command runs.
	stop     chan struct{}
	graceful atomic.Bool
	specPath atomic.Value // string: the spec of the command, for messages
}

// run is bulwark's whole life: parse flags, call core, map the outcome to
// an exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, red: secrets.NewRedactor(), stop: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go c.interrupts(sigs, done, cancel, os.Exit)
	root := c.commands()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		c.fail(err)
		if c.exit == 0 {
			c.exit = stack.ExitError
		}
	}
	return c.exit
}

// interruptGrace is how long a second interrupt waits for the command to
// wind down (provider calls are cancelled at once) before bulwark exits
// anyway: the journal makes stopping at any instant safe.
const interruptGrace = 10 * time.Second

// interrupts handles Ctrl-C and SIGTERM. For a mutating command the first
// one is graceful: no step starts, the running ones finish (each call
// within its timeout), and what ran is rolled back. The second stops
// waiting: provider calls are cancelled, and whatever is left stays in the
// journal for `bulwark resume`. A read-only command stops at the first.
func (c *cli) interrupts(sigs <-chan os.Signal, done <-chan struct{}, cancel context.CancelFunc, exit func(int)) {
	resume := func() string {
		if p, _ := c.specPath.Load().(string); p != "" {
			return "`bulwark resume " + p + "`"
		}
		return "`bulwark resume SPEC`"
	}
	select {
	case <-done:
		return
	case sig := <-sigs:
		if !c.graceful.Load() {
			// Nothing to wind down (a read-only command, or a question
			// not yet answered): stop now, and exit if that takes long.
			cancel()
			select {
			case <-done:
			case <-sigs:
				exit(stack.ExitError)
			case <-time.After(interruptGrace / 5):
				fmt.Fprintf(c.stderr, "bulwark: %v: exiting\n", sig)
				exit(stack.ExitError)
			}
			return
		}
		close(c.stop)
		fmt.Fprintf(c.stderr, "bulwark: %v: no new step starts; the running ones finish, then what ran is rolled back (interrupt again to stop waiting, then run %s)\n", sig, resume())
	}
	select {
	case <-done:
		return
	case sig := <-sigs:
		cancel()
		fmt.Fprintf(c.stderr, "bulwark: %v again: no longer waiting; the operation stays unfinished in the journal: run %s to finish it\n", sig, resume())
	}
	select {
	case <-done:
	case <-sigs:
		exit(stack.ExitError)
	case <-time.After(interruptGrace):
		fmt.Fprintf(c.stderr, "bulwark: still winding down after %v; exiting (run %s)\n", interruptGrace, resume())
		exit(stack.ExitError)
	}
}

// mutating marks the command as one whose first interrupt is graceful and
// returns the channel that interrupt closes.
func (c *cli) mutating(specPath string) <-chan struct{} {
	c.specPath.Store(specPath)
	c.graceful.Store(true)
	return c.stop
}

// fail prints err for a person and sets the exit code it means.
func (c *cli) fail(err error) {
	var problems spec.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(c.stderr, c.red.Redact(p.Error()))
		}
		fmt.Fprintf(c.stderr, "bulwark: %d problem(s) in the spec; nothing was changed\n", len(problems))
	} else {
		fmt.Fprintf(c.stderr, "bulwark: %v\n", c.red.Error(err))
	}
	c.exit = stack.ExitCode(nil, err)
}

func (c *cli) commands() *cobra.Command {
	root := &cobra.Command{
		Use:           "bulwark",
		Short:         "Provision a stack from a declarative spec, safely",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&c.pluginDir, "plugin-dir", "", "look for provider plugins in `DIR` first")
	root.PersistentFlags().StringVar(&c.stateDir, "state-dir", ".bulwark", "keep the stacks under `DIR`, one folder per stack (state, journal, lock)")
	root.PersistentFlags().StringVar(&c.eventsFile, "events", "", "write lifecycle events (JSON lines) to `FILE` (default: stderr, unless it is a terminal)")
	root.PersistentFlags().StringVar(&c.secretsKeyFile, "secrets-key-file", "", "read the key that seals sensitive values in the state from `FILE` (base64 of 32 bytes; default: $"+secrets.EnvKey+", else a key file bulwark creates in your config folder)")
	root.PersistentFlags().DurationVar(&c.startTimeout, "plugin-start-timeout", 20*time.Second, "how long a plugin may take to complete its handshake")
	root.PersistentFlags().DurationVar(&c.callTimeout, "plugin-call-timeout", 10*time.Minute, "how long one call to a plugin may take before it is abandoned")
	root.PersistentFlags().IntVar(&c.keepRevisions, "keep-revisions", stack.DefaultKeepRevisions, "keep the last `N` revisions of each stack in its state (older ones are pruned; the current one never is)")
	root.PersistentFlags().IntVar(&c.keepOperations, "keep-operations", journal.DefaultKeepOperations, "keep every journal record of the last `N` operations (older finished ones are compacted to one line each)")
	root.AddCommand(c.validateCmd(), c.planCmd(), c.applyCmd(), c.teardownCmd(), c.rollbackCmd(), c.resumeCmd(), c.statusCmd(), c.doctorCmd(),
		c.historyCmd(), c.ackCmd(), c.graphCmd(), c.providersCmd(), c.versionCmd(), c.importCmd(), c.stateCmd())
	setExamples(root)
	return root
}

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
		StateDir:       c.stateDir,
		PluginDirs:     pluginhost.LookupDirs(c.pluginDir, os.Getenv("BULWARK_PLUGIN_DIR"), exe),
		Out:            c.red.Writer(c.stdout),
		StartTimeout:   c.startTimeout,
		CallTimeout:    c.callTimeout,
		KeepRevisions:  c.keepRevisions,
		KeepOperations: c.keepOperations,
		Secrets:        c.secretsSource(),
		Redactor:       c.red,
	}
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
	if isTerminal(c.stdout) {
		// A person is watching: live progress, and colours unless NO_COLOR
		// (https://no-color.org) is set to anything.
		opts.Live = true
		opts.Color = os.Getenv("NO_COLOR") == ""
	}
	fp, err := failpoint.Parse(os.Getenv(failpoint.EnvVar))
	if err != nil {
		return opts, nil, err
	}
	opts.Failpoint = fp
	closeFn := func() {}
	// Events are JSON lines: their error is masked where it is made (the
	// operation's progress), never by rewriting a line as text.
	if c.eventsFile != "" {
		f, err := events.OpenFile(c.eventsFile)
		if err != nil {
			return opts, nil, err
		}
		opts.Events = events.NewWriter(f, nil)
		closeFn = func() { f.Close() }
	} else if !isTerminal(c.stderr) {
		// A machine reads stderr (CI, a pipe, a file). On a terminal a
		// person reads it, beside the progress on stdout: JSON lines there
		// would only break up the live line, so they go nowhere unless
		// --events names a file (as Terraform keeps its machine output
		// behind -json and its log behind TF_LOG).
		opts.Events = events.NewWriter(c.stderr, nil)
	}
	return opts, closeFn, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// secretsSource says where the key comes from: $BULWARK_SECRETS_KEY, else
// --secrets-key-file, else the default key file in the user's config
// folder (created, and said so on stderr, the first time a state needs it);
// never a file under the state folder.
func (c *cli) secretsSource() *secrets.Source {
	def, _ := secrets.DefaultKeyFile()
	return &secrets.Source{
		Env: os.Getenv(secrets.EnvKey), File: c.secretsKeyFile, Default: def,
		Notice: c.stderr, Forbidden: []string{c.stateDir},
	}
}

// load reads the spec at path (with --provider applied) and builds the
// options for it; done releases what the options opened.
func (c *cli) load(path, provider string) (*spec.Spec, stack.Options, func(), error) {
	sp, err := loadSpec(path, provider)
	if err != nil {
		return nil, stack.Options{}, nil, err
	}
	opts, done, err := c.options(sp)
	if err != nil {
		return nil, stack.Options{}, nil, err
	}
	return sp, opts, done, nil
}

// printJSON prints v indented, for --json, with no HTML escaping.
func (c *cli) printJSON(v any) error {
	return writeJSON(c.stdout, v)
}

func loadSpec(path, provider string) (*spec.Spec, error) {
	sp, err := spec.Load(path)
	if err != nil {
		return nil, err
	}
	if provider != "" {
		sp = sp.WithDefaultProvider(provider)
	}
	return sp, nil
}

func (c *cli) validateCmd() *cobra.Command {
	var provider string
	cmd := &cobra.Command{
		Use:   "validate SPEC",
		Short: "Check a spec: its structure, then against the providers' schemas",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			if err := stack.Validate(cmd.Context(), sp, opts); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s: valid (stack %s, %d resources)\n", args[0], sp.Stack, len(sp.Resources))
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none")
	return cmd
}

func (c *cli) applyCmd() *cobra.Command {
	var provider, simulate string
	var parallelism int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "apply SPEC",
		Short: "Converge the stack to the spec; a failure rolls back under the protection ladder",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			if dryRun {
				return c.plan(cmd.Context(), sp, opts, false, false)
			}
			if parallelism < 1 {
				return fmt.Errorf("--parallelism %d: must be at least 1", parallelism)
			}
			if simulate != "" {
				if _, ok := sp.Resource(simulate); !ok {
					return fmt.Errorf("--simulate-failure %s: no such resource in %s", simulate, args[0])
				}
			}
			opts.Parallelism, opts.SimulateFailure = parallelism, simulate
			opts.Stop = c.mutating(args[0])
			res, err := stack.Apply(cmd.Context(), sp, opts)
			if err != nil {
				return err
			}
			c.report(res, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none (a provider the spec does not declare runs with its default config)")
	cmd.Flags().StringVar(&simulate, "simulate-failure", "", "make the Execute of `RESOURCE` fail in this run (demos and tests)")
	cmd.Flags().IntVar(&parallelism, "parallelism", 10, "work on at most `N` independent resources at once")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "run every Check and no Execute: the same as bulwark plan")
	return cmd
}

// report prints how an operation ended and sets the exit code.
func (c *cli) report(res *stack.Result, specPath string) {
	c.exit = stack.ExitCode(res, nil)
	r := res.Run
	switch res.Outcome {
	case engine.Succeeded:
		fmt.Fprintf(c.stdout, "%s complete: %d changed, %d already in place. Reality matches the spec.\n",
			title(res.Type), res.Changed, res.Unchanged)
	case engine.Compensated:
		switch {
		case r.Interrupted:
			fmt.Fprintf(c.stdout, "%s was interrupted and was rolled back.\n", title(res.Type))
		case len(r.Failed) > 0:
			fmt.Fprintf(c.stdout, "%s failed at %s and was rolled back.\n", title(res.Type), strings.Join(r.Failed, ", "))
		default:
			fmt.Fprintf(c.stdout, "%s %s failed earlier; its rollback is now complete.\n", title(res.Type), res.Op)
		}
		if len(res.Preserved) > 0 {
			fmt.Fprintf(c.stdout, "Kept, because they hold data: %s (still recorded in the state).\n", strings.Join(res.Preserved, ", "))
		}
		c.errorLines(res.Err)
	case engine.RollbackIncomplete:
		what := "failed"
		if r.Interrupted || errors.Is(res.Err, engine.ErrInterrupted) {
			what = "was interrupted"
		}
		fmt.Fprintf(c.stdout, "%s %s and its rollback is incomplete. Run `bulwark resume %s` to retry it.\n", title(res.Type), what, specPath)
		c.errorLines(res.Err)
	case engine.NeedsIntervention:
		fmt.Fprintf(c.stdout, "%s stopped: %s failed and needs a person. Nothing was undone.\nFix it, then run `bulwark ack %s`.\n",
			title(res.Type), strings.Join(r.Failed, ", "), res.Op)
		c.errorLines(res.Err)
	case engine.Unfinished:
		fmt.Fprintf(c.stdout, "%s %s: its outcome (%s) could not be recorded, so it is unfinished. Run `bulwark resume %s` to finish it.\n",
			title(res.Type), res.Op, r.Reached, specPath)
		c.errorLines(res.Err)
	default:
		switch {
		case res.ChangedNothing():
			// Failed before any resource step ran (an update's own verify,
			// say, when a plugin died): no policy kept anything back.
			fmt.Fprintf(c.stdout, "%s failed at %s before changing anything: nothing to roll back.\n", title(res.Type), strings.Join(r.Failed, ", "))
		default:
			fmt.Fprintf(c.stdout, "%s failed: %s (not rolled back: on_failure policy).\n", title(res.Type), strings.Join(r.Failed, ", "))
		}
		if len(r.Blocked) > 0 {
			why := ""
			if r.Interrupted {
				why = " (interrupted)"
			}
			fmt.Fprintf(c.stdout, "Not started%s: %s.\n", why, strings.Join(r.Blocked, ", "))
		}
		c.errorLines(res.Err)
	}
}

// maxErrorLine bounds each line of an operation's error a person is shown;
// the journal keeps the whole text.
const maxErrorLine = 300

// maxErrorLines bounds how many failures of one kind (compensations, or
// the steps that caused them) are shown: a full disk fails every step the
// same way, and a screenful says it.
const maxErrorLines = 6

// errorLines prints an operation's error on stderr, one bounded line per
// failure: a rollback's failures, then the failures that caused it.
func (c *cli) errorLines(err error) {
	if err == nil {
		return
	}
	for _, l := range errorLines(err) {
		fmt.Fprintf(c.stderr, "bulwark: %s\n", c.red.Redact(l))
	}
}

func errorLines(err error) []string {
	var lines []string
	add := func(prefix string, failures map[string]error) {
		ids := make([]string, 0, len(failures))
		for id := range failures {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for i, id := range ids {
			if i == maxErrorLines-1 && len(ids) > maxErrorLines {
				lines = append(lines, fmt.Sprintf("%s… and %d more: %s", prefix, len(ids)-i, strings.Join(ids[i:], ", ")))
				lines[len(lines)-1] = bound(lines[len(lines)-1])
				break
			}
			lines = append(lines, bound(prefix+id+": "+failures[id].Error()))
		}
	}
	var ue *engine.UnrecordedError
	if errors.As(err, &ue) {
		lines = append(lines, bound("not recorded: "+ue.Err.Error()))
		if ue.Cause == nil {
			return lines
		}
		err = ue.Cause
	}
	var rb *engine.RollbackError
	if errors.As(err, &rb) {
		add("rollback incomplete: ", rb.Failures)
		if rb.Cause == nil {
			return lines
		}
		err = rb.Cause
	}
	var se *engine.StepError
	if errors.As(err, &se) {
		prefix := ""
		switch {
		case rb != nil:
			prefix = "after: "
		case strings.HasPrefix(err.Error(), "rolled back after: "):
			prefix = "rolled back after: "
		}
		add(prefix, se.Failures)
		return lines
	}
	return append(lines, bound(err.Error()))
}

// bound makes s one line of at most maxErrorLine bytes.
func bound(s string) string {
	s = engine.OneLine(s)
	if len(s) <= maxErrorLine {
		return s
	}
	cut := maxErrorLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" … [%d more bytes]", len(s)-cut)
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (c *cli) teardownCmd() *cobra.Command {
	var yes, dryRun bool
	cmd := &cobra.Command{
		Use:   "teardown SPEC",
		Short: "Delete everything the stack's state records; refused whole if any of it is protected",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			if dryRun {
				pl, err := stack.TeardownPlan(sp, opts)
				if pl != nil {
					for _, ch := range pl.Changes {
						fmt.Fprintf(c.stdout, "  - %-16s %s (%s)\n", ch.Resource, ch.Type, ch.Protection)
					}
				}
				return err
			}
			if !yes {
				f, ok := c.stdin.(*os.File)
				if !ok || !term.IsTerminal(int(f.Fd())) {
					return errors.New("teardown deletes resources: pass --yes to confirm when not on a terminal")
				}
				opts.Confirm = func(names []string) bool {
					// An interrupt while the question waits ends the
					// command: nothing has started.
					c.graceful.Store(false)
					defer c.graceful.Store(true)
					fmt.Fprintf(c.stdout, "This deletes %d resource(s) of stack %s: %s\nType yes to go on: ", len(names), sp.Stack, strings.Join(names, ", "))
					var answer string
					fmt.Fscanln(c.stdin, &answer)
					return answer == "yes"
				}
			}
			opts.Stop = c.mutating(args[0])
			res, err := stack.Teardown(cmd.Context(), sp, opts)
			if err != nil {
				return err
			}
			c.report(res, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask (needed when not on a terminal)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	return cmd
}

func (c *cli) resumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume SPEC",
		Short: "Finish an operation that a crash, a kill or a failed compensation left unfinished",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			opts.Stop = c.mutating(args[0])
			res, err := stack.Resume(cmd.Context(), sp, opts)
			if errors.Is(err, stack.ErrNothingToResume) {
				fmt.Fprintln(c.stdout, err)
				return nil
			}
			if err != nil {
				return err
			}
			c.report(res, args[0])
			return nil
		},
	}
}

func (c *cli) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status SPEC",
		Short: "Show the stack's recorded resources, pending interventions and last operation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := loadSpec(args[0], "")
			if err != nil {
				return err
			}
			rep, err := stack.Status(sp, stack.Options{StateDir: c.stateDir})
			if err != nil {
				return err
			}
			if asJSON {
				c.journalProblems(rep.JournalProblems)
				return c.printJSON(rep)
			}
			fmt.Fprintf(c.stdout, "stack %s: %d resource(s), revision %d\n", rep.Stack, len(rep.Resources), rep.Revision)
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			for _, r := range rep.Resources {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.Name, r.Type, r.Provider, r.Protection, r.ID)
			}
			tw.Flush()
			if rep.LastOp != nil {
				fmt.Fprintf(c.stdout, "last operation: %s %s %s\n", rep.LastOp.ID, rep.LastOp.Type, rep.LastOp.Status)
			}
			for _, u := range rep.Unfinished {
				fmt.Fprintf(c.stdout, "unfinished: %s (run `bulwark resume %s`)\n", u, args[0])
			}
			for _, i := range rep.Interventions {
				fmt.Fprintf(c.stdout, "NEEDS INTERVENTION: %s %s: %s (clear with `bulwark ack %s`)\n", i.Op, i.Resource, i.Error, i.Op)
			}
			c.journalProblems(rep.JournalProblems)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// journalProblems prints each bad journal line status found, with its
// repair, and makes status exit 1: the report is whole, the journal is not.
func (c *cli) journalProblems(problems []string) {
	for _, p := range problems {
		fmt.Fprintf(c.stderr, "bulwark: %s\n", p)
	}
	if len(problems) > 0 {
		c.exit = stack.ExitError
	}
}

func (c *cli) historyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history SPEC",
		Short: "List the stack's operations and revisions, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := loadSpec(args[0], "")
			if err != nil {
				return err
			}
			rep, err := stack.StackHistory(sp, stack.Options{StateDir: c.stateDir})
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(rep)
			}
			fmt.Fprintln(c.stdout, "operations:")
			for _, o := range rep.Operations {
				fmt.Fprintf(c.stdout, "  %s  %-9s %-20s %s\n", o.ID, o.Type, o.Status, o.Start.Format("2006-01-02 15:04:05"))
			}
			fmt.Fprintln(c.stdout, "revisions:")
			for _, r := range rep.Revisions {
				mark := " "
				if r.Current {
					mark = "*"
				}
				fmt.Fprintf(c.stdout, "%s %3d  %-8s %s  %s  %s\n", mark, r.N, r.Status, r.Op, r.Time.Format("2006-01-02 15:04:05"), r.File)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (c *cli) ackCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ack OP_ID",
		Short: "Acknowledge a failure that needed a person, so operations may run again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := stack.Ack(c.stateDir, args[0], nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "acknowledged %s in stack %s\n", args[0], name)
			return nil
		},
	}
}

func (c *cli) graphCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "graph SPEC",
		Short: "Print the dependency graph as DOT",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := loadSpec(args[0], "")
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "digraph %q {\n  rankdir=LR;\n", sp.Stack)
			for _, r := range sp.Resources {
				fmt.Fprintf(c.stdout, "  %q [label=\"%s\\n%s (%s)\"];\n", r.Name, r.Name, r.Type, r.Protection)
			}
			g := sp.Graph()
			for _, n := range g.Nodes() {
				for _, d := range g.DependsOn(n) {
					fmt.Fprintf(c.stdout, "  %q -> %q;\n", n, d)
				}
			}
			fmt.Fprintln(c.stdout, "}")
			return nil
		},
	}
}

func (c *cli) providersCmd() *cobra.Command {
	cmd := c.providersListCmd()
	cmd.AddCommand(c.providersLockCmd(), c.providersSchemaCmd())
	return cmd
}

func (c *cli) providersLockCmd() *cobra.Command {
	var provider string
	cmd := &cobra.Command{
		Use:   "lock SPEC",
		Short: "Write bulwark.lock beside the spec with the sha256 of every provider it uses",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := loadSpec(args[0], provider)
			if err != nil {
				return err
			}
			opts, done, err := c.options(nil)
			if err != nil {
				return err
			}
			defer done()
			// Entries already pinned (say, for a run with --provider) stay.
			lf, err := providerlock.Read(providerlock.PathFor(args[0]))
			if err != nil {
				return err
			}
			if lf == nil {
				lf = &providerlock.File{Providers: map[string]providerlock.Entry{}}
			}
			for _, n := range sp.ProvidersUsed() {
				src := sp.Providers[n].Source
				path, err := pluginhost.Find(opts.PluginDirs, src)
				if err != nil {
					return err
				}
				sum, err := pluginhost.FileSHA256(path)
				if err != nil {
					return err
				}
				lf.Providers[src] = providerlock.Entry{SHA256: sum}
				fmt.Fprintf(c.stdout, "%s  %s  %s\n", src, sum, path)
			}
			path := providerlock.PathFor(args[0])
			if err := providerlock.Write(path, lf); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "pin provider `NAME` too, for runs that use --provider")
	return cmd
}

func (c *cli) providersListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "providers",
		Short: "List the provider plugins found: name, version, protocol, sha256",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, done, err := c.options(nil)
			if err != nil {
				return err
			}
			defer done()
			found, err := pluginhost.List(opts.PluginDirs)
			if err != nil {
				return err
			}
			if len(found) == 0 {
				return fmt.Errorf("no provider plugins found in %s", strings.Join(opts.PluginDirs, ", "))
			}
			host := pluginhost.New(pluginhost.Options{Dirs: opts.PluginDirs, Logger: opts.Logger, StartTimeout: opts.StartTimeout, CallTimeout: opts.CallTimeout})
			defer host.Close()
			tmp, err := os.MkdirTemp("", "bulwark-providers-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tSHA256\tPATH")
			for _, f := range found {
				version, protocol := "?", "?"
				// The schema only: no config to give (see doctor).
				p, err := host.Start(cmd.Context(), pluginhost.Config{Name: f.Name, Source: f.Name, DataDir: tmp + "/" + f.Name, ReadOnly: true, SchemaOnly: true})
				if err == nil {
					version, protocol = p.Schema().ProviderVersion, fmt.Sprint(p.Protocol())
				} else {
					version = "error: " + err.Error()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Name, version, protocol, f.SHA256, f.Path)
			}
			return tw.Flush()
		},
	}
}

func (c *cli) planCmd() *cobra.Command {
	var provider string
	var asJSON, detailed bool
	cmd := &cobra.Command{
		Use:   "plan SPEC",
		Short: "The dry run: every step's Check, no Execute, and a diff per resource; takes no lock",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], provider)
			if err != nil {
				return err
			}
			defer done()
			return c.plan(cmd.Context(), sp, opts, asJSON, detailed)
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "use provider `NAME` for resources that name none")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when the plan has changes, 0 when it has none")
	return cmd
}

func (c *cli) plan(ctx context.Context, sp *spec.Spec, opts stack.Options, asJSON, detailed bool) error {
	pv, err := stack.Plan(ctx, sp, opts)
	if err != nil {
		return err
	}
	if asJSON {
		if err := c.printJSON(pv); err != nil {
			return err
		}
	} else {
		pv.Render(c.red.Writer(c.stdout))
	}
	if err := pv.Err(); err != nil {
		// What the apply would be refused with, and its exit code: 3 for
		// the ladder, 1 for a conflict.
		c.exit = stack.ExitCode(nil, err)
		return nil
	}
	if detailed && pv.HasChanges() {
		c.exit = stack.ExitChanges
	}
	return nil
}

func (c *cli) rollbackCmd() *cobra.Command {
	var to int
	cmd := &cobra.Command{
		Use:   "rollback SPEC",
		Short: "Converge the stack back to an earlier applied revision (default: the newest before the current one with another spec)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			opts.Stop = c.mutating(args[0])
			res, err := stack.Rollback(cmd.Context(), sp, opts, to)
			if err != nil {
				return err
			}
			c.report(res, args[0])
			return nil
		},
	}
	cmd.Flags().IntVar(&to, "to", 0, "the `REVISION` to go back to (bulwark history lists them)")
	return cmd
}

func (c *cli) doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [SPEC]",
		Short: "Check plugins, state, journal, lock and interventions; exit 1 when something needs attention",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var sp *spec.Spec
			if len(args) == 1 {
				var err error
				if sp, err = loadSpec(args[0], ""); err != nil {
					return err
				}
			}
			opts, done, err := c.options(sp)
			if err != nil {
				return err
			}
			defer done()
			checks := stack.Doctor(cmd.Context(), sp, opts)
			bad := 0
			for _, ch := range checks {
				if !ch.OK {
					bad++
				}
			}
			if asJSON {
				if err := c.printJSON(checks); err != nil {
					return err
				}
			} else {
				for _, ch := range checks {
					mark := "ok  "
					if !ch.OK {
						mark = "FAIL"
					}
					fmt.Fprintf(c.stdout, "%s %-28s %s\n", mark, ch.Name, ch.Detail)
					if ch.Fix != "" {
						fmt.Fprintf(c.stdout, "     %-28s fix: %s\n", "", ch.Fix)
					}
				}
			}
			if bad > 0 {
				fmt.Fprintf(c.stderr, "bulwark: doctor found %d problem(s)\n", bad)
				c.exit = stack.ExitError
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (c *cli) importCmd() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "import SPEC ADDRESS ID",
		Short: "Take over an existing resource: read it by id and record it as this stack's (imported: no rollback deletes it)",
		Long: "Take over an existing resource: read it by id and record it as this stack's (imported: no rollback deletes it).\n" +
			"A resource another bulwark stack made is refused unless --from names that stack (forget it there first).",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			opts.ImportFrom = from
			res, err := stack.Import(cmd.Context(), sp, opts, args[1], args[2])
			if err != nil {
				return err
			}
			return c.stateReport(res, fmt.Sprintf("imported %s as %s in stack %s", args[2], args[1], sp.Stack))
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the `STACK` a resource carrying another stack's key is taken from (it must have forgotten it)")
	return cmd
}

// stateReport prints how a state command ended and sets the exit code.
func (c *cli) stateReport(res *stack.Result, ok string) error {
	if res.Outcome != engine.Succeeded {
		c.exit = stack.ExitCode(res, nil)
		fmt.Fprintf(c.stderr, "bulwark: %v\n", res.Err)
		return nil
	}
	fmt.Fprintf(c.stdout, "%s (%s)\n", ok, res.Op)
	return nil
}

func (c *cli) stateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect and change what the stack's state records, without touching any resource",
	}
	var listJSON, showJSON bool
	list := &cobra.Command{
		Use:   "list SPEC",
		Short: "List the resources the state records",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := loadSpec(args[0], "")
			if err != nil {
				return err
			}
			rs, err := stack.StateList(sp, stack.Options{StateDir: c.stateDir})
			if err != nil {
				return err
			}
			if listJSON {
				return c.printJSON(rs)
			}
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			for _, r := range rs {
				how := "created"
				if r.Imported {
					how = "imported"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Type, r.Provider, r.Protection, r.ID, how)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")
	show := &cobra.Command{
		Use:   "show SPEC ADDRESS",
		Short: "Show what the state records of one resource",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := loadSpec(args[0], "")
			if err != nil {
				return err
			}
			r, err := stack.StateShow(sp, stack.Options{StateDir: c.stateDir}, args[1])
			if err != nil {
				return err
			}
			if showJSON {
				return c.printJSON(r)
			}
			tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "name\t%s\ntype\t%s\nprovider\t%s (%s)\nid\t%s\nprotection\t%s\n", r.Name, r.Type, r.Provider, r.Source, r.ID, r.Protection)
			if len(r.DependsOn) > 0 {
				fmt.Fprintf(tw, "depends_on\t%s\n", strings.Join(r.DependsOn, ", "))
			}
			switch {
			case r.Imported:
				fmt.Fprintf(tw, "origin\timported\n")
			case r.CreatedBy != "":
				fmt.Fprintf(tw, "origin\tcreated by %s\n", r.CreatedBy)
			}
			if r.IdempotencyKey != "" {
				fmt.Fprintf(tw, "key\t%s\n", r.IdempotencyKey)
			}
			for _, k := range sortedKeys(r.Config) {
				b, _ := json.Marshal(r.Config[k])
				fmt.Fprintf(tw, "config.%s\t%s\n", k, b)
			}
			for _, k := range sortedKeys(r.Attributes) {
				b, _ := json.Marshal(r.Attributes[k])
				fmt.Fprintf(tw, "attributes.%s\t%s\n", k, b)
			}
			return tw.Flush()
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	forget := &cobra.Command{
		Use:   "forget SPEC ADDRESS",
		Short: "Stop managing a resource without deleting it (any protection level: nothing is deleted)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			res, err := stack.StateForget(cmd.Context(), sp, opts, args[1])
			if err != nil {
				return err
			}
			return c.stateReport(res, fmt.Sprintf("forgot %s: stack %s no longer manages it; nothing was deleted", args[1], sp.Stack))
		},
	}
	mv := &cobra.Command{
		Use:   "mv SPEC OLD NEW",
		Short: "Rename a resource in the state, so a rename in the spec is not a delete and a create",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, opts, done, err := c.load(args[0], "")
			if err != nil {
				return err
			}
			defer done()
			res, err := stack.StateMove(cmd.Context(), sp, opts, args[1], args[2])
			if err != nil {
				return err
			}
			return c.stateReport(res, fmt.Sprintf("moved %s to %s in stack %s", args[1], args[2], sp.Stack))
		},
	}
	cmd.AddCommand(list, show, forget, mv)
	return cmd
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
