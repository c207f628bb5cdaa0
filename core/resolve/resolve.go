// Package resolve evaluates the references of a parsed spec, between
// package spec (which parses and checks them) and the planner.
//
// It works in two stages, as Terraform does:
//
//  1. Before any provider starts: Values gives every variable its value
//     (--var, then --var-file, then BULWARK_VAR_<NAME>, then the default),
//     and Expand makes the spec concrete: every variable reference, every
//     for_each and every ${each.key}/${each.value} is substituted, each
//     for_each resource becomes one resource per key named NAME[KEY], and
//     each resource's DependsOn gains the resources its config references.
//     What is left in a concrete spec's configs and outputs are
//     *spec.Template values made only of resource references.
//
//  2. During plan and apply: Config (and Value, for one value such as an
//     output) replaces those resource references with the attributes
//     recorded for the resources they name, as a Lookup gives them. A
//     reference whose value is not known yet (the resource is still to be
//     created or replaced) stays a *spec.Template, its path is returned, and
//     Display shows it as "(known after apply)".
//
// A value that is exactly one reference ("${net.id}") keeps the referenced
// value's type (a number stays a number, a list a list); a reference inside
// a longer string is interpolated: strings as they are, numbers in their
// shortest decimal form (3, 2.5), bools as true/false; interpolating null,
// a list or a map is an error. Resolution is deterministic: the same spec,
// variables and recorded attributes give the same result, and a resolved
// value never shares memory with what the Lookup returned.
package resolve

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
)

// KnownAfterApply is how plan shows a value that is known only once the
// resources it references have been applied.
const KnownAfterApply = "(known after apply)"

// Lookup returns the recorded value of attribute attr ("id" included) of
// the resource at address ("net", "web[a]"), and whether it is known. A
// resource still to be created (or replaced) has no known attributes.
type Lookup func(address, attr string) (value any, known bool)

// Config resolves the resource references left in a concrete spec's
// config cfg with lookup. It returns a new map (cfg is not changed) in
// which every reference whose value is known is replaced, and the paths of
// the values that are still unknown ("subnet", "tags.network", "ports[1]"),
// sorted; those values stay *spec.Template, to be shown with Display and
// resolved again once known. An error (a *spec.Problem positioned at the
// reference) is a value that cannot be interpolated (null, a list or a
// map inside a longer string) or a reference that a concrete spec cannot
// hold (a variable or each).
func Config(cfg map[string]any, lookup Lookup) (map[string]any, []string, error) {
	m, unknown, _, err := ConfigSecrets(cfg, lookup, nil)
	return m, unknown, err
}

// ConfigSecrets is Config, and also returns the values that expressions
// computed from a sensitive value while resolving (${upper(var.token)}
// beside ${net.id}): secrets whose text is not the sensitive value's, for
// the caller to seal and mask as it does that value.
//
// sensitive (nil for none) reports whether an attribute of a resource is
// a secret (its schema says so, or the state seals it): its value is
// marked as it is bound into an expression, so that what the expression
// computes from it is a secret too.
func ConfigSecrets(cfg map[string]any, lookup Lookup, sensitive func(address, attr string) bool) (map[string]any, []string, []any, error) {
	r := &resolver{lookup: lookup, sensitive: sensitive}
	out, _ := r.value(cfg, "")
	if r.err != nil {
		return nil, nil, nil, r.err
	}
	slices.Sort(r.unknown)
	m, _ := out.(map[string]any)
	if m == nil && cfg != nil {
		m = map[string]any{}
	}
	return m, r.unknown, r.secrets, nil
}

// Value resolves one value (an output's, say) as Config does; known is
// false when some part of it is still unknown.
func Value(v any, lookup Lookup) (resolved any, known bool, err error) {
	r := &resolver{lookup: lookup}
	out, _ := r.value(v, "")
	if r.err != nil {
		return nil, false, r.err
	}
	return out, len(r.unknown) == 0, nil
}

// Known reports whether v holds no *spec.Template.
func Known(v any) bool {
	switch v := v.(type) {
	case *spec.Template:
		return false
	case map[string]any:
		for _, e := range v {
			if !Known(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !Known(e) {
				return false
			}
		}
	}
	return true
}

// Display returns a copy of v in which every *spec.Template is the string
// KnownAfterApply, for a plan to print or write as --json.
func Display(v any) any {
	return Replace(v, func(*spec.Template) any { return KnownAfterApply })
}

// Replace returns a copy of v in which every *spec.Template (a value not
// known yet) is fn's result for it: a planner's own marker for an unknown
// value, say.
func Replace(v any, fn func(*spec.Template) any) any {
	switch v := v.(type) {
	case *spec.Template:
		return fn(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = Replace(e, fn)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = Replace(e, fn)
		}
		return out
	}
	return v
}

// DisplayConfig is Display for a config map.
func DisplayConfig(cfg map[string]any) map[string]any {
	if cfg == nil {
		return nil
	}
	return Display(cfg).(map[string]any)
}

// Refs returns the addresses of the resources v references, each once, in
// the order they first appear (map keys in sorted order).
func Refs(v any) []string {
	var out []string
	seen := map[string]bool{}
	walkRefs(v, func(ref *spec.Ref) {
		if a := ref.Address(); a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	})
	return out
}

func walkRefs(v any, fn func(*spec.Ref)) {
	switch v := v.(type) {
	case *spec.Template:
		for _, p := range v.Parts {
			if p.Ref != nil {
				fn(p.Ref)
			}
			if p.Expr != nil {
				for _, r := range p.Expr.Refs {
					fn(r)
				}
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walkRefs(v[k], fn)
		}
	case []any:
		for _, e := range v {
			walkRefs(e, fn)
		}
	}
}

// resolver is one Config or Value call.
type resolver struct {
	lookup    Lookup
	sensitive func(address, attr string) bool
	unknown   []string
	secrets   []any // values expressions computed from sensitive values
	err       error
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// value resolves v at path; it returns the result and whether it is known.
func (r *resolver) value(v any, path string) (any, bool) {
	switch v := v.(type) {
	case *spec.Template:
		out, known := r.template(v)
		if !known {
			r.unknown = append(r.unknown, path)
		}
		return out, known
	case map[string]any:
		// In key order, so that the first error and the unknown paths do
		// not depend on map iteration: resolution is deterministic.
		out := make(map[string]any, len(v))
		known := true
		for _, k := range slices.Sorted(maps.Keys(v)) {
			var ok bool
			out[k], ok = r.value(v[k], join(path, k))
			known = known && ok
		}
		return out, known
	case []any:
		out := make([]any, len(v))
		known := true
		for i, e := range v {
			var ok bool
			out[i], ok = r.value(e, fmt.Sprintf("%s[%d]", path, i))
			known = known && ok
		}
		return out, known
	}
	return v, true
}

func (r *resolver) template(t *spec.Template) (any, bool) {
	out := substTemplate(r, t)
	if r.err != nil {
		return t, true
	}
	_, unknown := out.(*spec.Template)
	return out, !unknown
}

// refValue looks one reference up; it returns a copy of the value.
func (r *resolver) refValue(t *spec.Template, refp **spec.Ref) (any, bool) {
	ref := *refp
	if !r.resolvable(t, ref) {
		return nil, true
	}
	v, ok := r.lookup(ref.Address(), ref.Attr)
	if !ok {
		return nil, false
	}
	return clone(v), true
}

// resolvable reports whether ref is a resource reference, as a concrete
// spec's are, and records a problem when it is not.
func (r *resolver) resolvable(t *spec.Template, ref *spec.Ref) bool {
	if ref.Kind == spec.RefData {
		r.fail(problem(t, ref, "%s cannot be resolved here: the data was not read (resolve.SubstituteData)", ref))
		return false
	}
	if ref.Kind == spec.RefStack {
		r.fail(problem(t, ref, "%s cannot be resolved here: the stack's outputs were not read (resolve.SubstituteStacks)", ref))
		return false
	}
	if ref.Kind != spec.RefResource || ref.Key == spec.EachKey {
		r.fail(problem(t, ref, "%s cannot be resolved here: the spec was not expanded (resolve.Expand)", ref))
		return false
	}
	return true
}

func (r *resolver) bindRef(t *spec.Template, b *binding, ref *spec.Ref, key string) (*spec.Ref, bool) {
	if !r.resolvable(t, ref) {
		return nil, true
	}
	v, ok := r.lookup(ref.Address(), ref.Attr)
	if !ok {
		return nil, false
	}
	cv := toCty(v)
	if r.sensitive != nil && r.sensitive(ref.Address(), ref.Attr) {
		cv = cv.Mark(sensitive)
	}
	b.setRes(ref.Name, ref.Keyed, key, ref.Attr, cv)
	return nil, true
}

func (r *resolver) problem(p *spec.Problem) { r.fail(p) }

func (r *resolver) derived(v any) { r.secrets = append(r.secrets, v) }

func (r *resolver) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func problem(t *spec.Template, ref *spec.Ref, format string, args ...any) *spec.Problem {
	return &spec.Problem{File: t.File, Pos: ref.Pos, Msg: fmt.Sprintf(format, args...)}
}

// interpolateAt formats v, the value of what (a reference or an
// expression, as written, at pos of file), inside a longer string. The
// value itself is never quoted in a message: it may be a secret.
func interpolateAt(file string, pos spec.Pos, what string, v any) (string, *spec.Problem) {
	fail := func(format string, args ...any) (string, *spec.Problem) {
		return "", &spec.Problem{File: file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return fail("%s is null and cannot be part of a string (use it alone, as the whole value, to pass null)", what)
	case []any:
		return fail("%s is a list and cannot be part of a string (use it alone, as the whole value, to pass the list)", what)
	case map[string]any:
		return fail("%s is a map and cannot be part of a string (use it alone, as the whole value, to pass the map)", what)
	}
	return fail("%s has a value of type %T, which cannot be part of a string", what, v)
}

// clone deep-copies a JSON-like value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// quoteList lists names for a message, at most 10.
func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}
