package jsonview

import (
	"slices"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/plandoc"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// The plan document (`plan --json`, a saved plan's `show --json`) is
// declared once, in core/plandoc, which the web view reads a saved plan's
// document back into; these are its names here.
type (
	Plan           = plandoc.Plan
	DataRead       = plandoc.DataRead
	StackRead      = plandoc.StackRead
	VariableChange = plandoc.VariableChange
	ResourceChange = plandoc.ResourceChange
	PlanSummary    = plandoc.PlanSummary
	Move           = plandoc.Move
	Forget         = plandoc.Forget
	Refusal        = plandoc.Refusal
)

// Actions a resource change may have (ResourceChange.Action).
const (
	ActionCreate   = plandoc.ActionCreate
	ActionUpdate   = plandoc.ActionUpdate
	ActionReplace  = plandoc.ActionReplace
	ActionDelete   = plandoc.ActionDelete
	ActionImport   = plandoc.ActionImport
	ActionConflict = plandoc.ActionConflict
	ActionNoOp     = plandoc.ActionNoOp
)

// Action is a plan action's name in a document.
func Action(a plan.Action) string {
	if a == plan.NoOp {
		return ActionNoOp
	}
	return string(a)
}

// NewPlan is the document of a dry run.
func NewPlan(pv *stack.Preview) *Plan {
	out := &Plan{FormatVersion: FormatVersion, Stack: pv.Stack, ResourceChanges: []ResourceChange{}, Revision: pv.Revision, Variables: []VariableChange{},
		Targets: list(pv.Targets), Diagnostics: []Diagnostic{}}
	if len(pv.Targets) > 0 {
		out.Diagnostics = append(out.Diagnostics, Diagnostic{Severity: SeverityWarning, Message: stack.PartialWarning})
	}
	for _, v := range pv.Variables {
		out.Variables = append(out.Variables, VariableChange{Name: v.Name, Before: v.Before, After: v.After, Sensitive: v.Sensitive})
	}
	out.DataReads = []DataRead{}
	out.StackReads = []StackRead{}
	for _, r := range pv.StackReads {
		out.StackReads = append(out.StackReads, StackRead{Stack: r.Stack, Revision: r.Revision, Outputs: secrets.MaskKeys(r.Outputs, r.Sensitive), Sensitive: list(r.Sensitive), Saved: r.Saved})
	}
	out.Moves = []Move{}
	for _, m := range pv.Moves {
		out.Moves = append(out.Moves, Move{From: m.From, To: m.To, ID: m.ID, Type: m.Type})
	}
	out.Forgets = []Forget{}
	for _, f := range pv.Forgets {
		out.Forgets = append(out.Forgets, Forget{Address: f.Address, ID: f.ID, Type: f.Type, Protection: f.Protection})
	}
	for _, d := range pv.DataReads {
		out.DataReads = append(out.DataReads, DataRead{
			Address: "data." + d.Name, Name: d.Name, Type: d.Type, Provider: d.Provider,
			Attributes: secrets.MaskKeys(d.Attributes, d.Sensitive), Sensitive: list(d.Sensitive), Saved: d.Saved, DurationMS: d.DurationMS,
		})
	}
	for _, c := range pv.Changes {
		own := string(c.Ownership)
		if own == "" {
			own = "unknown"
		}
		out.ResourceChanges = append(out.ResourceChanges, ResourceChange{
			Address: c.Resource, Type: c.Type, Provider: c.Provider, Action: Action(c.Action),
			Protection: c.Protection.String(), Ownership: own, ProtectionFrom: protectionFrom(c.Change),
			Before:   secrets.MaskKeys(c.Before, c.Sensitive),
			After:    secrets.MaskKeys(c.After, c.Sensitive),
			Observed: secrets.MaskKeys(c.Observed, c.Sensitive),
			ForceNew: list(c.ForceNew), Drifted: list(c.Drifted), Changed: list(c.Changed), Drift: list(c.Change.Drift), Sensitive: list(c.Sensitive), Unknown: list(c.Unknown),
			Remote: c.Remote, Vanished: c.Vanished, Note: c.Drift, ImportID: c.ImportID, FoundID: c.FoundID,
			Owner: c.Owner, Reason: c.Reason, Importable: c.Importable, Retained: c.Retained,
			NoIdempotencyKeys: c.Keyless,
			ReplaceMode:       string(c.Mode), ReplaceRequested: c.Requested, DataLoss: c.LosesData(),
		})
		s := &out.Summary
		switch c.Action {
		case plan.Create:
			s.Create++
		case plan.Update:
			s.Update++
		case plan.Replace:
			s.Replace++
		case plan.Delete:
			s.Delete++
		case plan.Import:
			s.Import++
		case plan.Conflict:
			s.Conflict++
		default:
			s.NoOp++
		}
	}
	out.Summary.HasChanges = pv.HasChanges()
	if r := pv.Refused; r != nil {
		names := slices.Concat([]string{}, r.Resources, r.Gone)
		for _, d := range r.Durable {
			names = append(names, d.Resource)
		}
		out.Refused = &Refusal{Operation: r.Op, Resources: names, Message: r.Error()}
	}
	if c := pv.Conflict; c != nil {
		names := []string{}
		for _, ch := range c.Conflicts {
			names = append(names, ch.Resource)
		}
		out.Conflict = &Refusal{Operation: c.Op, Resources: names, Message: c.Error()}
	}
	return out
}

// protectionFrom is the level a change of protection changes from, or "".
func protectionFrom(c plan.Change) string {
	if c.ProtectionFrom == protection.Unspecified {
		return ""
	}
	return c.ProtectionFrom.String()
}

// RefreshPlan is `bulwark plan --refresh-only --json`: what a refresh-only
// apply would record of each resource the state records. (Added in 1.0,
// additively.)
type RefreshPlan struct {
	FormatVersion string            `json:"format_version"`
	Stack         string            `json:"stack"`
	RefreshOnly   bool              `json:"refresh_only"`
	Resources     []stack.Refreshed `json:"resource_changes"`
	HasChanges    bool              `json:"has_changes"`
	Targets       []string          `json:"targets"`
	Diagnostics   []Diagnostic      `json:"diagnostics"`
}

// NewRefreshPlan is the document of a refresh-only plan.
func NewRefreshPlan(pv *stack.RefreshPreview) *RefreshPlan {
	out := &RefreshPlan{FormatVersion: FormatVersion, Stack: pv.Stack, RefreshOnly: true, Resources: list(pv.Resources),
		HasChanges: pv.HasChanges(), Targets: list(pv.Targets), Diagnostics: []Diagnostic{}}
	if len(pv.Targets) > 0 {
		out.Diagnostics = append(out.Diagnostics, Diagnostic{Severity: SeverityWarning, Message: stack.PartialWarning})
	}
	return out
}
