// Package planview draws a dry run for a person: `bulwark plan`, `apply
// --dry-run`, a saved plan's `show` and the plan an apply or a rollback
// asks to review. Core hands the plan over as data (stack.Preview); this
// view turns it into text, in the colours and marks it shares with the
// progress view (internal/style). The --json document is internal/jsonview's.
package planview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/cmd/bulwark/internal/style"
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// Render writes the plan for a person: one block per resource (marked
// "+" create, "~" update in place, "+/-" replace creating the new one first,
// "-/+" replace deleting the old one first, "-" delete, "=" no change)
// with the attribute values before and after, sensitive ones shown as
// "(sensitive)", then a one-line summary. In colour when color is set (a
// terminal without NO_COLOR): each resource's mark and action, its diff's
// marks, and the refusals.
//
// The text is written in one Write: a plan of N resources is N lines or
// more, and a write a line was a system call a line (1,000 of them before
// an apply of 1,000 starts), each redacted alone by the caller's writer.
//
// It returns the write's error: a plan that could not be shown (stdout on
// a full disk, a closed pipe) must not pass for one that was.
// KeylessNote marks the resource types of a provider that takes no
// idempotency key (one built for Terraform), in plan and providers.
const KeylessNote = "no idempotency keys: an interrupted create stops resume for a person"

// Unchanged resources (no change, no drift to note, not retained) are not
// listed, as Terraform lists only what changes: a line after the changes
// counts them ("… and 297 unchanged"), and the summary counts them too.
// RenderWith with ShowUnchanged lists every resource.
func Render(w io.Writer, p *stack.Preview, color bool) error {
	return RenderWith(w, p, Options{Color: color})
}

// Options say how Render draws a plan.
type Options struct {
	Color         bool // paint: a terminal without NO_COLOR
	ShowUnchanged bool // list the unchanged resources too (--show-unchanged)
}

// RenderWith is Render with its options.
func RenderWith(w io.Writer, p *stack.Preview, o Options) error {
	var b bytes.Buffer
	render(&b, p, o.Color, o.ShowUnchanged)
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write the plan: %w", err)
	}
	return nil
}

func render(w *bytes.Buffer, p *stack.Preview, color, all bool) {
	paint := func(code, s string) string { return style.Paint(color, code, s) }
	if p.Running != nil {
		fmt.Fprintf(w, "%s the stack is locked by %s: an operation is in progress, and reality may change while it runs (`bulwark status` follows it)\n\n", paint(style.Yellow, "note:"), p.Running)
	}
	// Data entries first: they were read before anything was decided.
	for _, d := range p.DataReads {
		fmt.Fprintf(w, "%s data.%s (%s)\n", paint(style.Cyan, "<=  read"), ln(d.Name), ln(d.Type))
		if d.Saved {
			fmt.Fprintf(w, "    note: as read when the plan was made; applying it reads nothing again\n")
		}
	}
	// Other stacks' outputs were read with the data.
	for _, r := range p.StackReads {
		fmt.Fprintf(w, "%s stack.%s (revision %d): %s\n", paint(style.Cyan, "<=  read"), ln(r.Stack), r.Revision, ln(strings.Join(slices.Sorted(maps.Keys(r.Outputs)), ", ")))
		if r.Saved {
			fmt.Fprintf(w, "    note: as read when the plan was made; applying it reads nothing again\n")
		}
	}
	// Then what the spec's moved: and removed: entries do to the state,
	// which an apply does before anything else.
	for _, m := range p.Moves {
		fmt.Fprintf(w, "%s %s -> %s (%s, id %s)\n", paint(style.Cyan, fmt.Sprintf("%-3s %-10s", "->", "move")), ln(m.From), ln(m.To), ln(m.Type), ln(m.ID))
	}
	for _, f := range p.Forgets {
		fmt.Fprintf(w, "%s %s (%s, %s, id %s)\n", paint(style.Yellow, fmt.Sprintf("%-3s %-10s", "-/", "forget")), ln(f.Address), ln(f.Type), f.Protection, ln(f.ID))
		fmt.Fprintf(w, "    note: removed with destroy: false: no longer managed by this stack; the resource itself is kept\n")
	}
	counts := map[plan.Action]int{}
	hidden := 0
	for _, c := range p.Changes {
		if !c.Retained || c.Action != plan.NoOp {
			counts[c.Action]++ // a retained one is counted as retained
		}
		if !all && quiet(c) {
			hidden++
			continue
		}
		sym := style.PlanMark(c.Action, c.Mode)
		label := string(c.Action)
		code := style.ActionColor(c.Action)
		switch {
		case c.Action == plan.NoOp && c.Retained:
			label, code = "retained", style.Yellow
			counts[plan.Retain]++
		case c.Action == plan.NoOp:
			label = "no change"
		}
		fmt.Fprintf(w, "%s %s (%s, %s)\n", paint(code, fmt.Sprintf("%-3s %-10s", sym, label)), ln(c.Resource), ln(c.Type), c.Protection)
		if c.Vanished {
			fmt.Fprintf(w, "    %s\n", paint(style.Red, fmt.Sprintf("!!! %s resource %s has vanished: its data may be lost; it will be created again, empty", strings.ToUpper(c.Protection.String()), ln(c.Resource))))
		} else if c.Drift != "" {
			fmt.Fprintf(w, "    note: %s\n", ln(c.Drift))
		}
		if c.Action == plan.Replace {
			fmt.Fprintf(w, "    note: %s\n", ln(replaceNote(c.Change)))
			if c.LosesData() {
				fmt.Fprintf(w, "    %s\n", paint(style.Red, fmt.Sprintf("!!! %s resource %s will be replaced: its data will be deleted", strings.ToUpper(c.Protection.String()), ln(c.Resource))))
			}
		}
		if c.Action == plan.NoOp || c.Action == plan.Conflict || c.Action == plan.Retain {
			continue
		}
		for _, line := range diffLines(c) {
			if color {
				mark, rest, _ := strings.Cut(line, " ")
				line = paint(diffColor(mark), mark) + " " + rest
			}
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	if hidden > 0 {
		fmt.Fprintf(w, "%s\n", paint(style.Dim, fmt.Sprintf("… and %d unchanged (--show-unchanged lists them)", hidden)))
	}
	if len(p.Variables) > 0 {
		fmt.Fprintf(w, "\nVariables changed since revision %d:\n", p.Revision)
		for _, v := range p.Variables {
			switch {
			case v.Before == nil:
				fmt.Fprintf(w, "  + %s = %s\n", ln(v.Name), shownValue(v.After))
			case v.After == nil:
				fmt.Fprintf(w, "  - %s = %s\n", ln(v.Name), shownValue(v.Before))
			default:
				fmt.Fprintf(w, "  ~ %s: %s -> %s\n", ln(v.Name), shownValue(v.Before), shownValue(v.After))
			}
		}
	}
	var keyless []string
	for _, c := range p.Changes {
		if c.Keyless && !slices.Contains(keyless, c.Type) {
			keyless = append(keyless, c.Type)
		}
	}
	if len(keyless) > 0 {
		slices.Sort(keyless)
		fmt.Fprintf(w, "\n%s %s: %s\n", paint(style.Yellow, "note:"), ln(strings.Join(keyless, ", ")), KeylessNote)
	}
	if p.Refused != nil {
		fmt.Fprintf(w, "\n%s %s\n", paint(style.Red, "REFUSED:"), printable.Text(p.Refused.Error()))
	}
	if p.Conflict != nil {
		fmt.Fprintf(w, "\n%s %s\n", paint(style.Red, "CONFLICT:"), printable.Text(p.Conflict.Error()))
	}
	fmt.Fprintf(w, "\nPlan: %d to create, %d to update, %d to replace, %d to delete, %d unchanged",
		counts[plan.Create], counts[plan.Update], counts[plan.Replace], counts[plan.Delete], counts[plan.NoOp])
	if n := counts[plan.Import]; n > 0 {
		fmt.Fprintf(w, ", %d to import", n)
	}
	if n := counts[plan.Conflict]; n > 0 {
		fmt.Fprintf(w, ", %d in conflict", n)
	}
	if n := counts[plan.Retain]; n > 0 {
		fmt.Fprintf(w, ", %d retained", n)
	}
	if n := len(p.Moves); n > 0 {
		fmt.Fprintf(w, ", %d to move", n)
	}
	if n := len(p.Forgets); n > 0 {
		fmt.Fprintf(w, ", %d to forget", n)
	}
	fmt.Fprintln(w, ".")
	if len(p.Targets) > 0 {
		fmt.Fprintf(w, "\n%s %s (--target %s)\n", paint(style.Yellow, "Warning:"), stack.PartialWarning, strings.Join(p.Targets, ", "))
	}
}

// quiet reports whether a plan entry goes unlisted unless --show-unchanged:
// no change, and nothing to say about it (no drift note, not vanished, not
// retained).
func quiet(c stack.Planned) bool {
	return c.Action == plan.NoOp && !c.Retained && c.Drift == "" && !c.Vanished
}

// diffColor is the colour of a diff line's mark: the colour of the action
// it stands for ("+" added, "~" changed, "-" removed).
func diffColor(mark string) string {
	switch mark {
	case "+":
		return style.ActionColor(plan.Create)
	case "~":
		return style.ActionColor(plan.Update)
	case "-":
		return style.ActionColor(plan.Delete)
	}
	return ""
}

// diffLines renders the attribute changes of one resource. The "before"
// side is what the provider observed when it has it, else the recorded
// config.
func diffLines(c stack.Planned) []string {
	before := c.Before
	if c.Observed != nil && c.Action != plan.Create {
		before = map[string]any{}
		for k := range c.After {
			if v, ok := c.Observed[k]; ok {
				before[k] = v
			}
		}
		for k, v := range c.Before {
			if _, ok := before[k]; !ok {
				if ov, ok := c.Observed[k]; ok {
					before[k] = ov
				} else {
					before[k] = v
				}
			}
		}
	}
	if c.Action == plan.Create {
		before = nil
	}
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range c.After {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	sensitive := map[string]bool{}
	for _, s := range c.Sensitive {
		sensitive[s] = true
	}
	forceNew := map[string]bool{}
	for _, k := range c.ForceNew {
		forceNew[k] = true
	}
	show := func(k string, v any) string {
		if sensitive[k] {
			return "(sensitive)"
		}
		if _, later := v.(plan.AfterApply); later {
			return plan.UnknownText
		}
		return shownValue(v)
	}
	var out []string
	for _, k := range names {
		old, hadOld := before[k]
		nw, hasNew := c.After[k]
		if c.Action == plan.Delete {
			hasNew = false
		}
		suffix := ""
		if forceNew[k] {
			suffix = " (forces replacement)"
		}
		switch {
		case hadOld && hasNew && plan.Equal(old, nw):
			continue
		case hadOld && hasNew:
			out = append(out, fmt.Sprintf("~ %s: %s -> %s%s", ln(k), show(k, old), show(k, nw), suffix))
		case hasNew:
			out = append(out, fmt.Sprintf("+ %s = %s%s", ln(k), show(k, nw), suffix))
		case hadOld:
			out = append(out, fmt.Sprintf("- %s = %s%s", ln(k), show(k, old), suffix))
		}
	}
	if c.ProtectionFrom != protection.Unspecified && c.Action != plan.Create && c.Action != plan.Delete {
		// The old level and the new: a change of protection is what the
		// ladder reads, so it is said as one, not as a config diff.
		out = append(out, fmt.Sprintf("~ protection %s → %s", c.ProtectionFrom, c.ProtectionTo))
	}
	return out
}

// ln is one field of a plan's line as the view prints it: what a plan
// names comes from the state and the providers' reads as much as from the
// spec (on a shared stack a teammate's command, or a hand in the backend,
// wrote them), so its control characters are written as escapes.
func ln(s string) string { return printable.Line(s) }

// shownValue is a value as a plan shows it: JSON, a masked one as it is.
// JSON escapes the C0 controls but not DEL or the C1 ones, and a value
// (from the state, a provider's read, a teammate's spec) reaches the
// terminal: printable.Line escapes those too.
func shownValue(v any) string {
	if s, ok := v.(string); ok && s == secrets.Mask {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ln(fmt.Sprint(v))
	}
	return ln(string(b))
}

// replaceNote says in words how a replace goes and why.
func replaceNote(c plan.Change) string {
	why := "replaced because " + c.Reasons() + " changed"
	switch {
	case len(c.ForceNew) > 0 && c.ForceNew[0] == "(type or provider)":
		why = "replaced because its type or provider changed"
	case len(c.ForceNew) == 0 && c.Requested:
		why = "replaced as --replace asks"
	}
	if c.Mode == plan.CreateFirst {
		return why + "; the new one is created first, the old one deleted once every other step succeeded"
	}
	return why + "; the two cannot exist at once, so the old one is deleted first"
}
