package spec

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// A module output, or a whole call (${module.app}: an object of its
// outputs, a map or list of them for a call with for_each or count), may be
// used inside an expression (${length(module.app)}, ${[for k, a in
// module.app : a.url]}). Its value is a Go value whose leaves may be
// templates still to resolve (a resource's attribute), so it is put into the
// expression's syntax tree as an expression of its own: an object, a tuple,
// a template, the traversals its references are. Resolve then sees ordinary
// references in the expression.

// moduleAnyTraversal reads module.CALL.OUTPUT (moduleTraversal) or a whole
// call, module.CALL or module.CALL[KEY], at the start of tr, and returns the
// number of steps it takes.
func moduleAnyTraversal(tr hcl.Traversal) (*Ref, int, bool) {
	if ref, n, ok := moduleTraversal(tr); ok {
		return ref, n, true
	}
	if len(tr) < 2 || tr.RootName() != "module" {
		return nil, 0, false
	}
	call, ok := tr[1].(hcl.TraverseAttr)
	if !ok || !nameRE.MatchString(call.Name) {
		return nil, 0, false
	}
	ref := &Ref{Kind: RefModule, Name: call.Name}
	if len(tr) > 2 {
		ix, isIx := tr[2].(hcl.TraverseIndex)
		if !isIx {
			return nil, 0, false
		}
		key, ok := indexKey(ix.Key)
		if !ok || !keyRE.MatchString(key) {
			return nil, 0, false
		}
		ref.Key, ref.Keyed = key, true
		return ref, 3, true
	}
	return ref, 2, true
}

// valueLeaves returns the references v's templates make, each with the
// instance key it is written with, or the first that no traversal can
// name.
func valueLeaves(v any) (refs []*Ref, keys []string, bad *Ref) {
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case *Template:
			for _, p := range v.Parts {
				switch {
				case p.Ref != nil:
					if _, ok := refTraversal(p.Ref, hcl.Range{}); !ok && bad == nil {
						bad = p.Ref
					}
					refs, keys = append(refs, p.Ref), append(keys, p.Ref.Key)
				case p.Expr != nil:
					refs, keys = append(refs, p.Expr.Refs...), append(keys, p.Expr.Keys...)
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return refs, keys, bad
}

// valueExpr returns a fresh syntax tree whose value is v's.
func valueExpr(v any, rng hcl.Range) hclsyntax.Expression {
	switch v := v.(type) {
	case *Template:
		if ref := v.Single(); ref != nil {
			tr, _ := refTraversal(ref, rng)
			return &hclsyntax.ScopeTraversalExpr{Traversal: tr, SrcRange: rng}
		}
		if x := v.Whole(); x != nil {
			return reparseWith(x, nil).Syntax
		}
		parts := make([]hclsyntax.Expression, 0, len(v.Parts))
		for _, p := range v.Parts {
			switch {
			case p.Ref != nil:
				tr, _ := refTraversal(p.Ref, rng)
				parts = append(parts, &hclsyntax.ScopeTraversalExpr{Traversal: tr, SrcRange: rng})
			case p.Expr != nil:
				parts = append(parts, reparseWith(p.Expr, nil).Syntax)
			default:
				parts = append(parts, &hclsyntax.LiteralValueExpr{Val: cty.StringVal(p.Lit), SrcRange: rng})
			}
		}
		return &hclsyntax.TemplateExpr{Parts: parts, SrcRange: rng}
	case map[string]any:
		items := make([]hclsyntax.ObjectConsItem, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			items = append(items, hclsyntax.ObjectConsItem{
				KeyExpr:   &hclsyntax.ObjectConsKeyExpr{Wrapped: &hclsyntax.LiteralValueExpr{Val: cty.StringVal(k), SrcRange: rng}},
				ValueExpr: valueExpr(v[k], rng),
			})
		}
		return &hclsyntax.ObjectConsExpr{Items: items, SrcRange: rng, OpenRange: rng}
	case []any:
		exprs := make([]hclsyntax.Expression, len(v))
		for i, e := range v {
			exprs[i] = valueExpr(e, rng)
		}
		return &hclsyntax.TupleConsExpr{Exprs: exprs, SrcRange: rng, OpenRange: rng}
	case string:
		return &hclsyntax.LiteralValueExpr{Val: cty.StringVal(v), SrcRange: rng}
	case float64:
		return &hclsyntax.LiteralValueExpr{Val: cty.NumberFloatVal(v), SrcRange: rng}
	case bool:
		return &hclsyntax.LiteralValueExpr{Val: cty.BoolVal(v), SrcRange: rng}
	}
	return &hclsyntax.LiteralValueExpr{Val: cty.NullVal(cty.DynamicPseudoType), SrcRange: rng}
}

// substModuleValues returns a copy of x in which every free module.CALL...
// traversal whose reference vals holds (by callInstance "." Attr) is that
// value, as an expression; its references take the module reference's
// place in Refs, positioned at it.
func substModuleValues(x *Expr, vals map[string]any) *Expr {
	return substValues(x, vals, func(ref *Ref) (string, bool) {
		return ref.callInstance() + "." + ref.Attr, ref.Kind == RefModule
	}, func(tr hcl.Traversal) (string, int, bool) {
		mref, n, ok := moduleAnyTraversal(tr)
		if !ok {
			return "", 0, false
		}
		return mref.callInstance() + "." + mref.Attr, n, true
	})
}

// substLocalValues is substModuleValues for local.NAME, vals by NAME.
func substLocalValues(x *Expr, vals map[string]any) *Expr {
	return substValues(x, vals, func(ref *Ref) (string, bool) {
		return ref.Name, ref.Kind == RefLocal
	}, func(tr hcl.Traversal) (string, int, bool) {
		if tr.RootName() != "local" || len(tr) < 2 {
			return "", 0, false
		}
		a, ok := tr[1].(hcl.TraverseAttr)
		return a.Name, 2, ok
	})
}

// substValues puts vals into x where a reference (refKey) or a free
// traversal (trKey) names one.
func substValues(x *Expr, vals map[string]any, refKey func(*Ref) (string, bool), trKey func(hcl.Traversal) (string, int, bool)) *Expr {
	var refs []*Ref
	var keys []string
	for i, ref := range x.Refs {
		k, is := refKey(ref)
		v, ok := vals[k]
		if !is || !ok {
			refs, keys = append(refs, ref), append(keys, x.Keys[i])
			continue
		}
		lr, lk, _ := valueLeaves(v)
		for j, l := range lr {
			c := *l
			c.Pos = ref.Pos
			refs, keys = append(refs, &c), append(keys, lk[j])
		}
	}
	node := func(e hclsyntax.Expression) hclsyntax.Expression {
		return replaceFree(e, func(st *hclsyntax.ScopeTraversalExpr) (hclsyntax.Expression, bool) {
			k, n, ok := trKey(st.Traversal)
			if !ok {
				return nil, false
			}
			v, ok := vals[k]
			if !ok {
				return nil, false
			}
			ne := valueExpr(v, st.SrcRange)
			if n < len(st.Traversal) {
				ne = &hclsyntax.RelativeTraversalExpr{Source: ne, Traversal: slices.Clone(st.Traversal[n:]), SrcRange: st.SrcRange}
			}
			return ne, true
		})
	}
	nx := reparseWith(x, &exprRewrite{node: node})
	nx.Refs, nx.Keys = refs, keys
	return nx
}

var exprType = reflect.TypeFor[hclsyntax.Expression]()

// replaceFree returns root with every free traversal for which fn returns
// an expression replaced by it (root itself changed in place).
func replaceFree(root hclsyntax.Expression, fn func(*hclsyntax.ScopeTraversalExpr) (hclsyntax.Expression, bool)) hclsyntax.Expression {
	free := freeTraversals(root)
	try := func(e hclsyntax.Expression) (hclsyntax.Expression, bool) {
		st, ok := e.(*hclsyntax.ScopeTraversalExpr)
		if !ok || len(st.Traversal) == 0 || !free[&st.Traversal[0]] {
			return nil, false
		}
		return fn(st)
	}
	if n, ok := try(root); ok {
		return n
	}
	r := replacer{try: try, seen: map[uintptr]bool{}}
	r.in(reflect.ValueOf(root))
	return root
}

// replacer walks a syntax tree by reflection (hclsyntax has no way to
// replace a node), setting every Expression field, or element of a slice
// of them, that try replaces.
type replacer struct {
	try  func(hclsyntax.Expression) (hclsyntax.Expression, bool)
	seen map[uintptr]bool
}

func (r replacer) in(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || r.seen[v.Pointer()] {
			return
		}
		r.seen[v.Pointer()] = true
		r.in(v.Elem())
	case reflect.Interface:
		if !v.IsNil() {
			r.in(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				r.field(f)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			r.field(v.Index(i))
		}
	}
}

func (r replacer) field(f reflect.Value) {
	if f.Type() == exprType && !f.IsNil() && f.CanSet() {
		if n, ok := r.try(f.Interface().(hclsyntax.Expression)); ok {
			f.Set(reflect.ValueOf(n))
			return
		}
	}
	switch f.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Struct, reflect.Slice:
		r.in(f)
	}
}

// badLeaf is the message for a value that cannot be put into an
// expression.
func badLeaf(ref, leaf *Ref) string {
	return fmt.Sprintf("%s cannot be used inside an expression: its value holds %s, which an expression cannot name (use it alone, as the whole value)", ref, leaf)
}
