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
	"sort"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/sdk"
)

// Action is what a change does.
type Action string

const (
	Create  Action = "create"
	Update  Action = "update"
	Replace Action = "replace"
	Delete  Action = "delete"
	NoOp    Action = "check" // in the state with the same config: only checked
)

// Change is the plan for one resource.
type Change struct {
	Resource   string
	Type       string
	Provider   string
	Action     Action
	Protection sdk.Protection // the level that governs this change
	Before     map[string]any // config recorded in the state (nil for create)
	After      map[string]any // config in the spec (nil for delete)
	// ForceNew lists the force_new attributes whose change makes a replace.
	ForceNew []string
}

// Plan is every change, in spec order then state order for deletions.
type Plan struct {
	Changes []Change
}

// Level returns a resource's governing protection: the higher of what the
// state recorded and what the spec says, so removing lines from the spec never
// lowers it, and a level the state does not know counts as protected.
func Level(recorded string, desired sdk.Protection) sdk.Protection {
	level := desired
	if recorded != "" {
		r, ok := sdk.ParseProtection(recorded)
		if !ok {
			r = sdk.ProtectionProtected
		}
		if r > level {
			level = r
		}
	}
	if level == sdk.ProtectionUnspecified {
		level = sdk.ProtectionEphemeral
	}
	return level
}

// ForApply plans an apply of sp over st. schemas (by local provider name)
// tell which attributes are force_new; a missing schema means none are.
func ForApply(sp *spec.Spec, st *state.State, schemas map[string]*sdk.GetSchemaResponse) *Plan {
	p := &Plan{}
	inSpec := map[string]bool{}
	for _, r := range sp.Resources {
		inSpec[r.Name] = true
		c := Change{Resource: r.Name, Type: r.Type, Provider: r.Provider, After: r.Config, Protection: r.Protection}
		prior := st.Resources[r.Name]
		switch {
		case prior == nil:
			c.Action = Create
		case prior.Type != r.Type || prior.Provider != r.Provider:
			c.Action, c.Before = Replace, prior.Config
			c.Protection = Level(prior.Protection, r.Protection)
			c.ForceNew = []string{"(type or provider)"}
		default:
			c.Before = prior.Config
			c.Protection = Level(prior.Protection, r.Protection)
			var rt sdk.ResourceType
			if s := schemas[r.Provider]; s != nil {
				rt, _ = s.ResourceType(r.Type)
			}
			changed := ChangedKeys(prior.Config, r.Config)
			for _, k := range changed {
				if a, ok := rt.Attribute(k); ok && a.ForceNew {
					c.ForceNew = append(c.ForceNew, k)
				}
			}
			switch {
			case len(c.ForceNew) > 0:
				c.Action = Replace
			case len(changed) > 0 || prior.Protection != r.Protection.String() || !sameStrings(prior.DependsOn, r.DependsOn):
				c.Action = Update
			default:
				c.Action = NoOp
			}
		}
		p.Changes = append(p.Changes, c)
	}
	for _, name := range st.Names() {
		if inSpec[name] {
			continue
		}
		prior := st.Resources[name]
		p.Changes = append(p.Changes, Change{
			Resource: name, Type: prior.Type, Provider: prior.Provider, Action: Delete,
			Protection: Level(prior.Protection, sdk.ProtectionEphemeral), Before: prior.Config,
		})
	}
	return p
}

// ForTeardown plans the deletion of everything the state records; the level
// of each is the higher of the state's and the spec's.
func ForTeardown(sp *spec.Spec, st *state.State) *Plan {
	p := &Plan{}
	for _, name := range st.Names() {
		prior := st.Resources[name]
		desired := sdk.ProtectionEphemeral
		if sp != nil {
			if r, ok := sp.Resource(name); ok {
				desired = r.Protection
			}
		}
		p.Changes = append(p.Changes, Change{
			Resource: name, Type: prior.Type, Provider: prior.Provider, Action: Delete,
			Protection: Level(prior.Protection, desired), Before: prior.Config,
		})
	}
	return p
}

// RefusedError is a plan refused by the protection ladder: nothing was
// deleted. It names every protected resource the plan would delete or replace.
type RefusedError struct {
	Op        string   // apply | teardown
	Resources []string // sorted
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s refused: it would delete protected resource(s) %s; nothing was deleted (lower their protection in the spec and apply first)",
		e.Op, strings.Join(e.Resources, ", "))
}

// Check applies the ladder's third column to the whole plan: a delete or a
// replace of a protected resource refuses the run.
func (p *Plan) Check(op string) error {
	var refused []string
	for _, c := range p.Changes {
		if (c.Action == Delete || c.Action == Replace) && c.Protection == sdk.ProtectionProtected {
			refused = append(refused, c.Resource)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	sort.Strings(refused)
	return &RefusedError{Op: op, Resources: refused}
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
func Equal(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

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
