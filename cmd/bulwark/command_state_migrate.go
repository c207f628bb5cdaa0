package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulwark-iac/bulwark/backends"
	"github.com/bulwark-iac/bulwark/core/failpoint"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/storage"
)

// envState names the backend when --state and --state-dir are not given.
const envState = "BULWARK_STATE"

// resolveState settles where the stack lives, once per command: the
// backend is --state's, else $BULWARK_STATE's, else the file backend under
// --state-dir. With a remote backend, --state-dir is where this machine
// keeps the providers' data folders, so it never turns a team's
// $BULWARK_STATE off. With a file one, --state file://… beside --state-dir
// is refused (two folders for one thing), and --state-dir beats a file URL
// in $BULWARK_STATE (a flag over a variable). A file URL or a bare path
// becomes stateDir; c.stateURL is left set only for a backend off this
// machine.
func (c *cli) resolveState(cmd *cobra.Command) error {
	fl := cmd.Flags()
	stateSet, dirSet := fl.Changed("state"), fl.Changed("state-dir")
	u := c.stateURL
	switch {
	case stateSet && u == "":
		return errors.New("--state: empty URL (want file://DIR, postgres://USER@HOST:PORT/DB or s3://BUCKET/PREFIX)")
	case stateSet && dirSet && !backends.Remote(u):
		return errors.New("--state file://… and --state-dir are both given: --state-dir DIR is --state file://DIR; give one of them")
	case !stateSet:
		u = os.Getenv(envState)
		if dirSet && !backends.Remote(u) {
			u = ""
		}
	}
	c.stateURL = ""
	if u == "" {
		return nil
	}
	if !backends.Remote(u) {
		dir, err := fileDir(u)
		if err != nil {
			return err
		}
		c.stateDir = dir
		return nil
	}
	c.stateURL = u
	return nil
}

// stateOptions are the options that say where the stack lives: the file
// backend under --state-dir, or the backend --state names (the providers'
// data folders stay under --state-dir on this machine either way).
func (c *cli) stateOptions() stack.Options {
	o := stack.Options{StorageOptions: stack.StorageOptions{StateDir: c.stateDir, LockTimeout: c.lockTimeout, LockWaiting: c.waitingForLock}}
	if c.stateURL != "" {
		u := c.stateURL
		o.Open, o.StateURL = c.backends.Open, u
		o.ListStacks = func(ctx context.Context) ([]string, error) { return c.backends.Stacks(ctx, u) }
		o.ClaimsLock = func(ctx context.Context, h storage.Holder) (storage.ClaimsLock, error) {
			return backends.ClaimsLock(ctx, u, h)
		}
	}
	return o
}

// lockTimeoutFlag gives cmd, a command that takes the stack's lock,
// --lock-timeout.
func (c *cli) lockTimeoutFlag(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&c.lockTimeout, "lock-timeout", 0, "wait up to `DURATION` (30s, 5m) for the stack's lock while another operation holds it, trying again with backoff (default 0: exit 4 at once, naming the holder)")
}

// waitingForLock says, once, on stderr, whose lock a --lock-timeout waits
// for.
func (c *cli) waitingForLock(stack string, h *storage.Holder) {
	who := "another process"
	if h != nil {
		who = h.String()
	}
	fmt.Fprintf(c.stderr, "bulwark: waiting for the lock on %s, held by %s (up to %s: --lock-timeout)\n", stack, who, c.lockTimeout)
}

// lockWaiter is be whose Lock waits as --lock-timeout says (be itself
// without it), for what takes the lock outside an operation (ack, state
// migrate).
func (c *cli) lockWaiter(be storage.Backend) storage.Backend {
	return storage.WithLockTimeout(be, c.lockTimeout, func(h *storage.Holder) { c.waitingForLock("the stack at "+be.Location(), h) })
}

// fileDir is the folder a file:// URL or a bare path names.
func fileDir(u string) (string, error) {
	dir := u
	if backends.Scheme(u) == "file" {
		dir = u[len("file://"):]
	}
	if dir == "" || strings.ContainsAny(dir, "?#") {
		return "", fmt.Errorf("--state %s: want file://DIR (file:///abs/dir, or file://rel/dir relative to here)", u)
	}
	return filepath.Clean(dir), nil
}

// stateHome is the URL of the backend the command uses (for backends.Open).
func (c *cli) stateHome() (string, error) {
	if c.stateURL != "" {
		return c.stateURL, nil
	}
	abs, err := filepath.Abs(c.stateDir)
	if err != nil {
		return "", err
	}
	return "file://" + filepath.ToSlash(abs), nil
}

func (c *cli) stateMigrateCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "migrate SPEC --to URL",
		Short: "Move the stack, with its journal, revisions and backups, to another backend",
		Long: `Move the stack SPEC names from where it is now (--state, --state-dir or
$BULWARK_STATE) to the backend --to names: its state, its whole journal (so
resume, history and rollback go on there), its revisions' bodies and its
backups (names, times and contents as they are).

A migration is an operation. It is journaled at the old place, which is then
fenced: from then on every command there is refused, naming the migration
and the new place. The copy is read back and compared, and only then does
the new place take writes. A migration killed at any point is finished by
running it again, or by ` + "`bulwark resume SPEC`" + ` at either place; until then
neither place takes writes, and never do both. Sensitive values travel
sealed, as they are stored. The destination must not hold the stack yet (a
partial copy this migration left there is taken up, not refused).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return errors.New("state migrate: --to URL is required (file://DIR, postgres://USER@HOST:PORT/DB or s3://BUCKET/PREFIX)")
			}
			sp, err := c.peekSpec(args[0], "")
			if err != nil {
				return err
			}
			from, err := c.stateHome()
			if err != nil {
				return err
			}
			dest := to
			if !backends.Remote(to) {
				dir, err := fileDir(to)
				if err != nil {
					return err
				}
				if dir, err = filepath.Abs(dir); err != nil {
					return err
				}
				dest = "file://" + filepath.ToSlash(dir)
			}
			return c.migrate(cmd.Context(), c.stdout, sp.Stack, from, dest)
		},
	}
	c.lockTimeoutFlag(cmd)
	cmd.Flags().StringVar(&to, "to", "", "move the stack to `URL` (file://DIR, postgres://USER@HOST:PORT/DB?sslmode=…, s3://BUCKET/PREFIX?region=…)")
	return cmd
}

// migrationOptions are the options both places of a migration of stack
// are opened with.
func (c *cli) migrationOptions(stackName string) (storage.Options, error) {
	o := storage.Options{Stack: stackName}
	// With the key, values are opened at the source and sealed again at
	// the destination (the revision bodies need it); without one, they
	// travel sealed as they are stored.
	// The key is the one of the secrets provider the stack's state records
	// (a passphrase stack's, derived from its salt), not the key file's.
	src := c.secretsSource()
	if _, err := src.Key(false); err == nil || src.Passphrase != "" || src.NewPassphrase != "" {
		o.Sealing = state.Sealing{Sealer: stack.StateSealer(context.Background(), src, stackName), Reveal: func(v any) { c.red.Add(v) }}
	} else if !errors.Is(err, secrets.ErrNoKey) {
		return o, err
	}
	return o, nil
}

// migrate moves (or finishes moving) stack from one --state URL to
// another, and says on out where to use it from now on.
func (c *cli) migrate(ctx context.Context, out io.Writer, stack, from, to string) error {
	o, err := c.migrationOptions(stack)
	if err != nil {
		return err
	}
	fp, err := failpoint.FromEnv()
	if err != nil {
		return err
	}
	if fp != nil {
		// The crash harness kills at every durable write of either place
		// too, not only between the migration's steps.
		o.AfterWrite = func() { fp.Hit("state") }
	}
	host, _ := os.Hostname()
	h := storage.Holder{Op: journal.NewOpID(), PID: os.Getpid(), Host: host, Since: time.Now().UTC()}
	m, err := backends.Migrate(ctx, backends.Migration{
		From: from, To: to, Options: o, Holder: h, Open: backends.Open,
		Locking:  c.lockWaiter,
		Boundary: func() { fp.Hit("state") },
	})
	if err != nil {
		return err
	}
	// A move found already made was recorded by whoever made it (the
	// stack's moved record, in the shared backend): its places and id are
	// printed inert.
	l := printable.Line
	switch {
	case m.Already:
		fmt.Fprintf(out, "stack %s was moved from %s to %s already (migration %s): nothing to do\n", stack, l(m.From), l(m.To), l(m.Op))
	default:
		how := "moved"
		if m.Finished {
			how = "finished moving"
		}
		fmt.Fprintf(out, "%s stack %s from %s to %s (migration %s): %d resource(s), %d journal record(s), %d revision(s), %d backup(s)\n",
			how, stack, l(m.From), l(m.To), l(m.Op), m.Resources, m.Records, m.Revisions, m.Backups)
	}
	fmt.Fprintf(out, "from now on: bulwark --state '%s' …  (or export %s='%s')\n", l(m.To), envState, l(m.To))
	return nil
}

// resumeMigration finishes the migration left unfinished at the stack's
// place, if there is one (false: none), saying so on out.
func (c *cli) resumeMigration(ctx context.Context, out io.Writer, stack string) (bool, error) {
	here, err := c.stateHome()
	if err != nil {
		return false, err
	}
	o, err := c.migrationOptions(stack)
	if err != nil {
		return false, err
	}
	p, err := backends.PendingMigration(ctx, backends.Open, here, o)
	if err != nil || p == nil {
		return false, nil // what is wrong with the place is resume's own to say
	}
	from, to := here, p.To
	if backends.Redact(here) == p.To {
		// This is the destination: the source is where the record says.
		from, to = p.From, here
	}
	if from == "" || to == "" {
		return true, fmt.Errorf("resume: migration %s of stack %s is unfinished, but its record does not say between which places: run `bulwark state migrate SPEC --to URL` at the old place", p.Op, stack)
	}
	return true, c.migrate(ctx, out, stack, from, to)
}
