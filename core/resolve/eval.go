package resolve

import (
	"fmt"
	"maps"
	"strings"

	"github.com/bulwark-iac/bulwark/core/spec"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Expressions (spec.Expr) are evaluated with HCL and go-cty's functions,
// as Terraform evaluates its own. The rest of core sees the same Go values
// as before (string, float64, bool, []any, map[string]any, nil): values
// are converted to cty as they are bound into an expression and back when
// it is evaluated, here and nowhere else.

// sensitive marks a cty value that comes from a sensitive variable: a
// function's result holding a marked value is marked too, so that a value
// derived from a secret is known to be one however it was computed.
type markKind string

const sensitive = markKind("sensitive")

// toCty converts a Go value of the spec's model to cty.
func toCty(v any) cty.Value {
	switch v := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	case *spec.Template:
		// Not known yet (a local over a variable with no value, in
		// ExpandUnknown).
		return cty.DynamicVal
	case string:
		return cty.StringVal(v)
	case float64:
		return cty.NumberFloatVal(v)
	case int:
		return cty.NumberIntVal(int64(v))
	case int64:
		return cty.NumberIntVal(v)
	case bool:
		return cty.BoolVal(v)
	case []any:
		if len(v) == 0 {
			return cty.EmptyTupleVal
		}
		out := make([]cty.Value, len(v))
		for i, e := range v {
			out[i] = toCty(e)
		}
		return cty.TupleVal(out)
	case map[string]any:
		if len(v) == 0 {
			return cty.EmptyObjectVal
		}
		out := make(map[string]cty.Value, len(v))
		for k, e := range v {
			out[k] = toCty(e)
		}
		return cty.ObjectVal(out)
	}
	return cty.StringVal(fmt.Sprint(v))
}

// fromCty converts an evaluated, known cty value back to the spec's model;
// marks are dropped (the caller has looked at them).
func fromCty(v cty.Value) any {
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString()
	case ty == cty.Number:
		f, _ := v.AsBigFloat().Float64()
		return f
	case ty == cty.Bool:
		return v.True()
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, fromCty(e))
		}
		return out
	case ty.IsMapType() || ty.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = fromCty(e)
		}
		return out
	}
	return nil
}

// binding collects the values bound into one expression, by root.
type binding struct {
	vars, each, data, locals map[string]cty.Value
	stack                    map[string]map[string]cty.Value // stack -> output -> value
	count                    *cty.Value
	res                      map[string]map[string]any // name -> attr or key -> value or map[attr]value
}

func (b *binding) setVar(name string, v cty.Value) {
	if b.vars == nil {
		b.vars = map[string]cty.Value{}
	}
	b.vars[name] = v
}

func (b *binding) setCount(index cty.Value) { b.count = &index }

func (b *binding) setLocal(name string, v cty.Value) {
	if b.locals == nil {
		b.locals = map[string]cty.Value{}
	}
	b.locals[name] = v
}

func (b *binding) setEach(key string, v cty.Value) {
	if b.each == nil {
		b.each = map[string]cty.Value{}
	}
	b.each[key] = v
}

func (b *binding) setData(name, attr string, v cty.Value) {
	if b.data == nil {
		b.data = map[string]cty.Value{}
	}
	obj := map[string]cty.Value{}
	if have, ok := b.data[name]; ok {
		obj = have.AsValueMap()
	}
	obj[attr] = v
	b.data[name] = cty.ObjectVal(obj)
}

// setStack binds output out of stack name (stack.NAME.outputs.OUT).
func (b *binding) setStack(name, out string, v cty.Value) {
	if b.stack == nil {
		b.stack = map[string]map[string]cty.Value{}
	}
	if b.stack[name] == nil {
		b.stack[name] = map[string]cty.Value{}
	}
	b.stack[name][out] = v
}

// setRes binds attribute attr of resource name (of its instance key, as
// written in the expression, when keyed).
func (b *binding) setRes(name string, keyed bool, key, attr string, v cty.Value) {
	if b.res == nil {
		b.res = map[string]map[string]any{}
	}
	m := b.res[name]
	if m == nil {
		m = map[string]any{}
		b.res[name] = m
	}
	if !keyed {
		m[attr] = v
		return
	}
	inst, _ := m[key].(map[string]cty.Value)
	if inst == nil {
		inst = map[string]cty.Value{}
		m[key] = inst
	}
	inst[attr] = v
}

// into returns bound with b's values added.
func (b *binding) into(bound map[string]cty.Value) map[string]cty.Value {
	out := maps.Clone(bound)
	if out == nil {
		out = map[string]cty.Value{}
	}
	if b.vars != nil {
		out["var"] = cty.ObjectVal(b.vars)
	}
	if b.each != nil {
		out["each"] = cty.ObjectVal(b.each)
	}
	if b.locals != nil {
		out["local"] = cty.ObjectVal(b.locals)
	}
	if b.count != nil {
		out["count"] = cty.ObjectVal(map[string]cty.Value{"index": *b.count})
	}
	if b.data != nil {
		out["data"] = cty.ObjectVal(b.data)
	}
	if b.stack != nil {
		stacks := make(map[string]cty.Value, len(b.stack))
		for name, outs := range b.stack {
			stacks[name] = cty.ObjectVal(map[string]cty.Value{"outputs": cty.ObjectVal(outs)})
		}
		out["stack"] = cty.ObjectVal(stacks)
	}
	for name, m := range b.res {
		obj := make(map[string]cty.Value, len(m))
		for k, e := range m {
			switch e := e.(type) {
			case cty.Value:
				obj[k] = e
			case map[string]cty.Value:
				obj[k] = cty.ObjectVal(e)
			}
		}
		out[name] = cty.ObjectVal(obj)
	}
	return out
}

// evalExpr evaluates x, every reference of which is bound. It returns the
// value, whether it is sensitive (it holds a marked value), or a problem
// positioned in file at what failed.
func evalExpr(file string, x *spec.Expr) (any, bool, *spec.Problem) {
	v, secret, prob := evalCty(file, x)
	if prob != nil {
		return nil, secret, prob
	}
	if !v.IsWhollyKnown() {
		return nil, secret, &spec.Problem{File: file, Pos: x.Pos, Msg: fmt.Sprintf("%s: the value is not known", x)}
	}
	return fromCty(v), secret, nil
}

// evalCty is evalExpr's evaluation, its value as cty (known or not).
func evalCty(file string, x *spec.Expr) (cty.Value, bool, *spec.Problem) {
	ctx := &hcl.EvalContext{Variables: x.Bound, Functions: spec.Functions()}
	v, diags := x.Syntax.Value(ctx)
	secret := v.ContainsMarked()
	if !secret {
		for _, b := range x.Bound {
			if b.ContainsMarked() {
				secret = true
				break
			}
		}
	}
	if diags.HasErrors() {
		d := diags[0]
		pos := x.Pos
		if d.Subject != nil {
			pos = x.PosOf(*d.Subject)
		}
		msg := d.Summary
		if d.Detail != "" && !secret {
			msg += ": " + strings.TrimSuffix(d.Detail, ".")
		} else if secret {
			// The detail may quote a value, and this one holds a secret.
			msg += " (the details are withheld: the expression uses a sensitive value)"
		}
		return cty.NilVal, secret, &spec.Problem{File: file, Pos: pos, Msg: fmt.Sprintf("%s: %s", x, msg)}
	}
	return v, secret, nil
}

// stage is one of the steps that substitute references in templates:
// Expand (variables and each), SubstituteData (data), Config and Value
// (resource attributes). substTemplate applies one to a template.
type stage interface {
	// refValue returns a plain reference's value (a copy), or false to
	// keep the reference (it may replace *ref, for [each.key]).
	refValue(t *spec.Template, ref **spec.Ref) (any, bool)
	// bindRef binds one of an expression's references into b, written
	// with instance key key, or returns false to keep it (in place of
	// ref when keep is not nil).
	bindRef(t *spec.Template, b *binding, ref *spec.Ref, key string) (keep *spec.Ref, bound bool)
	// problem records a problem.
	problem(p *spec.Problem)
	// derived records a value an expression computed from a sensitive
	// value.
	derived(v any)
}

// unknownKeeper is a stage in which an expression may be evaluated with
// values not known yet (ExpandUnknown): when keepsUnknown, one whose
// value is not known stays an expression, its problems reported.
type unknownKeeper interface {
	keepsUnknown() bool
}

// exprPart binds x's references; it returns the expression's value and
// true when none is left, else the expression still to evaluate (its
// bound values kept in it).
func exprPart(st stage, t *spec.Template, x *spec.Expr) (v any, rest *spec.Expr, done, failed bool) {
	var b binding
	var refs []*spec.Ref
	var keys []string
	changed := false
	for i, r := range x.Refs {
		keep, bound := st.bindRef(t, &b, r, x.Keys[i])
		if bound {
			changed = true
			continue
		}
		if keep == nil {
			keep = r
		} else {
			changed = true
		}
		refs = append(refs, keep)
		keys = append(keys, x.Keys[i])
	}
	if !changed && len(refs) > 0 {
		return nil, x, false, false
	}
	nx := x.With(refs, keys, b.into(x.Bound))
	if len(refs) > 0 {
		return nil, nx, false, false
	}
	if k, ok := st.(unknownKeeper); ok && k.keepsUnknown() {
		cv, _, prob := evalCty(t.File, nx)
		if prob != nil {
			st.problem(prob)
			return nil, nil, true, true
		}
		if !cv.IsWhollyKnown() {
			if ty := cv.Type(); t.Whole() == nil && (ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType()) {
				// As interpolateAt says of a known one.
				kind := "list"
				if ty.IsMapType() || ty.IsObjectType() {
					kind = "map"
				}
				st.problem(&spec.Problem{File: t.File, Pos: x.Pos, Msg: fmt.Sprintf("%s is a %s and cannot be part of a string (use it alone, as the whole value, to pass the %s)", x, kind, kind)})
				return nil, nil, true, true
			}
			return nil, nx, false, false
		}
	}
	v, secret, prob := evalExpr(t.File, nx)
	if prob != nil {
		st.problem(prob)
		return nil, nil, true, true
	}
	if secret {
		st.derived(v)
	}
	return v, nil, true, false
}

// substTemplate applies st to t. A template left with no reference is its
// value (of the value's own type when t is one reference or one
// expression); otherwise it is a template of what is left (t itself when
// nothing changed).
func substTemplate(st stage, t *spec.Template) any {
	if ref := t.Single(); ref != nil {
		orig := ref
		if v, ok := st.refValue(t, &ref); ok {
			return v
		}
		if ref == orig {
			return t
		}
		return spec.NewTemplate(t.File, t.Pos, []spec.Part{{Ref: ref}})
	}
	if x := t.Whole(); x != nil {
		v, nx, done, _ := exprPart(st, t, x)
		if done {
			return v
		}
		if nx == x {
			return t
		}
		return spec.NewTemplate(t.File, t.Pos, []spec.Part{{Expr: nx}})
	}
	parts := make([]spec.Part, 0, len(t.Parts))
	changed := false
	for _, p := range t.Parts {
		switch {
		case p.Ref != nil:
			ref := p.Ref
			v, ok := st.refValue(t, &ref)
			if !ok {
				changed = changed || ref != p.Ref
				parts = append(parts, spec.Part{Ref: ref})
				continue
			}
			changed = true
			s, err := interpolateAt(t.File, ref.Pos, ref.String(), v)
			if err != nil {
				st.problem(err)
				continue
			}
			parts = append(parts, spec.Part{Lit: s})
		case p.Expr != nil:
			v, nx, done, failed := exprPart(st, t, p.Expr)
			if !done {
				changed = changed || nx != p.Expr
				parts = append(parts, spec.Part{Expr: nx})
				continue
			}
			changed = true
			if failed {
				continue
			}
			s, err := interpolateAt(t.File, p.Expr.Pos, p.Expr.String(), v)
			if err != nil {
				st.problem(err)
				continue
			}
			parts = append(parts, spec.Part{Lit: s})
		default:
			parts = append(parts, p)
		}
	}
	if !changed {
		return t
	}
	return spec.NewTemplate(t.File, t.Pos, parts)
}

// HoldsSensitive reports whether v holds an expression not evaluated yet
// (its value known after apply) that uses a sensitive value: its value
// will be a secret, so a plan shows it as one already.
func HoldsSensitive(v any) bool {
	switch v := v.(type) {
	case *spec.Template:
		for _, p := range v.Parts {
			if p.Expr == nil {
				continue
			}
			for _, b := range p.Expr.Bound {
				if b.ContainsMarked() {
					return true
				}
			}
		}
	case map[string]any:
		for _, e := range v {
			if HoldsSensitive(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if HoldsSensitive(e) {
				return true
			}
		}
	}
	return false
}
