package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/jsonview"
	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/stack"
	"github.com/bulwark-iac/bulwark/core/state"
)

// The views of the commands that read a stack without changing it: status,
// history, doctor, state list and state show. Each returns the command's
// exit code with its error (withExit).

// StatusView renders `bulwark status`.
type StatusView interface {
	Status(rep *inspect.StatusReport, specPath string) error
}

func newStatusView(t ViewType, v view) StatusView {
	if t == ViewJSON {
		return statusJSON{v}
	}
	return statusHuman{v}
}

type statusHuman struct{ view }

// Status prints what the stack's state and journal say. On a shared stack
// those were written by whoever ran a command, by a provider (an id), or by
// hand into the backend, so every field read from them goes through
// printable.Line, as history's do: none can drive this terminal or add a
// line of its own. (The lock's holder escapes its own: storage.Holder.)
func (v statusHuman) Status(rep *inspect.StatusReport, specPath string) error {
	w := v.out()
	l := printable.Line
	fmt.Fprintf(w, "stack %s: %d resource(s), revision %d\n", l(rep.Stack), len(rep.Resources), rep.Revision)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	var retained []string
	for _, r := range rep.Resources {
		mark := ""
		if r.Retained {
			mark, retained = "\tretained", append(retained, l(r.Name))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s%s\n", l(r.Name), l(r.Type), l(r.Provider), l(r.Protection), l(r.ID), mark)
	}
	tw.Flush()
	if len(retained) > 0 {
		fmt.Fprintf(w, "retained: %s (kept by a rollback: the current revision lacks them; no apply deletes them, `bulwark teardown %s` does under their level, `bulwark state forget` releases them)\n",
			strings.Join(retained, ", "), specPath)
	}
	if rep.LastOp != nil {
		fmt.Fprintf(w, "last operation: %s %s %s\n", l(rep.LastOp.ID), l(rep.LastOp.Type), l(rep.LastOp.Status))
	}
	for _, op := range rep.Running {
		lease := ""
		if !rep.Lock.Until.IsZero() {
			lease = ", or, if its holder died, until the lease runs out"
		}
		fmt.Fprintf(w, "running: %s (in progress: the stack is locked by %s; wait for it to end%s)\n", l(op), rep.Lock, lease)
	}
	for _, u := range rep.Unfinished {
		if rep.Lock != nil && rep.LockLive {
			// resume needs the lock: it would exit 4 now.
			fmt.Fprintf(w, "unfinished: %s (run `bulwark resume %s` once the stack's lock is free: it is held by %s)\n", l(u), specPath, rep.Lock)
			continue
		}
		fmt.Fprintf(w, "unfinished: %s (run `bulwark resume %s`)\n", l(u), specPath)
	}
	for _, u := range rep.UnknownCreates {
		what := "create"
		if u.Replace {
			what = "create (the new resource of a replace)"
		}
		fmt.Fprintf(w, "UNKNOWN CREATE: %s %s: a %s of %s, provider %s (%s), started %s: whether it exists is unknown (the provider takes no idempotency key) and resume stops here; look for it, then `bulwark import %s %s ID` if it exists or `bulwark resume %s --not-created %s` if nothing was made (an ack does not settle it)\n",
			l(u.Op), l(u.Resource), what, l(u.Type), l(u.Provider), l(u.Source), u.Started.UTC().Format(time.RFC3339), specPath, l(u.Resource), specPath, l(u.Resource))
	}
	if rep.Lock != nil && rep.LockLive && len(rep.Running) == 0 && len(rep.Unfinished) == 0 {
		fmt.Fprintf(w, "locked by %s\n", rep.Lock)
	}
	for _, i := range rep.Interventions {
		fmt.Fprintf(w, "NEEDS INTERVENTION: %s %s: %s (clear with `bulwark ack %s`)\n", l(i.Op), l(i.Resource), l(i.Error), l(i.Op))
	}
	return v.journalProblems(rep.JournalProblems)
}

type statusJSON struct{ view }

func (v statusJSON) Status(rep *inspect.StatusReport, _ string) error {
	if err := v.json(jsonview.NewStatus(rep)); err != nil {
		return err
	}
	return v.journalProblems(rep.JournalProblems)
}

// journalProblems prints each bad journal line status found, with its
// repair, and makes status exit 1: the report is whole, the journal is not.
func (v view) journalProblems(problems []string) error {
	for _, p := range problems {
		v.problem("%s", p)
	}
	if len(problems) > 0 {
		return withExit(stack.ExitError)
	}
	return nil
}

// HistoryView renders `bulwark history`.
type HistoryView interface {
	History(rep *inspect.HistoryReport) error
}

func newHistoryView(t ViewType, v view) HistoryView {
	if t == ViewJSON {
		return historyJSON{v}
	}
	return historyHuman{v}
}

type historyHuman struct{ view }

// History prints what the stack's records say. Those were written by
// whoever ran a command on a shared stack (its spec's file name, its
// user), or by hand into its backend, so every field goes through
// printable.Line: none can drive this terminal or add a line of its own.
func (v historyHuman) History(rep *inspect.HistoryReport) error {
	w := v.out()
	l := printable.Line
	fmt.Fprintln(w, "operations:")
	for _, o := range rep.Operations {
		if o.Repeated > 1 {
			// A compacted run of operations that changed nothing.
			fmt.Fprintf(w, "  %s  %-9s %-20s %s  no changes ×%d (first %s %s, last %s %s)\n", l(o.ID), l(o.Type), l(o.Status),
				o.Start.Format("2006-01-02 15:04:05"), o.Repeated, l(o.ID), o.Start.Format("2006-01-02 15:04:05"),
				l(o.LastID), o.LastStart.Format("2006-01-02 15:04:05"))
			continue
		}
		fmt.Fprintf(w, "  %s  %-9s %-20s %s%s\n", l(o.ID), l(o.Type), l(o.Status), o.Start.Format("2006-01-02 15:04:05"), byUser(o.User))
	}
	fmt.Fprintln(w, "revisions:")
	for _, r := range rep.Revisions {
		mark := " "
		if r.Current {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %3d  %-8s %s  %s  %s%s\n", mark, r.N, l(r.Status), l(r.Op), r.Time.Format("2006-01-02 15:04:05"), l(r.File), byUser(r.User))
		if len(r.Targets) > 0 {
			// As Terraform warns at the run: the revision is partial.
			fmt.Fprintf(w, "       partial: only --target %s (and what they depend on)\n", l(strings.Join(r.Targets, ", ")))
		}
		if len(r.Variables) > 0 {
			fmt.Fprintf(w, "       variables: %s\n", l(variablesLine(r.Variables)))
		}
	}
	return nil
}

// byUser is "  by USER", or "" for a record written before users were kept.
func byUser(u string) string {
	if u == "" {
		return ""
	}
	return "  by " + printable.Line(u)
}

type historyJSON struct{ view }

func (v historyJSON) History(rep *inspect.HistoryReport) error {
	return v.json(jsonview.NewHistory(rep))
}

// DoctorView renders `bulwark doctor`: exit 1 when a check failed.
type DoctorView interface {
	Doctor(checks []inspect.Check) error
}

func newDoctorView(t ViewType, v view) DoctorView {
	if t == ViewJSON {
		return doctorJSON{v}
	}
	return doctorHuman{v}
}

type doctorHuman struct{ view }

func (v doctorHuman) Doctor(checks []inspect.Check) error {
	w := v.out()
	for _, ch := range checks {
		mark := "ok  "
		if !ch.OK {
			mark = "FAIL"
		}
		// A check's detail quotes what it read (the state, the journal, a
		// plugin's answer): printed inert, as status prints them.
		fmt.Fprintf(w, "%s %-28s %s\n", mark, ch.Name, printable.Text(ch.Detail))
		if ch.Fix != "" {
			fmt.Fprintf(w, "     %-28s fix: %s\n", "", printable.Text(ch.Fix))
		}
	}
	return v.doctorExit(checks)
}

type doctorJSON struct{ view }

func (v doctorJSON) Doctor(checks []inspect.Check) error {
	if err := v.json(jsonview.NewDoctor(checks)); err != nil {
		return err
	}
	return v.doctorExit(checks)
}

func (v view) doctorExit(checks []inspect.Check) error {
	bad := 0
	for _, ch := range checks {
		if !ch.OK {
			bad++
		}
	}
	if bad > 0 {
		v.problem("doctor found %d problem(s)", bad)
		return withExit(stack.ExitError)
	}
	return nil
}

// StateView renders `bulwark state list` and `bulwark state show`.
type StateView interface {
	List(stackName string, rs []*state.Resource) error
	Show(stackName string, r *state.Resource) error
}

func newStateView(t ViewType, v view) StateView {
	if t == ViewJSON {
		return stateJSON{v}
	}
	return stateHuman{v}
}

type stateHuman struct{ view }

// List and Show print what the stack's state records: on a shared stack
// written by other people's commands, the ids and attributes by providers,
// so every field goes through printable.Line, as status's do.
func (v stateHuman) List(_ string, rs []*state.Resource) error {
	l := printable.Line
	tw := tabwriter.NewWriter(v.out(), 2, 4, 2, ' ', 0)
	for _, r := range rs {
		how := "created"
		if r.Imported {
			how = "imported"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l(r.Name), l(r.Type), l(r.Provider), r.Protection, l(r.ID), how)
	}
	return tw.Flush()
}

func (v stateHuman) Show(_ string, r *state.Resource) error {
	l := printable.Line
	tw := tabwriter.NewWriter(v.out(), 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name\t%s\ntype\t%s\nprovider\t%s (%s)\nid\t%s\nprotection\t%s\n", l(r.Name), l(r.Type), l(r.Provider), l(r.Source), l(r.ID), r.Protection)
	if len(r.DependsOn) > 0 {
		fmt.Fprintf(tw, "depends_on\t%s\n", l(strings.Join(r.DependsOn, ", ")))
	}
	switch {
	case r.Imported:
		fmt.Fprintf(tw, "origin\timported\n")
	case r.CreatedBy != "":
		fmt.Fprintf(tw, "origin\tcreated by %s\n", l(r.CreatedBy))
	}
	if r.IdempotencyKey != "" {
		fmt.Fprintf(tw, "key\t%s\n", l(r.IdempotencyKey))
	}
	// JSON escapes the C0 controls but not DEL or the C1 ones: Line does.
	for _, k := range sortedKeys(r.Config) {
		b, _ := json.Marshal(r.Config[k])
		fmt.Fprintf(tw, "config.%s\t%s\n", l(k), l(string(b)))
	}
	for _, k := range sortedKeys(r.Attributes) {
		b, _ := json.Marshal(r.Attributes[k])
		fmt.Fprintf(tw, "attributes.%s\t%s\n", l(k), l(string(b)))
	}
	return tw.Flush()
}

type stateJSON struct{ view }

func (v stateJSON) List(stackName string, rs []*state.Resource) error {
	return v.json(jsonview.NewStateList(stackName, rs))
}

func (v stateJSON) Show(stackName string, r *state.Resource) error {
	return v.json(jsonview.NewStateShow(stackName, r))
}
