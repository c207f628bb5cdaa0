package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bulwark-iac/bulwark/core/engine"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// report prints how an operation ended and returns its exit code. It
// paints nothing, and every line may name what the state records (a
// teammate's, on a shared stack) or quote a provider, so it writes through
// inertWriter.
func (c *cli) report(res *stack.Result, specPath string) error {
	out := inertWriter{c.stdout}
	code := withExit(stack.ExitCode(res, nil))
	if c.streaming {
		// The operation's end line on stdout said how it ended; its
		// errors, one bounded line each, go to stderr as always.
		c.errorLines(res.Err)
		return code
	}
	r := res.Run
	switch res.Outcome {
	case engine.Succeeded:
		if len(res.Left) > 0 {
			// Not "reality matches": something the spec names is still
			// there, and it is not this stack's to delete.
			fmt.Fprintf(out, "%s complete: %s. Left alone, because this stack does not own them (bulwark deletes only what its state records):\n",
				title(res.Type), teardownCounts(res))
			for _, l := range res.Left {
				fmt.Fprintf(out, "  %s: %s\n", l.Resource, c.red.Redact(l.Reason))
			}
			break
		}
		if res.Type == stack.OpRefresh {
			fmt.Fprintf(out, "Refresh complete: %d record(s) changed to what reality holds, %d unchanged. Nothing in reality was changed.\n",
				res.Changed, res.Unchanged)
			break
		}
		if res.Type == "teardown" && len(res.Targets) > 0 {
			fmt.Fprintf(out, "Teardown complete: %s (targeted: %s).\n", teardownCounts(res), strings.Join(res.Targets, ", "))
		} else if res.Type == "teardown" {
			// A teardown does not make reality match the spec: it
			// removes what the state records. Say what it did.
			fmt.Fprintf(out, "Teardown complete: %s. The state records no resource now.\n", teardownCounts(res))
		} else if len(res.Targets) > 0 {
			// Only the targets were looked at: nothing is known of the rest.
			fmt.Fprintf(out, "%s complete: %d changed, %d already in place (targeted: %s).\n",
				title(res.Type), res.Changed, res.Unchanged, strings.Join(res.Targets, ", "))
		} else {
			fmt.Fprintf(out, "%s complete: %d changed, %d already in place. Reality matches the spec.\n",
				title(res.Type), res.Changed, res.Unchanged)
		}
		c.retainedLine(res, specPath)
		if len(res.Outputs) > 0 {
			fmt.Fprintln(out, "\nOutputs:")
			renderOutputs(c.red.Writer(out), res.Outputs)
		}
	case engine.Compensated:
		switch {
		case r.Interrupted:
			fmt.Fprintf(out, "%s was interrupted and was rolled back%s.\n", title(res.Type), undoneList(res))
			if len(r.Blocked) > 0 {
				fmt.Fprintf(out, "Not started: %s.\n", strings.Join(r.Blocked, ", "))
			}
		case len(r.Failed) > 0:
			fmt.Fprintf(out, "%s failed at %s and was rolled back.\n", title(res.Type), strings.Join(r.Failed, ", "))
		case errors.Is(res.Err, engine.ErrInterrupted):
			// resume finishing the rollback an interrupt (two Ctrl-Cs)
			// stopped: the operation did not fail, and its outcome is
			// the one a single Ctrl-C gives, rolled back (exit 11), which
			// is said, so the code does not read as resume's failure.
			// What the rollback had already undone before it was stopped
			// shows as "nothing to undo" above.
			fmt.Fprintf(out, "%s %s was interrupted earlier; resume finished its rollback%s. The stack is as it was before that %s: it was rolled back (exit 11).\n",
				title(res.Type), res.Op, undoneList(res), res.Type)
		default:
			fmt.Fprintf(out, "%s %s failed earlier; its rollback is now complete.\n", title(res.Type), res.Op)
		}
		if len(res.Preserved) > 0 {
			fmt.Fprintf(out, "Kept, because they hold data: %s (still recorded in the state).\n", strings.Join(res.Preserved, ", "))
		}
		c.retainedLine(res, specPath)
		c.errorLines(res.Err)
	case engine.RollbackIncomplete:
		if r.Interrupted || errors.Is(res.Err, engine.ErrInterrupted) {
			// A second interrupt stopped the rollback where it was: that
			// is safe, the journal records it, and resume finishes it.
			fmt.Fprintf(out, "%s was interrupted, and its rollback was stopped before it finished%s.\n"+
				"Nothing is lost: the journal records where it stopped. Run `bulwark resume %s` to finish the rollback (other operations refuse until then).\n",
				title(res.Type), undoneList(res), specPath)
		} else {
			fmt.Fprintf(out, "%s failed and its rollback is incomplete. Run `bulwark resume %s` to retry it.\n", title(res.Type), specPath)
		}
		c.errorLines(res.Err)
	case engine.NeedsIntervention:
		fmt.Fprintf(out, "%s stopped: %s failed and needs a person. Nothing was undone.\nFix it, then run `bulwark ack %s`.\n",
			title(res.Type), strings.Join(r.Failed, ", "), res.Op)
		c.errorLines(res.Err)
	case engine.Unfinished:
		fmt.Fprintf(out, "%s %s: its outcome (%s) could not be recorded, so it is unfinished. Run `bulwark resume %s` to finish it.\n",
			title(res.Type), res.Op, r.Reached, specPath)
		c.errorLines(res.Err)
	default:
		switch {
		case res.ChangedNothing():
			// Failed before any resource step ran (an update's own verify,
			// say, when a plugin died): no policy kept anything back.
			fmt.Fprintf(out, "%s failed at %s before changing anything: nothing to roll back.\n", title(res.Type), strings.Join(r.Failed, ", "))
		case thisRunChangedNothing(res):
			// A resume that failed before its own first step: the
			// operation's interrupted earlier part did change things.
			fmt.Fprintf(out, "%s failed at %s before this run changed anything; its interrupted earlier part had changed %d resource(s) (%s), which were not rolled back: the state records them as they are. Fix the cause, then run `bulwark apply %s` to finish, or `bulwark rollback %s` to go back.\n",
				title(res.Type), strings.Join(r.Failed, ", "), len(res.Inherited), shortList(res.Inherited, 5), specPath, specPath)
		default:
			fmt.Fprintf(out, "%s failed: %s (not rolled back: on_failure policy).\n", title(res.Type), strings.Join(r.Failed, ", "))
		}
		if len(r.Blocked) > 0 {
			why := ""
			if r.Interrupted {
				why = " (interrupted)"
			}
			fmt.Fprintf(out, "Not started%s: %s.\n", why, strings.Join(r.Blocked, ", "))
		}
		c.errorLines(res.Err)
	}
	c.partialWarning(res.Targets)
	return code
}

// partialWarning is Terraform's warning at the end of a targeted run, on
// stdout with the rest of what a person reads.
func (c *cli) partialWarning(targets []string) {
	if len(targets) > 0 {
		fmt.Fprintf(c.stdout, "\nWarning: %s (--target %s)\n", stack.PartialWarning, strings.Join(targets, ", "))
	}
}

// retainedLine names what the operation kept as retained (see the ladder:
// no rollback destroys data), and what ends it.
func (c *cli) retainedLine(res *stack.Result, specPath string) {
	if len(res.Retained) == 0 {
		return
	}
	fmt.Fprintf(inertWriter{c.stdout}, "Kept, retained: %s (they hold data and the revision it went back to lacks them: still this stack's, listed by status and plan, never deleted by an apply; `bulwark teardown %s` deletes them under their level, `bulwark state forget` releases them).\n",
		strings.Join(res.Retained, ", "), specPath)
}

// thisRunChangedNothing reports whether the run itself executed no
// resource step (what an interrupted earlier part of the operation did
// aside).
func thisRunChangedNothing(res *stack.Result) bool {
	for _, id := range res.Run.Executed {
		if !strings.Contains(id, ":") {
			return false
		}
	}
	return true
}

// shortList is names joined, the first n of them and how many more.
func shortList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
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
		fmt.Fprintf(c.stderr, "bulwark: %s\n", printable.Text(c.red.Redact(l)))
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
		shown := ids[:0]
		for _, id := range ids {
			// The interruption itself is the report's headline, not a
			// failure of a step.
			if !(id == "(not started)" && errors.Is(failures[id], engine.ErrInterrupted)) {
				shown = append(shown, id)
			}
		}
		ids = shown
		for i, id := range ids {
			if i == maxErrorLines-1 && len(ids) > maxErrorLines {
				lines = append(lines, fmt.Sprintf("%s… and %d more: %s", prefix, len(ids)-i, strings.Join(ids[i:], ", ")))
				lines[len(lines)-1] = bound(lines[len(lines)-1])
				break
			}
			msg := failures[id].Error()
			if errors.Is(failures[id], context.Canceled) {
				msg = "stopped by the interrupt before it finished (resume finishes it)"
			}
			lines = append(lines, bound(prefix+id+": "+msg))
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

// teardownCounts says what a teardown that succeeded did: "3 deleted", and
// the resources whose delete it skipped (already gone: a resumed teardown's
// earlier part deleted them) when there were any. A teardown keeps nothing
// it owns: a protected resource refuses the whole teardown before anything
// is deleted, and a durable one is deleted with the rest.
func teardownCounts(res *stack.Result) string {
	s := fmt.Sprintf("%d deleted", res.Changed)
	if res.Unchanged > 0 {
		s += fmt.Sprintf(", %d already gone", res.Unchanged)
	}
	return s
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// undoneList says what a rollback undid and what it left undone, for the
// report's headline (" (undone: a; not yet undone: b)", or ""): the rollback's
// targets less what it kept, split by whether their undo failed or was cut
// short.
func undoneList(res *stack.Result) string {
	var rb *engine.RollbackError
	errors.As(res.Err, &rb)
	var undone, pending []string
	for _, id := range res.Run.Rollback {
		if slices.Contains(res.Preserved, id) || strings.Contains(id, ":") {
			continue // kept (said below), or an update's own step
		}
		if rb != nil && rb.Failures[id] != nil {
			pending = append(pending, id)
		} else {
			undone = append(undone, id)
		}
	}
	// The names come after a label, never before a verb: "a undone"
	// read as an article and a word.
	var parts []string
	if len(undone) > 0 {
		parts = append(parts, "undone: "+strings.Join(undone, ", "))
	}
	if len(pending) > 0 {
		parts = append(parts, "not yet undone: "+strings.Join(pending, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// inertWriter writes each Write's text through printable.Text (newlines
// and tabs kept, every other control character written as an escape), for
// a view that paints nothing: fmt's Fprintf hands it one whole line at a
// time, so no escape sequence can be split across two writes.
type inertWriter struct{ w io.Writer }

func (i inertWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(i.w, printable.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
