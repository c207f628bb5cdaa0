// Package style is what the human views share: the ANSI colours and the
// mark of each action, so a plan (internal/planview) and an operation's
// progress (internal/progressview) paint a create, an update or a delete
// alike. It draws nothing itself.
package style

import "github.com/bulwark-iac/bulwark/core/plan"

// The ANSI codes the views paint with. Colour is used only on a terminal
// without NO_COLOR: the caller decides, and passes it to Paint.
const (
	Reset  = "\033[0m"
	Green  = "\033[32m"
	Red    = "\033[31m"
	Yellow = "\033[33m"
	Dim    = "\033[2m"
	Cyan   = "\033[36m"
	// ClearLine returns to the start of the line and clears it: the live
	// status line's redraw.
	ClearLine = "\r\033[K"
)

// Paint is s in the colour code when color is set, else s as it is (an
// empty code paints nothing).
func Paint(color bool, code, s string) string {
	if !color || code == "" {
		return s
	}
	return code + s + Reset
}

// PlanMark is the mark a plan shows for an action: "+" create, "~" update,
// "-/+" a replace that deletes the old one first and "+/-" one that creates
// the new one first (mode), "-" delete, "=" no change or retained, "<="
// import, "!" conflict; "" for an action it does not know.
func PlanMark(a plan.Action, mode plan.ReplaceMode) string {
	switch a {
	case plan.Create:
		return "+"
	case plan.Update:
		return "~"
	case plan.Replace:
		if mode == plan.CreateFirst {
			return "+/-"
		}
		return "-/+"
	case plan.Delete:
		return "-"
	case plan.NoOp, plan.Retain:
		return "="
	case plan.Import:
		return "<="
	case plan.Conflict:
		return "!"
	}
	return ""
}

// ActionColor is an action's colour, as Terraform paints its plan: green
// adds, yellow changes or keeps, red deletes, replaces or refuses, cyan
// imports, dim checks; "" for an action it does not know.
func ActionColor(a plan.Action) string {
	switch a {
	case plan.Create:
		return Green
	case plan.Update, plan.Retain:
		return Yellow
	case plan.Replace, plan.Delete, plan.Conflict:
		return Red
	case plan.NoOp:
		return Dim
	case plan.Import:
		return Cyan
	}
	return ""
}

// StepMark is the mark of a step's line in an operation's progress: a
// create, update or delete as the plan marks it, "±" a replace (one column:
// the progress line does not say which of the two goes first; the plan
// above it did), "✓" verify, "=" preserve, "!" refuse; "" for a step it
// does not know.
func StepMark(action string) string {
	switch action {
	case string(plan.Create), string(plan.Update), string(plan.Delete):
		return PlanMark(plan.Action(action), "")
	case string(plan.Replace):
		return "±"
	case "verify":
		return "✓"
	case "preserve":
		return "="
	case "refuse":
		return "!"
	case "move":
		return "->" // as the plan marks a moved: entry
	}
	return ""
}
