// Package plan compares a spec with the state and says, per resource, what
// an operation will do: create, update in place, replace, delete, or nothing
// beyond a check. It also holds the protection ladder: Check refuses a plan
// that would delete or replace a protected resource, before any step runs.
//
// A plan is made from the state alone (no provider is called); the steps that
// carry it out read reality again, so drift found then still converges.
package plan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/printable"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// Action is what a change does.
type Action string

const (
	Create  Action = "create"
	Update  Action = "update"
	Replace Action = "replace"
	Delete  Action = "delete"
	NoOp    Action = "check" // in the state with the same config: only checked
	// Import takes over an existing resource the spec names by id
	// (`import: ID`): it is recorded as imported, never deleted by a rollback.
	Import Action = "import"
	// Conflict is a resource that exists with the identity the spec gives
	// but is not this stack's: nothing is done, the run is refused.
	Conflict Action = "conflict"
	// Retain keeps a durable or protected resource that a rollback's
	// target revision lacks, and records it as retained (the ladder's
	// rollback column: no rollback destroys data). Nothing is deleted.
	Retain Action = "retain"
)

// Change is the plan for one resource.
type Change struct {
	Resource   string
	Type       string
	Provider   string
	Action     Action
	Protection protection.Level // the level that governs this change
	Before     map[string]any   // config recorded in the state (nil for create)
	After      map[string]any   // config in the spec (nil for delete)
	// ForceNew lists the force_new attributes whose change makes a replace.
	ForceNew []string

	// Ownership is how the resource relates to this stack (see Decide).
	Ownership Ownership `json:"ownership,omitempty"`
	// Drifted lists the attributes whose observed value differs from the
	// spec (what the provider must change), when reality was read.
	Drifted []string `json:"drifted,omitempty"`
	// Changed lists the attributes the spec changes against the config the
	// state records: the change the person wrote. Drift lists those whose
	// observed value differs from the config the state records, when
	// reality was read: what changed outside bulwark. (Drifted is what the
	// provider must change, the spec against reality: both, in effect.)
	Changed []string `json:"changed,omitempty"`
	Drift   []string `json:"drift,omitempty"`
	// Remote says an update needs the provider, not only the state's record.
	Remote bool `json:"remote,omitempty"`
	// ImportID is the spec's `import:` id.
	ImportID string `json:"import_id,omitempty"`
	// FoundID is the id of what reality holds under this identity.
	FoundID string `json:"found_id,omitempty"`
	// Owner and Reason say, for a conflict, whose the resource found is and
	// why nothing may be done with it.
	Owner  string `json:"owner,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Importable: a conflict an import of FoundID would resolve.
	Importable bool `json:"importable,omitempty"`
	// Retained: the state records the resource, gone from the spec, as
	// retained (kept by a rollback; see state.Resource.RetainedBy): it is
	// kept and listed (Action NoOp), never deleted by an apply. One the
	// spec has again is decided as any resource of the spec (the apply
	// that succeeds with it takes it back: see the stack's step_retain.go).
	Retained bool `json:"retained,omitempty"`
	// Mode is how a replace goes: the new one made first and the old one
	// deleted in the cleanup phase, or (when the two cannot exist at once)
	// the old one deleted first. Empty for any other action.
	Mode ReplaceMode `json:"replace_mode,omitempty"`
	// Requested: the run names this resource with --replace (the user's
	// consent to replace it, and a replace even with no change).
	Requested bool `json:"replace_requested,omitempty"`
	// ProtectionFrom is the level the state records when the spec gives
	// another (ProtectionTo): a change of protection, shown as such. Both
	// are Unspecified otherwise.
	ProtectionFrom protection.Level `json:"protection_from,omitempty"`
	ProtectionTo   protection.Level `json:"protection_to,omitempty"`
}

// ReplaceMode is the order of a replace.
type ReplaceMode string

const (
	// CreateFirst makes the new resource, then deletes the old one in the
	// operation's cleanup phase, once every other step succeeded (`+/-`).
	CreateFirst ReplaceMode = "create_first"
	// DeleteFirst deletes the old resource before it makes the new one:
	// the two cannot exist at once (`-/+`).
	DeleteFirst ReplaceMode = "delete_first"
)

// LosesData reports whether carrying the change out deletes data: a
// replace of a resource that holds some (durable or protected), in either
// order, since the new one starts empty.
func (c Change) LosesData() bool {
	return c.Action == Replace && c.Protection >= protection.Durable
}

// Reasons names what makes c a replace, for messages: its force_new
// attributes, else what forced it.
func (c Change) Reasons() string {
	if len(c.ForceNew) > 0 {
		return strings.Join(c.ForceNew, ", ")
	}
	if c.Requested {
		return "--replace"
	}
	return "(unknown)"
}

// Plan is every change, in spec order then state order for deletions.
type Plan struct {
	Changes []Change
	// Spec is the spec's path, named in the advice a refusal gives.
	Spec string
	// undeclared are the resources a teardown deletes that its spec does
	// not declare (ForTeardown), for the refusal's advice. An apply's are
	// its deletes: it deletes only what the spec dropped.
	undeclared map[string]bool
}

// Level returns a resource's governing protection: the higher of what the
// state recorded (Unspecified: none) and what the spec says, so removing
// lines from the spec never lowers it, and a recorded level off the ladder
// counts as protected.
func Level(recorded, desired protection.Level) protection.Level {
	level := desired
	switch {
	case recorded == protection.Unspecified: // none recorded
	case recorded < protection.Unspecified || recorded > protection.Protected:
		// Off the ladder: the guess that deletes nothing.
		level = protection.Protected
	case recorded > level:
		level = recorded
	}
	if level == protection.Unspecified {
		level = protection.Ephemeral
	}
	return level
}

// ForApply plans an apply of sp over st from the state alone (no provider
// is called). schemas (by local provider name) tell which attributes are
// force_new; a missing schema means none are. It is Make without
// observations: the same decision, with reality taken to be the record.
func ForApply(sp *spec.Spec, st *state.State, schemas map[string]*providers.GetSchemaResponse) *Plan {
	return Make(sp, st, Env{Schemas: schemas}, nil)
}

// ForTeardown plans the deletion of everything the state records; the level
// of each is the higher of the state's and the spec's.
func ForTeardown(sp *spec.Spec, st *state.State) *Plan {
	p := &Plan{}
	declared := map[string]*spec.Resource{} // sp's resources by name (Spec.Resource walks the list)
	if sp != nil {
		p.Spec = sp.File
		for _, r := range sp.Resources {
			if _, dup := declared[r.Name]; !dup {
				declared[r.Name] = r
			}
		}
	}
	for _, name := range st.Names() {
		prior := st.Resources[name]
		desired := protection.Ephemeral
		if r, ok := declared[name]; ok {
			desired = r.Protection
		} else if sp != nil {
			if p.undeclared == nil {
				p.undeclared = map[string]bool{}
			}
			p.undeclared[name] = true
		}
		p.Changes = append(p.Changes, Change{
			Resource: name, Type: prior.Type, Provider: prior.Provider, Action: Delete,
			Protection: Level(prior.Protection, desired), Before: prior.Config,
		})
	}
	return p
}

// RefusedError is a plan refused by the protection ladder: nothing was
// deleted. It names every protected resource the plan would delete or
// replace, and every durable one it would replace without the run's
// consent (--replace ADDRESS).
type RefusedError struct {
	Op        string   // apply | teardown
	Resources []string // protected, sorted
	// Undeclared are those of Resources that the spec no longer
	// declares, sorted: the advice for them differs (lowering a level in
	// the spec needs them in it).
	Undeclared []string `json:"undeclared,omitempty"`
	// Gone are the protected resources no longer in the spec whose
	// provider no longer finds them, sorted: nothing is left to delete,
	// but dropping a protected resource's record is refused like deleting
	// it (`bulwark state forget` is the way, by hand).
	Gone []string `json:"gone,omitempty"`
	// Durable are the durable resources the plan would replace (losing
	// their data) that the run does not name with --replace, sorted.
	Durable []DurableReplace `json:"durable,omitempty"`
	// Spec is the spec's path, for the advice.
	Spec string `json:"-"`
}

// DurableReplace is a durable resource a plan would replace: its name and
// the attributes that make it a replace.
type DurableReplace struct {
	Resource   string   `json:"resource"`
	Attributes []string `json:"attributes,omitempty"`
}

// Error names the resources inert (printable.Line): a name from the state
// is a teammate's, or a hand's, as much as the spec's, and the message
// reaches terminals and CI logs.
func (e *RefusedError) Error() string {
	var parts []string
	if declared := slices.DeleteFunc(slices.Clone(e.Resources), func(n string) bool { return slices.Contains(e.Undeclared, n) }); len(declared) > 0 {
		parts = append(parts, fmt.Sprintf("%s refused: it would delete protected resource(s) %s; nothing was deleted (lower their protection in the spec and apply first)",
			e.Op, printable.Line(strings.Join(declared, ", "))))
	}
	if len(e.Undeclared) > 0 {
		keep, remove := "write `removed: [{from: NAME, destroy: false}]` in the spec (or run `bulwark state forget "+e.specOr()+" NAME`)", "apply, then take it out"
		if e.Op == "teardown" { // a teardown follows no removed: entry
			keep, remove = "run `bulwark state forget "+e.specOr()+" NAME`", "apply first"
		}
		parts = append(parts, fmt.Sprintf("%s refused: it would delete protected resource(s) %s; nothing was deleted. The spec no longer declares them: to keep one and let the stack forget it, %s; to delete one, declare it again at a lower protection and %s",
			e.Op, printable.Line(strings.Join(e.Undeclared, ", ")), keep, remove))
	}
	if len(e.Gone) > 0 {
		forget := make([]string, len(e.Gone))
		for i, n := range e.Gone {
			forget[i] = "`bulwark state forget " + e.specOr() + " " + printable.Line(n) + "`"
		}
		parts = append(parts, fmt.Sprintf("%s refused: protected resource(s) %s are no longer in the spec, and their provider no longer finds them; nothing was deleted. bulwark drops a protected resource's record only when told to: if it is gone for good, run %s (or write `removed: [{from: NAME, destroy: false}]` in the spec); if its provider looks in the wrong place (another root, region or account), fix the provider's config",
			e.Op, printable.Line(strings.Join(e.Gone, ", ")), strings.Join(forget, ", then ")))
	}
	if len(e.Durable) > 0 {
		spec := e.specOr()
		var b strings.Builder
		fmt.Fprintf(&b, "%s refused: it would replace durable resource(s), and a replace deletes the data they hold; nothing was deleted:", e.Op)
		var flags []string
		for _, d := range e.Durable {
			what := "its type or provider changed"
			if len(d.Attributes) > 0 && d.Attributes[0] != "(type or provider)" {
				what = "force_new attribute(s) " + strings.Join(d.Attributes, ", ") + " changed"
			}
			fmt.Fprintf(&b, "\n  %s: %s", printable.Line(d.Resource), printable.Line(what))
			flags = append(flags, "--replace "+printable.Line(d.Resource))
		}
		fmt.Fprintf(&b, "\nTo keep the data, undo that change in the spec. To replace anyway (its data will be deleted), consent by naming each one: `bulwark apply %s %s`.", spec, strings.Join(flags, " "))
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "\n")
}

// specOr is the spec's path for the advice, inert, or SPEC when unknown.
func (e *RefusedError) specOr() string {
	if e.Spec == "" {
		return "SPEC"
	}
	return printable.Line(e.Spec)
}

// ConflictError refuses a plan in which resources exist with the identity
// the spec gives them but are not this stack's: nothing was changed.
type ConflictError struct {
	Op        string
	Spec      string   // the spec's path, for the advice
	Conflicts []Change // sorted by resource
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s refused: %d resource(s) exist but are not this stack's; nothing was changed:", e.Op, len(e.Conflicts))
	spec := e.Spec
	if spec == "" {
		spec = "SPEC"
	}
	for _, c := range e.Conflicts {
		name, id := printable.Line(c.Resource), printable.Line(c.FoundID)
		fmt.Fprintf(&b, "\n  %s: %s", name, printable.Line(c.Reason))
		if c.Importable {
			fmt.Fprintf(&b, " (take it over: `bulwark import %s %s %s`, or `import: %s` on it in the spec)", spec, name, id, id)
		}
	}
	for _, c := range e.Conflicts {
		if c.Importable {
			b.WriteString("\nbulwark never adopts what it did not create. To take one over, run `bulwark import " + spec + " NAME ID` or add `import: ID` to the resource in the spec; else rename it in the spec.")
			break
		}
	}
	return b.String()
}

// Refused reports whether the ladder refuses this change: a delete or a
// replace of a protected resource.
func (c Change) Refused() bool {
	return (c.Action == Delete || c.Action == Replace) && c.Protection == protection.Protected
}

// NeedsConsent reports whether the ladder refuses this change unless the
// run names it with --replace: a replace of a durable resource, whose data
// the replace deletes in either order.
func (c Change) NeedsConsent() bool {
	return c.Action == Replace && c.Protection == protection.Durable && !c.Requested
}

// Check is the whole plan's refusal, the same for plan and apply: the
// ladder's third column first (a delete or a replace of a protected
// resource, a *RefusedError), then ownership (a resource that exists but is
// not this stack's, a *ConflictError).
func (p *Plan) Check(op string) error {
	var refused []string
	var durable []DurableReplace
	var conflicts []Change
	var gone, undeclared []string
	for _, c := range p.Changes {
		switch {
		case c.Refused() && c.Ownership == Gone:
			gone = append(gone, c.Resource)
		case c.Refused():
			refused = append(refused, c.Resource)
			// An apply deletes (rather than replaces) only what the
			// spec no longer declares; a teardown deletes everything.
			if c.Action == Delete && (op != "teardown" || p.undeclared[c.Resource]) {
				undeclared = append(undeclared, c.Resource)
			}
		}
		if c.NeedsConsent() {
			durable = append(durable, DurableReplace{Resource: c.Resource, Attributes: c.ForceNew})
		}
		if c.Action == Conflict {
			conflicts = append(conflicts, c)
		}
	}
	if len(refused) > 0 || len(gone) > 0 || len(durable) > 0 {
		sort.Strings(refused)
		sort.Strings(gone)
		sort.Strings(undeclared)
		sort.Slice(durable, func(i, j int) bool { return durable[i].Resource < durable[j].Resource })
		return &RefusedError{Op: op, Resources: refused, Undeclared: undeclared, Gone: gone, Durable: durable, Spec: p.Spec}
	}
	if len(conflicts) > 0 {
		sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].Resource < conflicts[j].Resource })
		return &ConflictError{Op: op, Spec: p.Spec, Conflicts: conflicts}
	}
	return nil
}

// Change returns the change for a resource.
func (p *Plan) Change(name string) (Change, bool) {
	for _, c := range p.Changes {
		if c.Resource == name {
			return c, true
		}
	}
	return Change{}, false
}

// HasChanges reports whether anything but checks is planned.
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		if c.Action != NoOp {
			return true
		}
	}
	return false
}

// ChangedKeys returns, sorted, the keys whose values differ between two
// configurations (present in one only counts).
func ChangedKeys(before, after map[string]any) []string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok || !Equal(v, w) {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Drift returns the keys of want whose observed value differs.
func Drift(want, observed map[string]any) []string {
	var out []string
	for k, v := range want {
		if w, ok := observed[k]; !ok || !Equal(v, w) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Equal compares two attribute values as JSON values (so 2 and 2.0 agree).
// A value that holds an AfterApply equals nothing.
func Equal(a, b any) bool {
	if HasUnknown(a) || HasUnknown(b) {
		return false
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func sortStrings(s []string) { sort.Strings(s) }

func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return reflect.DeepEqual(a, b)
}
