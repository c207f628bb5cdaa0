package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/secrets"
)

// Render writes the preview for a person: one block per resource (marked
// "+" create, "~" update in place, "+/-" replace creating the new one first,
// "-/+" replace deleting the old one first, "-" delete, "=" no change)
// with the attribute values before and after, sensitive ones shown as
// "(sensitive)", then a one-line summary.
func (p *Preview) Render(w io.Writer) error { return p.RenderColor(w, false) }

// The ANSI codes of the plan's colours. Render is the one renderer left in
// core: it writes only to the io.Writer its caller passes (cmd/bulwark's
// plan view), never to a stream of its own.
const (
	ansiReset  = "\033[0m"
	ansiGreen  = "\033[32m"
	ansiRed    = "\033[31m"
	ansiYellow = "\033[33m"
	ansiDim    = "\033[2m"
	ansiCyan   = "\033[36m"
)

// planColors paint each action's mark, as apply's progress paints its lines
// (and Terraform its plan): green adds, yellow changes, red deletes.
var planColors = map[plan.Action]string{plan.Create: ansiGreen, plan.Update: ansiYellow, plan.Replace: ansiRed,
	plan.Delete: ansiRed, plan.NoOp: ansiDim, plan.Import: ansiCyan, plan.Conflict: ansiRed, plan.Retain: ansiYellow}

// RenderColor is Render, in colour when color is set (a terminal without
// NO_COLOR): each resource's mark and action, its diff's marks, and the
// refusals.
//
// The text is written in one Write: a plan of N resources is N lines or
// more, and a write a line was a system call a line (1,000 of them before
// an apply of 1,000 starts), each redacted alone by the caller's writer.
//
// It returns the write's error: a plan that could not be shown (stdout on
// a full disk, a closed pipe) must not pass for one that was.
func (p *Preview) RenderColor(w io.Writer, color bool) error {
	var b bytes.Buffer
	p.render(&b, color)
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write the plan: %w", err)
	}
	return nil
}

// planMarks are the marks of each action.
var planMarks = map[plan.Action]string{plan.Create: "+", plan.Update: "~", plan.Replace: "-/+", plan.Delete: "-", plan.NoOp: "=",
	plan.Import: "<=", plan.Conflict: "!", plan.Retain: "="}

func (p *Preview) render(w *bytes.Buffer, color bool) {
	paint := func(code, s string) string {
		if !color || code == "" {
			return s
		}
		return code + s + ansiReset
	}
	if p.Running != nil {
		fmt.Fprintf(w, "%s the stack is locked by %s: an operation is in progress, and reality may change while it runs (`bulwark status` follows it)\n\n", paint(ansiYellow, "note:"), p.Running)
	}
	counts := map[plan.Action]int{}
	for _, c := range p.Changes {
		if !c.Retained || c.Action != plan.NoOp {
			counts[c.Action]++ // a retained one is counted as retained
		}
		sym := planMarks[c.Action]
		if c.Action == plan.Replace && c.Mode == plan.CreateFirst {
			sym = "+/-"
		}
		label := string(c.Action)
		code := planColors[c.Action]
		switch {
		case c.Action == plan.NoOp && c.Retained:
			label, code = "retained", ansiYellow
			counts[plan.Retain]++
		case c.Action == plan.NoOp:
			label = "no change"
		}
		fmt.Fprintf(w, "%s %s (%s, %s)\n", paint(code, fmt.Sprintf("%-3s %-10s", sym, label)), c.Resource, c.Type, c.Protection)
		if c.Vanished {
			fmt.Fprintf(w, "    %s\n", paint(ansiRed, fmt.Sprintf("!!! %s resource %s has vanished: its data may be lost; it will be created again, empty", strings.ToUpper(c.Protection.String()), c.Resource)))
		} else if c.Drift != "" {
			fmt.Fprintf(w, "    note: %s\n", c.Drift)
		}
		if c.Action == plan.Replace {
			fmt.Fprintf(w, "    note: %s\n", replaceNote(c.Change))
			if c.LosesData() {
				fmt.Fprintf(w, "    %s\n", paint(ansiRed, fmt.Sprintf("!!! %s resource %s will be replaced: its data will be deleted", strings.ToUpper(c.Protection.String()), c.Resource)))
			}
		}
		if c.Action == plan.NoOp || c.Action == plan.Conflict || c.Action == plan.Retain {
			continue
		}
		for _, line := range diffLines(c) {
			if color {
				mark, rest, _ := strings.Cut(line, " ")
				line = paint(map[string]string{"+": ansiGreen, "~": ansiYellow, "-": ansiRed}[mark], mark) + " " + rest
			}
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	if len(p.Variables) > 0 {
		fmt.Fprintf(w, "\nVariables changed since revision %d:\n", p.Revision)
		for _, v := range p.Variables {
			switch {
			case v.Before == nil:
				fmt.Fprintf(w, "  + %s = %s\n", v.Name, shownValue(v.After))
			case v.After == nil:
				fmt.Fprintf(w, "  - %s = %s\n", v.Name, shownValue(v.Before))
			default:
				fmt.Fprintf(w, "  ~ %s: %s -> %s\n", v.Name, shownValue(v.Before), shownValue(v.After))
			}
		}
	}
	if p.Refused != nil {
		fmt.Fprintf(w, "\n%s %v\n", paint(ansiRed, "REFUSED:"), p.Refused)
	}
	if p.Conflict != nil {
		fmt.Fprintf(w, "\n%s %v\n", paint(ansiRed, "CONFLICT:"), p.Conflict)
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
	fmt.Fprintln(w, ".")
}

// diffLines renders the attribute changes of one resource. The "before"
// side is what the provider observed when it has it, else the recorded
// config.
func diffLines(c Planned) []string {
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
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
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
			out = append(out, fmt.Sprintf("~ %s: %s -> %s%s", k, show(k, old), show(k, nw), suffix))
		case hasNew:
			out = append(out, fmt.Sprintf("+ %s = %s%s", k, show(k, nw), suffix))
		case hadOld:
			out = append(out, fmt.Sprintf("- %s = %s%s", k, show(k, old), suffix))
		}
	}
	return out
}

// shownValue is a value as a plan shows it: JSON, a masked one as it is.
func shownValue(v any) string {
	if s, ok := v.(string); ok && s == secrets.Mask {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
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
