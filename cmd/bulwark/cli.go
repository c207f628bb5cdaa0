package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/printable"
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
	// stateURL is --state (or $BULWARK_STATE) once resolveState has run:
	// "" for the file backend under stateDir (a file:// URL sets stateDir).
	stateURL                      string
	secretsKeyFile                string
	secretsProvider               string
	startTimeout, callTimeout     time.Duration
	lockTimeout                   time.Duration // --lock-timeout, on the commands that take the lock
	keepRevisions, keepOperations int
	// red holds the sensitive values this invocation has seen; everything
	// it prints about errors goes through it.
	red *secrets.Redactor
	// backends opens the backend --state names (backends.Pooled: one
	// PostgreSQL connection pool, or one S3 client, for all the command
	// opens); run closes it.
	backends *backends.Pooled

	// eventsTo is the --events file once options opened it; streaming says
	// a --json command streams the events to stdout (see streamEvents).
	eventsTo  io.Writer
	streaming bool
	// streamEnded says the stream has its operation's end line, which
	// says how it ended: no failure line follows it (see failureJSON).
	streamEnded bool

	// stop is closed by the first interrupt of a mutating command (see
	// interrupts); graceful says a mutating command runs.
	stop     chan struct{}
	graceful atomic.Bool
	varIn    varInputs // --var, --var-file
	// showUnchanged is --show-unchanged of plan and show: the plan lists
	// every resource, not only those that change.
	showUnchanged bool
	specPath      atomic.Value // string: the spec of the command, for messages

	// isTerminal, when set, decides which streams are terminals (tests);
	// nil asks the kernel (see terminal).
	isTerminal func(stream any) bool
	// heapPrepared makes prepareHeap's work once per process.
	heapPrepared sync.Once
}

// run is bulwark's whole life: parse flags, call core, map the outcome to
// an exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, red: secrets.NewRedactor(), stop: make(chan struct{}), backends: backends.NewPooled()}
	defer c.backends.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go c.interrupts(sigs, done, cancel, os.Exit)
	out := &countingWriter{w: stdout}
	c.stdout = out
	root := c.commands()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(out)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return stack.ExitOK
	}
	code := c.exitFor(err)
	var ec exitCode
	if !errors.As(err, &ec) && wantsJSON(cmd, args) && !c.streamEnded && (c.streaming || out.n == 0) {
		// A --json command prints JSON whatever fails (docs/json.md).
		c.failureJSON(cmd, code, err)
	}
	return code
}

// countingWriter counts what was written through it: whether a --json
// command printed its document before it failed.
type countingWriter struct {
	w io.Writer
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// exitCode is what a command returns to end with that exit code when it
// has already said why (a plan with changes, an apply rolled back, doctor's
// FAILs): run prints nothing more for it. Any other error is printed by
// fail and exits with the code it means (docs/architecture.md, "Exit codes").
// A command returns its exit code with its error, rather than setting one
// aside.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// withExit is nil for 0, else the exitCode.
func withExit(code int) error {
	if code == 0 {
		return nil
	}
	return exitCode(code)
}

// exitFor is the exit code of a command that returned err, printing err
// (unless it is an exitCode) on stderr.
func (c *cli) exitFor(err error) int {
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	c.fail(err)
	if code := stack.ExitCode(nil, err); code != 0 {
		return code
	}
	return stack.ExitError
}

// fail prints err for a person: redacted, and inert (printable.Text: an
// error quotes what it read, from a spec, the state, a lock's record or a
// provider, and none of it may drive the terminal).
func (c *cli) fail(err error) {
	var problems spec.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(c.stderr, printable.Text(c.red.Redact(p.Error())))
		}
		fmt.Fprintf(c.stderr, "bulwark: %d problem(s) in the spec; nothing was changed\n", len(problems))
	} else {
		fmt.Fprintf(c.stderr, "bulwark: %s\n", printable.Text(c.red.Error(err).Error()))
	}
}

func (c *cli) commands() *cobra.Command {
	root := &cobra.Command{
		Use:           "bulwark",
		Short:         "Provision a stack from a declarative spec, safely",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&c.pluginDir, "plugin-dir", "", "look for provider plugins in `DIR` first")
	root.PersistentFlags().StringVar(&c.stateDir, "state-dir", ".bulwark", "keep the stacks under `DIR`, one folder per stack (state, journal, lock); --state file://DIR says the same; with a remote --state, the providers' data folders")
	root.PersistentFlags().StringVar(&c.stateURL, "state", "", "keep the stack's state, journal and lock at `URL`: file://DIR (the default, with --state-dir's DIR), postgres://USER@HOST:PORT/DB?sslmode=… or s3://BUCKET/PREFIX?region=… (default: $"+envState+")")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return c.resolveState(cmd) }
	root.PersistentFlags().StringVar(&c.eventsFile, "events", "", "write lifecycle events (JSON lines) to `FILE` (default: stderr, unless it is a terminal)")
	root.PersistentFlags().StringVar(&c.secretsKeyFile, "secrets-key-file", "", "read the key that seals sensitive values in the state from `FILE` (base64 of 32 bytes; default: $"+secrets.EnvKey+", else a key file bulwark creates in your config folder)")
	root.PersistentFlags().StringVar(&c.secretsProvider, "secrets-provider", "", "a new stack's secrets provider `NAME`, recorded in its state at its first apply: keyfile (the default), passphrase (a key derived from $"+secrets.EnvPassphrase+") or awskms://KEY-ID-or-ARN[?region=REGION]; bulwark secrets rotate changes it")
	root.PersistentFlags().DurationVar(&c.startTimeout, "plugin-start-timeout", 20*time.Second, "how long a plugin may take to complete its handshake")
	root.PersistentFlags().DurationVar(&c.callTimeout, "plugin-call-timeout", 10*time.Minute, "how long one call to a plugin may take before it is abandoned")
	root.PersistentFlags().IntVar(&c.keepRevisions, "keep-revisions", stack.DefaultKeepRevisions, "keep the last `N` revisions of each stack in its state (older ones are pruned; the current one never is)")
	root.PersistentFlags().IntVar(&c.keepOperations, "keep-operations", journal.DefaultKeepOperations, "keep every journal record of the last `N` operations (older finished ones are compacted to one line each)")
	root.AddCommand(c.validateCmd(), c.planCmd(), c.applyCmd(), c.teardownCmd(), c.rollbackCmd(), c.showCmd(), c.resumeCmd(), c.statusCmd(), c.doctorCmd(),
		c.historyCmd(), c.ackCmd(), c.graphCmd(), c.providersCmd(), c.versionCmd(), c.importCmd(), c.stateCmd(), c.outputCmd(), c.fmtCmd(), c.secretsCmd(), c.uiCmd())
	c.addVarFlags(root)
	setExamples(root)
	return root
}
