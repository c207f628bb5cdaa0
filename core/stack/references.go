package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/bulwark-iac/bulwark/core/plan"
	"github.com/bulwark-iac/bulwark/core/providers"
	"github.com/bulwark-iac/bulwark/core/resolve"
	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/bulwark-iac/bulwark/core/state"
)

// A concrete spec (resolve.Expand) still holds, in its configs and
// outputs, references to other resources' attributes (*spec.Template). They
// are resolved here, from what the state records, at the last moment:
//
//   - plan decides the resources in dependency order; a reference to a
//     resource the plan creates or replaces is known only after apply
//     (plan.AfterApply, shown "(known after apply)"), unless it names a key
//     of that resource's own config, whose value the plan knows; a
//     reference to any other resource is what reality (or the state) holds,
//     with the config the plan gives it.
//   - apply resolves a step's config in its Check, from the state as its
//     dependencies left it: an upstream replace whose id changed flows into
//     an update (or, for a force_new attribute, a replace) of what
//     references it, in the same run.
//   - what is recorded (config, prior config) is the resolved config, so a
//     rollback, an undo after a crash, a resume and a rollback --to N put
//     back exactly the values that were applied.
//
// A provider is never sent an unresolved value: a read before apply omits
// the keys not yet known.

// stateLookup resolves references from the state's records: a resource's
// id, else its recorded attributes, else its recorded config; a resource
// that is recorded but has no such value gives null (Terraform's reading of
// an optional attribute that is not set). A resource the state does not
// record is not known.
func stateLookup(st *state.State) resolve.Lookup {
	return recordLookup(func(addr string) *state.Resource { return st.Resources[addr] })
}

// recordLookup is stateLookup over a function that finds a record.
func recordLookup(find func(addr string) *state.Resource) resolve.Lookup {
	return func(addr, attr string) (any, bool) {
		r := find(addr)
		if r == nil {
			return nil, false
		}
		return recordedValue(r.ID, r.Attributes, r.Config, attr), true
	}
}

// recordedValue is attribute attr of a resource with id, attributes attrs
// and config cfg (null when it has none).
func recordedValue(id string, attrs, cfg map[string]any, attr string) any {
	if attr == "id" {
		return id
	}
	if v, ok := attrs[attr]; ok {
		return v
	}
	return cfg[attr]
}

// hasRefs reports whether r's config still holds references.
func hasRefs(r *spec.Resource) bool { return !resolve.Known(r.Config) }

// resolved returns r with its config resolved by lookup (r itself when it
// holds no reference), and the paths of the values still unknown (left as
// *spec.Template).
func resolved(r *spec.Resource, lookup resolve.Lookup) (*spec.Resource, []string, error) {
	rr, unknown, _, err := resolvedSecrets(r, lookup, nil)
	return rr, unknown, err
}

// attrSensitive returns whether attribute attr of a resource recorded in
// find is a secret: the state seals it, or its type's schema marks it.
func (s *session) attrSensitive(find func(addr string) *state.Resource) func(addr, attr string) bool {
	return func(addr, attr string) bool {
		r := find(addr)
		if r == nil {
			return false
		}
		if attr == "id" {
			return slices.Contains(r.Sensitive, state.SensitiveID)
		}
		if slices.Contains(r.Sensitive, attr) {
			return true
		}
		p := s.plugins[r.Provider]
		return p != nil && slices.Contains(sensitiveAttrs(p.Schema(), r.Type), attr)
	}
}

// resolvedSecrets is resolved, and also returns the values expressions
// computed from secrets on the way (see learnDerived).
func resolvedSecrets(r *spec.Resource, lookup resolve.Lookup, sensitive func(addr, attr string) bool) (*spec.Resource, []string, []any, error) {
	if !hasRefs(r) {
		return r, nil, nil, nil
	}
	cfg, unknown, secrets, err := resolve.ConfigSecrets(r.Config, lookup, sensitive)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("resource %s: %w", r.Name, err)
	}
	c := *r
	c.Config = cfg
	return &c, unknown, secrets, nil
}

// learnDerived records values an expression computed from a secret
// (${upper(var.token)}): their text is not the secret's, so they are
// learnt as secrets of their own, sealed and masked wherever they appear.
func (s *session) learnDerived(vs []any) {
	for _, v := range vs {
		if !slices.ContainsFunc(s.sp.Secrets, func(have any) bool { return reflect.DeepEqual(have, v) }) {
			s.sp.Secrets = append(s.sp.Secrets, v)
		}
		s.opts.Redactor.Add(v)
	}
}

// resolvedNow is r resolved from the state as it is now, for a step about
// to run: every reference must be known (its resource applied), else the
// step fails naming what is missing.
func (s *session) resolvedNow(r *spec.Resource) (*spec.Resource, error) {
	rr, unknown, derived, err := resolvedSecrets(r, recordLookup(s.store.Resource), s.attrSensitive(s.store.Resource))
	if err != nil {
		return nil, err
	}
	s.learnDerived(derived)
	if len(unknown) > 0 {
		var missing []string
		for _, a := range resolve.Refs(r.Config) {
			if s.store.Resource(a) == nil {
				missing = append(missing, a)
			}
		}
		return nil, fmt.Errorf("%s: config %s references %s, which the state does not record (was it applied?)",
			r.Name, strings.Join(unknown, ", "), strings.Join(missing, ", "))
	}
	return rr, nil
}

// readable is r resolved from the state, without the keys whose values
// are not known yet: what a Read before apply may be sent.
func readable(r *spec.Resource, st *state.State) *spec.Resource {
	if !hasRefs(r) {
		return r
	}
	rr, _, err := resolved(r, stateLookup(st))
	if err != nil {
		rr = r // the plan reports the error; the read gets what is known
	}
	c := *rr
	c.Config, _ = knownConfig(rr.Config)
	return &c
}

// afterApply replaces every reference left in v by plan.AfterApply, for a
// plan to compare, print and write as JSON.
func afterApply(v any) any {
	return resolve.Replace(v, func(*spec.Template) any { return plan.AfterApply{} })
}

// templateText replaces every reference left in v by the text it is
// written as, literal parts included (a secret interpolated beside a value
// known only after apply is still a secret).
func templateText(v any) any {
	return resolve.Replace(v, func(t *spec.Template) any { return t.String() })
}

// planLookup resolves references while a plan decides resources in
// dependency order: decided holds the changes made so far, cfgs the
// resolved configs they were made with.
func planLookup(st *state.State, obs map[string]*plan.Observation, decided map[string]plan.Change, cfgs map[string]map[string]any) resolve.Lookup {
	return func(addr, attr string) (any, bool) {
		c, ok := decided[addr]
		if !ok {
			return stateLookup(st)(addr, attr)
		}
		if v, ok := cfgs[addr][attr]; ok && attr != "id" {
			// What the spec sets, the plan knows, unless it is itself known
			// only after apply.
			return v, !plan.HasUnknown(v)
		}
		switch c.Action {
		case plan.Create, plan.Replace, plan.Conflict, plan.Delete:
			return nil, false
		}
		cur, o := st.Resources[addr], obs[addr]
		if o != nil && o.Exists {
			return recordedValue(o.ID, o.Attributes, nil, attr), true
		}
		if cur == nil {
			return nil, false
		}
		return recordedValue(cur.ID, cur.Attributes, cur.Config, attr), true
	}
}

// specOrder returns the spec's resources with every one after the
// resources it depends on (references included), else in file order.
func specOrder(rs []*spec.Resource) []*spec.Resource {
	byName := make(map[string]*spec.Resource, len(rs))
	for _, r := range rs {
		byName[r.Name] = r
	}
	done := make(map[string]bool, len(rs))
	out := make([]*spec.Resource, 0, len(rs))
	var visit func(r *spec.Resource, depth int)
	visit = func(r *spec.Resource, depth int) {
		if done[r.Name] || depth > len(rs) {
			return // a cycle cannot be: the spec was refused
		}
		for _, d := range r.DependsOn {
			if u := byName[d]; u != nil {
				visit(u, depth+1)
			}
		}
		if !done[r.Name] {
			done[r.Name] = true
			out = append(out, r)
		}
	}
	for _, r := range rs {
		visit(r, 0)
	}
	return out
}

// derivedSensitive lists the keys of cfg whose values hold something the
// session knows to be sensitive (a sensitive variable's value, a sensitive
// attribute of another resource, a provider's secret): a value derived from
// a secret is a secret, sealed in the state and masked everywhere.
func (s *session) derivedSensitive(cfg map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if s.holdsSecret(cfg[k]) || resolve.HoldsSensitive(cfg[k]) {
			out = append(out, k)
		}
	}
	return out
}

// holdsSecret reports whether v holds a value the Redactor knows (in
// text, or as a whole value: a short secret or a sensitive number).
func (s *session) holdsSecret(v any) bool {
	if v == nil {
		return false
	}
	b, err := json.Marshal(templateText(v))
	if err != nil {
		return false
	}
	if s.opts.Redactor.Redact(string(b)) != string(b) {
		return true
	}
	// A sensitive variable's value is looked for whatever its length (the
	// Redactor leaves values shorter than secrets.MinRedactLen out of free
	// text): over-marking a value sensitive is safe, missing one is not.
	text := string(b)
	for _, sv := range s.sensitiveVars() {
		if reflect.DeepEqual(sv, v) {
			return true
		}
		for _, piece := range scalars(sv) {
			if piece != "" && strings.Contains(text, piece) {
				return true
			}
		}
	}
	return false
}

// scalars lists the strings inside v, as they appear inside JSON text:
// what a string made from v may contain. (A number or a bool is matched
// whole, or by the Redactor in text when it is long enough: "1" would be
// found in every id.)
func scalars(v any) []string {
	switch v := v.(type) {
	case string:
		q, _ := json.Marshal(v)
		return []string{string(q[1 : len(q)-1])}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, scalars(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, scalars(e)...)
		}
		return out
	}
	return nil
}

// sensitiveVars are the values of the spec's sensitive variables, the
// sensitive attributes its data entries read, and the values expressions
// computed from either.
func (s *session) sensitiveVars() []any {
	out := slices.Clone(s.dataSecrets)
	out = append(out, s.sp.Secrets...)
	for _, v := range s.sp.Variables {
		if val, ok := s.sp.Values[v.Name]; ok && v.Sensitive {
			out = append(out, val)
		}
	}
	return out
}

// learnVariables tells the Redactor the values of the spec's sensitive
// variables, so they are masked in every line bulwark writes or prints.
func (s *session) learnVariables() {
	for _, v := range s.sensitiveVars() {
		s.opts.Redactor.Add(v)
	}
}

// addSensitive returns the union of have and more, sorted.
func addSensitive(have []string, more []string) []string {
	out := slices.Clone(have)
	for _, k := range more {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// validateResolved asks r's provider to validate rr, r with its references
// resolved, in its step's Check: what validate could not see before apply
// (the keys it left out) is checked now, positioned in the spec. A
// provider whose validation is its schema is not asked: the host checks rr
// against the schema itself.
func (s *session) validateResolved(ctx context.Context, r, rr *spec.Resource) error {
	req := &providers.ValidateResourceRequest{Type: rr.Type, Name: rr.Name, Config: rr.Config}
	v, mine := s.validated.claim(r.Provider, req)
	switch {
	case !mine:
	case s.schemaValidated(r.Provider):
		// The provider's validation is its schema: the host checks the
		// resolved values against it, with no call.
		var ds providers.Diagnostics
		if sc := s.plugins[r.Provider].Schema(); sc != nil {
			if rt, ok := sc.ResourceType(rr.Type); ok {
				ds = providers.CheckConfig(rt, rr.Config)
			}
		}
		v.set(ds, nil)
	default:
		v.set(s.plugins[r.Provider].ValidateResource(ctx, req))
	}
	ds, err := v.wait(ctx)
	if err != nil {
		return err
	}
	var found spec.Problems
	for _, d := range ds {
		if d.Severity == providers.SeverityWarning {
			continue
		}
		found = append(found, s.problem(r, d))
	}
	if len(found) > 0 {
		return found
	}
	return nil
}
