package jsonview

import (
	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/secrets"
	"github.com/bulwark-iac/bulwark/core/stack"
)

// Plan is `bulwark plan --json` (and a saved plan's `show --json`): what an
// apply of the spec would do, resource by resource, with counts.
type Plan struct {
	FormatVersion   string           `json:"format_version"`
	Stack           string           `json:"stack"`
	ResourceChanges []ResourceChange `json:"resource_changes"`
	Summary         PlanSummary      `json:"summary"`
	// Refused is the protection ladder's refusal (an apply exits 3), or nil.
	Refused *Refusal `json:"refused"`
	// Conflict is ownership's refusal (an apply exits 1), or nil.
	Conflict *Refusal `json:"conflict"`
	// Revision is the stack's current revision (0: none); Variables are
	// the variables whose values differ from the ones it was applied with.
	Revision  int              `json:"revision"`
	Variables []VariableChange `json:"variables"`
	// DataReads are the spec's data entries the plan read, in the spec's
	// order. (Added in 1.0, additively.)
	DataReads []DataRead `json:"data_reads"`
	// StackReads are the other stacks whose outputs the plan read
	// (${stack.NAME.outputs.X}), in the order first referenced. (Added in
	// 1.0, additively.)
	StackReads []StackRead `json:"stack_reads"`
	// Moves are the renames the spec's moved: entries make in the state,
	// Forgets the records its removed: entries (destroy: false) drop,
	// keeping their objects; an apply does both first. (Added in 1.0,
	// additively.)
	Moves   []stack.Move   `json:"moves"`
	Forgets []stack.Forget `json:"forgets"`
	// Targets are the plan's --target addresses ([] when it covers the
	// whole spec); Diagnostics then holds the warning that it is partial.
	// (Added in 1.0, additively.)
	Targets     []string     `json:"targets"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// DataRead is one data entry the plan read: its attributes (arguments and
// results), sensitive ones secrets.Mask.
type DataRead struct {
	Address    string         `json:"address"` // data.NAME
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Provider   string         `json:"provider"`
	Attributes map[string]any `json:"attributes"`
	Sensitive  []string       `json:"sensitive"`
	// Saved: the values a saved plan recorded (show FILE), not read again.
	Saved bool `json:"saved"`
	// DurationMS is how long the read took; 0 for values not read by this
	// command (show FILE). (Added in 1.0, additively.)
	DurationMS int64 `json:"duration_ms"`
}

// StackRead is another stack's outputs as the plan read them, from the
// same backend without its lock: the stack's revision then, the outputs
// the spec references (sensitive ones secrets.Mask).
type StackRead struct {
	Stack     string         `json:"stack"`
	Revision  int            `json:"revision"`
	Outputs   map[string]any `json:"outputs"`
	Sensitive []string       `json:"sensitive"`
	// Saved: the values a saved plan recorded, not read again.
	Saved bool `json:"saved"`
}

// VariableChange is a variable whose value differs from the current
// revision's: before is null when the revision had none, after null when
// the spec no longer declares it; a sensitive one's values are
// secrets.Mask.
type VariableChange struct {
	Name      string `json:"name"`
	Before    any    `json:"before"`
	After     any    `json:"after"`
	Sensitive bool   `json:"sensitive"`
}

// Actions a resource change may have (ResourceChange.Action).
const (
	ActionCreate   = "create"
	ActionUpdate   = "update"
	ActionReplace  = "replace"
	ActionDelete   = "delete"
	ActionImport   = "import"
	ActionConflict = "conflict"
	ActionNoOp     = "no-op" // in place with the same config: only checked
)

// ResourceChange is one resource of a plan.
type ResourceChange struct {
	Address    string `json:"address"`
	Type       string `json:"type"`
	Provider   string `json:"provider"`
	Action     string `json:"action"`
	Protection string `json:"protection"`
	// ProtectionFrom is, when the change changes the resource's level,
	// the level the state records (Protection is then the higher of the
	// two, the one that governs); "" otherwise. (Added in 1.0, additively)
	ProtectionFrom string `json:"protection_from"`
	// Ownership: unknown (reality not read), absent, owned, recovered,
	// foreign, gone or importing.
	Ownership string `json:"ownership"`
	// Before is the config the state records (null for a create), After the
	// spec's (null for a delete), Observed what the provider read (null when
	// it found nothing); sensitive values are secrets.Mask in all three.
	Before   map[string]any `json:"before"`
	After    map[string]any `json:"after"`
	Observed map[string]any `json:"observed"`
	ForceNew []string       `json:"force_new"`
	Drifted  []string       `json:"drifted"`
	// Changed: the attributes the spec changes against what the state
	// records (the change written); Drift: those reality changed against
	// what the state records (outside bulwark). Drifted, kept as it was,
	// is what the provider must change: the spec against reality.
	Changed   []string `json:"changed"`
	Drift     []string `json:"drift"`
	Sensitive []string `json:"sensitive"`
	// Unknown lists the attributes whose values are known only after
	// apply (they reference a resource the plan creates or replaces): in
	// After they read "(known after apply)".
	Unknown  []string `json:"unknown"`
	Remote   bool     `json:"remote"`
	Vanished bool     `json:"vanished"`
	Note     string   `json:"note"`
	ImportID string   `json:"import_id"`
	FoundID  string   `json:"found_id"`
	// Owner, Reason and Importable describe a conflict.
	Owner      string `json:"owner"`
	Reason     string `json:"reason"`
	Importable bool   `json:"importable"`
	// ReplaceMode, for a replace: "create_first" (the new one made, the
	// old one deleted in the cleanup phase; the text's +/-) or
	// "delete_first" (the two cannot exist at once; -/+). "" otherwise.
	ReplaceMode string `json:"replace_mode"`
	// ReplaceRequested: the run names the resource with --replace.
	ReplaceRequested bool `json:"replace_requested"`
	// DataLoss: carrying the change out deletes the data the resource
	// holds (a replace of a durable one).
	DataLoss bool `json:"data_loss"`
	// Retained: the state records it as retained (kept by a rollback):
	// with action no-op and not in the spec, an apply keeps it; in the spec
	// again, it is taken back as an ordinary resource.
	Retained bool `json:"retained"`
	// NoIdempotencyKeys: its provider takes no idempotency key, so a
	// create of it that a crash interrupts stops resume for a person.
	NoIdempotencyKeys bool `json:"no_idempotency_keys,omitempty"`
}

// PlanSummary counts the resource changes by action.
type PlanSummary struct {
	Create     int  `json:"create"`
	Update     int  `json:"update"`
	Replace    int  `json:"replace"`
	Delete     int  `json:"delete"`
	Import     int  `json:"import"`
	Conflict   int  `json:"conflict"`
	NoOp       int  `json:"no_op"`
	HasChanges bool `json:"has_changes"`
}

// Refusal is why an apply of the plan would be refused before any step.
type Refusal struct {
	Operation string   `json:"operation"`
	Resources []string `json:"resources"`
	Message   string   `json:"message"`
}

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
	out.Moves = append([]stack.Move{}, pv.Moves...)
	out.Forgets = append([]stack.Forget{}, pv.Forgets...)
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
		names := list(r.Resources)
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
