package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/planview"
	"github.com/bulwark-iac/bulwark/core/planfile"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// Saved plans and confirmation, as Terraform does
// them:
//
//   - `bulwark plan SPEC --out FILE` writes the plan (see core/planfile and
//     core/stack/saved.go for what it holds); a plan the ladder or ownership
//     refuses is not written.
//   - `bulwark apply FILE` applies exactly that plan, without asking (it was
//     reviewed when it was made), and refuses with exit 1, saying what
//     changed, when the state, the spec or what a Read returns changed
//     since. Whether the argument is a plan or a spec is told by its content
//     (a JSON object whose "kind" is "bulwark-plan"), never by its name.
//   - `bulwark show FILE [--json | --html]` renders a saved plan as plan renders one (--html: one self-contained review page).
//   - `bulwark apply SPEC` and `bulwark rollback SPEC` print the plan before
//     the first step when it has changes; when standard input is a terminal
//     they then ask, and only "yes" goes on. Anything else cancels: nothing
//     is changed and the exit code is 1 ("apply cancelled"), as Terraform
//     exits 1 on "Apply cancelled." --yes (or --auto-approve, Terraform's
//     name) does not ask. Without a terminal there is no one to ask: a run
//     that would change anything is refused (exit 1, "error asking for
//     approval", as Terraform says) unless --yes was given, and a run that
//     would change nothing needs no approval. teardown asks and refuses the
//     same way before its first delete. resume never asks: it continues an
//     operation that was approved when it began (as Terraform has no
//     question when it carries out an approved plan).

// isPlanFile reports whether path holds a saved plan. A file that cannot be
// read is not one: loading it as a spec reports the error.
func isPlanFile(path string) bool {
	ok, err := planfile.IsPlanFile(path)
	return err == nil && ok
}

// bulwarkVersion is this binary's version, recorded in the plans it saves.
func bulwarkVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return readVersion(bi, version, commit).Version
}

// terminal reports whether a stream is a terminal: the injected check when
// the cli has one (tests), else the real one.
func (c *cli) terminal(stream any) bool {
	if cw, ok := stream.(*countingWriter); ok {
		stream = cw.w // what it counts for is the stream it wraps
	}
	if c.isTerminal != nil {
		return c.isTerminal(stream)
	}
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// savePlan is `plan SPEC --out FILE`.
func (c *cli) savePlan(ctx context.Context, sp *spec.Spec, opts stack.Options, out string, asJSON, detailed bool) error {
	if asJSON {
		opts.Reporter = c.progressView(false) // stdout carries the JSON alone
	}
	pv, err := stack.SavePlan(ctx, sp, opts, out, bulwarkVersion())
	if err != nil {
		return err
	}
	// renderPlan returns plan's exit code (an exitCode), or why it could
	// not print.
	code := c.renderPlan(pv, asJSON, detailed)
	if _, ok := code.(exitCode); code != nil && !ok {
		return code
	}
	if pv.Err() != nil {
		fmt.Fprintf(c.stderr, "bulwark: the plan is refused: no plan file was written to %s\n", out)
		return code
	}
	if !asJSON {
		fmt.Fprintf(c.stdout, "\nSaved the plan to %s.\nTo carry out exactly this plan, run:\n    bulwark apply %s\n", out, out)
	}
	return code
}

// applyPlanFile is `apply FILE` of a saved plan.
func (c *cli) applyPlanFile(ctx context.Context, path string, par concurrency, asJSON bool) error {
	opts, done, err := c.options(nil)
	if err != nil {
		return err
	}
	defer done()
	if asJSON {
		c.streamEvents(&opts)
	}
	if err := par.set(&opts); err != nil {
		return err
	}
	if len(c.varIn.vars)+len(c.varIn.files) > 0 {
		// As Terraform refuses variables with a saved plan.
		return fmt.Errorf("%s is a saved plan: it carries the variable values it was made with, and --var or --var-file cannot change them (make a new plan with them instead)", path)
	}
	p, err := stack.OpenPlan(path, opts)
	if err != nil {
		return err
	}
	opts.Stop = c.mutating(p.Spec.File)
	res, err := stack.ApplyPlan(ctx, p, opts)
	if err != nil {
		return err
	}
	return c.report(res, p.Spec.File)
}

// savedPlanFlags refuses, for apply FILE, the flags that would make the run
// another plan than the one saved.
func savedPlanFlags(cmd *cobra.Command, path string) error {
	for _, name := range []string{"provider", "simulate-failure", "dry-run", "replace", "target", "refresh-only"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return fmt.Errorf("%s is a saved plan, applied as it was made: --%s cannot change it (make a new plan with it instead)", path, name)
		}
	}
	return nil
}

func (c *cli) showCmd() *cobra.Command {
	var asJSON, asHTML bool
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Show a plan saved by bulwark plan --out, as plan shows it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := stack.ReadPlan(args[0])
			if err != nil {
				return err
			}
			pv := stack.PreviewOf(f)
			if asHTML {
				return c.showHTML(args[0], f, pv)
			}
			if asJSON {
				return c.printJSON(jsonview.NewPlan(pv))
			}
			w := c.red.Writer(c.stdout)
			fmt.Fprintf(w, "Saved plan %s: stack %s, %s, made %s", args[0], f.Stack, f.Operation, f.CreatedAt.Format("2006-01-02 15:04:05 MST"))
			if f.BulwarkVersion != "" {
				fmt.Fprintf(w, " by bulwark %s", f.BulwarkVersion)
			}
			fmt.Fprintf(w, "\nfrom %s, against the state at serial %d", f.Spec.File, f.State.Serial)
			if f.State.Lineage != "" {
				fmt.Fprintf(w, " (lineage %s)", f.State.Lineage)
			}
			fmt.Fprint(w, "\n\n")
			if err := planview.RenderWith(w, pv, planview.Options{Color: c.color(), ShowUnchanged: c.showUnchanged}); err != nil {
				return err
			}
			fmt.Fprintf(w, "\nTo carry out exactly this plan, run:\n    bulwark apply %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON, as plan --json does")
	cmd.Flags().BoolVar(&asHTML, "html", false, "print the plan as one self-contained HTML page (CSS inline, no script) to attach to a review")
	cmd.MarkFlagsMutuallyExclusive("json", "html")
	cmd.Flags().BoolVar(&c.showUnchanged, "show-unchanged", false, "list every resource, not only those that change")
	return cmd
}

// showHTML prints the saved plan at path as a review page, rendered from
// the document show --json prints (the same values, masked the same way).
func (c *cli) showHTML(path string, f *planfile.Plan, pv *stack.Preview) error {
	sp, err := savedPlanPage(path, f, pv)
	if err != nil {
		return err
	}
	return webview.RenderPlan(c.stdout, sp.Page, c.red)
}

// savedPlanPage lays out the saved plan at path (f, read as show reads it)
// from the document show --json prints for it: show --html and bulwark ui
// --plan show the same page.
func savedPlanPage(path string, f *planfile.Plan, pv *stack.Preview) (webview.SavedPlan, error) {
	var doc bytes.Buffer
	if err := jsonview.Write(&doc, jsonview.NewPlan(pv)); err != nil {
		return webview.SavedPlan{}, err
	}
	return webview.NewSavedPlan(webview.PlanMeta{
		File: path, Operation: f.Operation, CreatedAt: f.CreatedAt, BulwarkVersion: f.BulwarkVersion,
		SpecFile: f.Spec.File, Serial: f.State.Serial, Lineage: f.State.Lineage,
	}, doc.Bytes())
}

// openSavedPlan opens the saved plan at path as show FILE --json does.
func openSavedPlan(path string) (webview.SavedPlan, error) {
	f, err := stack.ReadPlan(path)
	if err != nil {
		return webview.SavedPlan{}, err
	}
	return savedPlanPage(path, f, stack.PreviewOf(f))
}

// approvalError is a run refused because it would change something and
// there was no terminal to ask on and no --yes: nothing was changed.
type approvalError struct{ op string }

func (e *approvalError) Error() string {
	return fmt.Sprintf("error asking for approval: no terminal to ask on; pass --yes (or --auto-approve) to %s without asking", e.op)
}

// approval is what the review of one run decided: refused, when it was
// refused for want of a terminal.
type approval struct{ refused *approvalError }

// explain is err, or, when err is the cancellation the review caused by
// refusing for want of a terminal, why.
func (a *approval) explain(err error) error {
	var ce *stack.CancelledError
	if a.refused != nil && (errors.As(err, &ce) || errors.Is(err, stack.ErrCancelled)) {
		return a.refused
	}
	return err
}

// review is the Review hook of apply and rollback: print the plan when it
// has changes (unless show is false: --json, where stdout carries JSON
// alone), then, unless --yes was given, ask on a terminal; only "yes" goes
// on. Without a terminal a plan with changes is refused (a records it) and
// a plan without needs no approval.
func (c *cli) review(ctx context.Context, op string, yes, show bool, a *approval) func(*stack.Preview) bool {
	return func(pv *stack.Preview) bool {
		if !pv.HasChanges() {
			return true // nothing to review: the run reports "already in place"
		}
		w := c.red.Writer(c.stdout)
		if show {
			planview.Render(w, pv, c.color())
			fmt.Fprintln(w)
		}
		if yes {
			return true
		}
		if !show || !c.terminal(c.stdin) {
			a.refused = &approvalError{op: op}
			return false
		}
		// An interrupt while the question waits ends the command: nothing
		// has started.
		c.graceful.Store(false)
		defer c.graceful.Store(true)
		fmt.Fprintf(w, "Do you want to %s stack %s as planned above?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", op, pv.Stack)
		type reply struct {
			answer string
			err    error
		}
		got := make(chan reply, 1)
		go func() {
			a, err := readLine(c.stdin)
			got <- reply{a, err}
		}()
		select {
		case r := <-got:
			fmt.Fprintln(w)
			return r.err == nil && r.answer == "yes"
		case <-ctx.Done():
			// Ctrl-C at the question: the same as any answer but yes.
			fmt.Fprintln(w)
			return false
		}
	}
}

// readLine reads one line of r without reading past it (r is standard
// input; nothing after the answer is taken from it).
func readLine(r io.Reader) (string, error) {
	var sb strings.Builder
	b := make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				return strings.TrimSpace(sb.String()), nil
			}
			sb.WriteByte(b[0])
			if sb.Len() > 4096 {
				return "", errors.New("answer too long")
			}
		}
		if err != nil {
			if err == io.EOF && sb.Len() > 0 {
				return strings.TrimSpace(sb.String()), nil
			}
			return "", err
		}
	}
}

// yesFlags adds --yes, and --auto-approve (Terraform's name for it).
func yesFlags(cmd *cobra.Command, yes *bool) {
	cmd.Flags().BoolVar(yes, "yes", false, "approve without asking: do not ask on a terminal, and go on without one (needed to change anything when stdin is not a terminal; the plan is still printed)")
	cmd.Flags().BoolVar(yes, "auto-approve", false, "the same as --yes")
}

// color reports whether what goes to stdout may be painted: a terminal,
// and NO_COLOR (https://no-color.org) unset or empty.
func (c *cli) color() bool {
	return c.terminal(c.stdout) && os.Getenv("NO_COLOR") == ""
}

// notASpec is err, or, when the file that failed to load as a spec is a
// saved plan, what to do with one instead.
func notASpec(path string, err error) error {
	if isPlanFile(path) {
		return fmt.Errorf("%s is a plan saved by bulwark plan --out, not a spec: `bulwark show %s` shows it, `bulwark apply %s` carries it out", path, path, path)
	}
	return err
}
