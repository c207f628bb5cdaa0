// Package plandoc declares the plan document: what `bulwark plan --json`
// and a saved plan's `show FILE --json` print, field by field. cmd/bulwark's
// jsonview builds it from a stack.Preview and writes it (its Plan and the
// types here are the same types, by alias); the web view (core/webview)
// reads those very bytes back into it to lay out a saved plan's review page
// (`show FILE --html`, `bulwark ui --plan FILE`). One declaration for the
// writer and the reader, so the page cannot read a field the document does
// not write. docs/json.md documents the fields; jsonview's package doc says
// what a change to them means for format_version.
//
// It imports nothing of bulwark's: jsonview copies what the operations
// hand over (stack.Preview's moves and forgets) into these types, so a
// reader of the document does not sit above the operations.
package plandoc

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
	Moves   []Move   `json:"moves"`
	Forgets []Forget `json:"forgets"`
	// Targets are the plan's --target addresses ([] when it covers the
	// whole spec); Diagnostics then holds the warning that it is partial.
	// (Added in 1.0, additively.)
	Targets     []string     `json:"targets"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// Move is one rename a moved: entry makes in the state: the record at
// From (of id ID and type Type) is found at To afterwards.
type Move struct {
	From string `json:"from"`
	To   string `json:"to"`
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Forget is one record a removed: entry with destroy: false drops: the
// object is kept, and no longer managed by this stack.
type Forget struct {
	Address    string `json:"address"`
	ID         string `json:"id"`
	Type       string `json:"type"`
	Protection string `json:"protection"`
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

// Severities of a diagnostic.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Diagnostic is one problem: where it is (file "" and line 0 when it is
// about no place in a file, column 0 when only the line is known) and the
// attribute path of what is there. It is every document's diagnostic (the
// plan's warnings, validate's and fmt's problems): jsonview's Diagnostic is
// this type.
type Diagnostic struct {
	Severity string `json:"severity"`
	Message  string `json:"message"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	// Path is the attribute path ("resources[0].config.zone"), "" when the
	// problem is about the whole spec or no place in it.
	Path string `json:"path"`
	// Resource is the name of the resource the problem is in, or "".
	Resource string `json:"resource"`
}
