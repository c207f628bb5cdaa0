package spec

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// Expr is a ${...} that is more than one reference: an HCL expression
// (operators, a conditional, a for expression, function calls) over the
// same references, evaluated by package resolve with go-cty.
//
// An instance key written bare in a resource reference keeps bulwark's
// meaning inside an expression: web[a].id and web[eu-west-1].id name the
// instances "a" and "eu-west-1", not a variable a or a subtraction (the
// key is quoted before HCL parses the text), and web[each.key].id the
// instance of the referring one's key.
//
// An Expr is immutable; package resolve makes new ones as it substitutes
// variables, each, data and resource attributes into Bound.
type Expr struct {
	// Src is the text between ${ and }, as written.
	Src string
	// Syntax is Src parsed (bare instance keys quoted).
	Syntax hclsyntax.Expression
	// Refs are the references the expression still makes, in the order
	// they are written, each positioned at its own text.
	Refs []*Ref
	// Keys[i] is the instance key Refs[i] is written with in Syntax: its
	// Key, except for [each.key] once package resolve has replaced
	// Refs[i].Key with the instance's key.
	Keys []string
	// Bound are the values of the roots already substituted ("var",
	// "each", "data", a resource's name), for evaluation; nil at parse.
	Bound map[string]cty.Value
	// Pos is the position of the expression's "${" in the spec file.
	Pos Pos
	// rewrites are the changes made to Syntax's free traversals since
	// Src was parsed (a module's names moved under its call), in order,
	// so that a copy parsed again from Src can make them again.
	rewrites []exprRewrite
}

// exprRewrite is one change made to an expression's syntax tree: every
// free traversal passed through traversal, or the tree through node (a
// module's output put in place of module.CALL, say).
type exprRewrite struct {
	traversal func(hcl.Traversal) hcl.Traversal
	node      func(hclsyntax.Expression) hclsyntax.Expression
}

// apply makes the change to e, whose tree it may change in place.
func (rw exprRewrite) apply(e hclsyntax.Expression) hclsyntax.Expression {
	if rw.node != nil {
		return rw.node(e)
	}
	free := freeTraversals(e)
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if st, ok := n.(*hclsyntax.ScopeTraversalExpr); ok && len(st.Traversal) > 0 && free[&st.Traversal[0]] {
			st.Traversal = rw.traversal(st.Traversal)
		}
		return nil
	})
	return e
}

// freeTraversals returns the free traversals of e (not a for
// expression's own names), by their first step.
func freeTraversals(e hclsyntax.Expression) map[*hcl.Traverser]bool {
	free := map[*hcl.Traverser]bool{}
	for _, tr := range hclsyntax.Variables(e) {
		if len(tr) > 0 {
			free[&tr[0]] = true
		}
	}
	return free
}

// String returns the expression as it is written: ${upper(var.env)}.
func (x *Expr) String() string { return "${" + x.Src + "}" }

// With returns a copy of x with refs, keys and bound in place of its own.
func (x *Expr) With(refs []*Ref, keys []string, bound map[string]cty.Value) *Expr {
	c := *x
	c.Refs, c.Keys, c.Bound = refs, keys, bound
	return &c
}

// knownRoot reports whether an expression's traversal starting with name
// is not a resource reference: a bare key never follows one.
func knownRoot(name string) bool {
	switch name {
	case "var", "each", "data", "local", "count", "module", "path", "self", "terraform":
		return true
	}
	return false
}

// quoteBareKeys returns src with every bare instance key of a resource
// reference quoted (web[a] -> web["a"]), and the offsets in the result
// where a quote pair was added, so that positions map back to src.
func quoteBareKeys(src string) (string, []int) {
	if !strings.Contains(src, "[") {
		return src, nil // no index, no key
	}
	toks, diags := hclsyntax.LexExpression([]byte(src), "", hcl.InitialPos)
	if diags.HasErrors() {
		return src, nil
	}
	// The names a for expression binds are not resources.
	local := map[string]bool{}
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Type == hclsyntax.TokenIdent && string(toks[i].Bytes) == "for" && (i == 0 || toks[i-1].Type == hclsyntax.TokenOBrack || toks[i-1].Type == hclsyntax.TokenOBrace) {
			for j := i + 1; j < len(toks) && !(toks[j].Type == hclsyntax.TokenIdent && string(toks[j].Bytes) == "in"); j++ {
				if toks[j].Type == hclsyntax.TokenIdent {
					local[string(toks[j].Bytes)] = true
				}
			}
		}
	}
	var b strings.Builder
	var shifts []int
	last := 0
	for i := 0; i+1 < len(toks); i++ {
		t := toks[i]
		if t.Type != hclsyntax.TokenIdent || toks[i+1].Type != hclsyntax.TokenOBrack {
			continue
		}
		if i > 0 && (toks[i-1].Type == hclsyntax.TokenDot || toks[i-1].Type == hclsyntax.TokenCBrack) {
			continue
		}
		name := string(t.Bytes)
		if knownRoot(name) || local[name] {
			continue
		}
		depth, j := 0, i+1
		for ; j < len(toks); j++ {
			switch toks[j].Type {
			case hclsyntax.TokenOBrack:
				depth++
			case hclsyntax.TokenCBrack:
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if j >= len(toks) {
			break
		}
		from, to := toks[i+1].Range.End.Byte, toks[j].Range.Start.Byte
		key := src[from:to]
		if !keyRE.MatchString(key) || strings.TrimSpace(key) != key {
			continue
		}
		b.WriteString(src[last:from])
		shifts = append(shifts, b.Len())
		b.WriteString(`"` + key + `"`)
		last = to
		i = j
	}
	if shifts == nil {
		return src, nil
	}
	b.WriteString(src[last:])
	return b.String(), shifts
}

// origOffset maps an offset in the quoted text back to src's.
func origOffset(off int, shifts []int) int {
	n := 0
	for _, s := range shifts {
		if s < off {
			n += 2
			if off <= s+1 {
				n-- // inside the added opening quote
			}
		}
	}
	return max(0, off-n)
}

// exprPos returns the position of byte off of src, for an expression
// whose "${" is at at.
func exprPos(at Pos, src string, off int) Pos {
	if off > len(src) {
		off = len(src)
	}
	before := src[:off]
	if nl := strings.LastIndexByte(before, '\n'); nl >= 0 {
		return Pos{Line: at.Line + strings.Count(before, "\n"), Col: 1 + utf8.RuneCountInString(before[nl+1:])}
	}
	return Pos{Line: at.Line, Col: at.Col + 2 + utf8.RuneCountInString(before)}
}

// exprProblem is a problem of an expression, at an offset of its source.
type exprProblem struct {
	off int
	msg string
}

// parseExpr parses body (the text between ${ and }) as an expression. Its
// refs are positioned relative to a "${" at line 1, column 1; the caller
// moves them (placeExpr). A problem is returned with the offset in body
// it is at.
func parseExpr(body string) (*Expr, *exprProblem) {
	quoted, shifts := quoteBareKeys(body)
	syn, diags := hclsyntax.ParseExpression([]byte(quoted), "", hcl.InitialPos)
	if diags.HasErrors() {
		d := diags[0]
		off := 0
		if d.Subject != nil {
			off = origOffset(d.Subject.Start.Byte, shifts)
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + strings.TrimSuffix(d.Detail, ".")
		}
		return nil, &exprProblem{off: off, msg: fmt.Sprintf("invalid reference %s: %s", quote("${"+body+"}"), msg)}
	}
	x := &Expr{Src: body, Syntax: syn}
	var prob *exprProblem
	hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		fc, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || prob != nil {
			return nil
		}
		off := origOffset(fc.NameRange.Start.Byte, shifts)
		f, known := functions()[fc.Name]
		if !known {
			// At the ${, as a malformed reference is.
			prob = &exprProblem{off: 0, msg: fmt.Sprintf("invalid reference %s: unknown function %q%s", quote("${"+body+"}"), fc.Name, suggestFunction(fc.Name))}
			return nil
		}
		params, variadic := len(f.Params()), f.VarParam() != nil
		switch n := len(fc.Args); {
		case fc.ExpandFinal:
		case n < params || (!variadic && n > params):
			want := fmt.Sprintf("%d", params)
			if variadic {
				want = fmt.Sprintf("at least %d", params)
			}
			prob = &exprProblem{off: off, msg: fmt.Sprintf("invalid reference %s: function %q takes %s argument%s, not %d", quote("${"+body+"}"), fc.Name, want, plural(params), n)}
		}
		return nil
	})
	if prob != nil {
		return nil, prob
	}
	computed := computedStacks(syn)
	for _, tr := range syn.Variables() {
		off := origOffset(tr.SourceRange().Start.Byte, shifts)
		end := origOffset(tr.SourceRange().End.Byte, shifts)
		text := body[off:max(off, min(end, len(body)))]
		if c, ok := computed[tr.SourceRange().Start.Byte]; ok && len(tr) == 1 {
			// stack[EXPR].outputs.X: the name is known once the
			// variables are (resolve.Expand names the ref).
			ref := &Ref{Kind: RefStack, Attr: c.out, NameExpr: c.key, Pos: Pos{Line: 1, Col: 1 + off}}
			x.Refs = append(x.Refs, ref)
			x.Keys = append(x.Keys, "")
			continue
		}
		ref, key, msg := traversalRef(tr)
		if msg != "" {
			return nil, &exprProblem{off: off, msg: fmt.Sprintf("invalid reference %s in %s: %s", quote(text), quote("${"+body+"}"), msg)}
		}
		ref.Pos = Pos{Line: 1, Col: 1 + off} // placeExpr moves it
		x.Refs = append(x.Refs, ref)
		x.Keys = append(x.Keys, key)
	}
	return x, nil
}

// computedStack is a stack[EXPR].outputs.X whose name is computed.
type computedStack struct {
	key hclsyntax.Expression
	out string
}

// computedStacks finds the stack[EXPR].outputs.X of syn whose EXPR is not
// a literal, by the byte offset of their stack root.
func computedStacks(syn hclsyntax.Expression) map[int]computedStack {
	out := map[int]computedStack{}
	hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		rt, ok := n.(*hclsyntax.RelativeTraversalExpr)
		if !ok || len(rt.Traversal) != 2 {
			return nil
		}
		ix, ok := rt.Source.(*hclsyntax.IndexExpr)
		if !ok {
			return nil
		}
		root, ok := ix.Collection.(*hclsyntax.ScopeTraversalExpr)
		if !ok || len(root.Traversal) != 1 || root.Traversal.RootName() != "stack" {
			return nil
		}
		a, ok1 := rt.Traversal[0].(hcl.TraverseAttr)
		b, ok2 := rt.Traversal[1].(hcl.TraverseAttr)
		if !ok1 || !ok2 || a.Name != "outputs" || !outputNameRE.MatchString(b.Name) {
			return nil
		}
		out[root.SrcRange.Start.Byte] = computedStack{key: ix.Key, out: b.Name}
		return nil
	})
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// placeExpr positions x's references for an expression whose "${" is at
// at; x.Src is the body (the offsets parseExpr recorded are body offsets).
func placeExpr(x *Expr, at Pos) {
	x.Pos = at
	for _, r := range x.Refs {
		r.Pos = exprPos(at, x.Src, r.Pos.Col-1)
	}
}

// traversalRef turns a traversal an expression makes into a Ref, and the
// instance key as written; msg says why it cannot be one.
func traversalRef(tr hcl.Traversal) (*Ref, string, string) {
	root := tr.RootName()
	attr := func(i int) (string, bool) {
		if i >= len(tr) {
			return "", false
		}
		a, ok := tr[i].(hcl.TraverseAttr)
		return a.Name, ok
	}
	switch root {
	case "var":
		name, ok := attr(1)
		if !ok || !varNameRE.MatchString(name) {
			return nil, "", "want var.NAME, NAME matching " + varNamePattern
		}
		return &Ref{Kind: RefVar, Name: name}, "", ""
	case "each":
		switch name, _ := attr(1); name {
		case "key":
			return &Ref{Kind: RefEachKey}, "", ""
		case "value":
			return &Ref{Kind: RefEachValue}, "", ""
		}
		return nil, "", "each has only .key and .value"
	case "data":
		name, ok1 := attr(1)
		a, ok2 := attr(2)
		if !ok1 || !ok2 || !nameRE.MatchString(name) {
			return nil, "", "want data.NAME.ATTR, NAME matching " + namePattern
		}
		return &Ref{Kind: RefData, Name: name, Attr: a}, "", ""
	case "local":
		name, ok := attr(1)
		if !ok || !varNameRE.MatchString(name) {
			return nil, "", "want local.NAME, NAME matching " + varNamePattern
		}
		return &Ref{Kind: RefLocal, Name: name}, "", ""
	case "count":
		if name, _ := attr(1); name == "index" {
			return &Ref{Kind: RefCountIndex}, "", ""
		}
		return nil, "", "count has only .index"
	case "stack":
		if len(tr) == 1 {
			// Not stack.NAME nor stack["NAME"]: stack[EXPR], whose name
			// is computed.
			return nil, "", "want stack.NAME.outputs.X, stack[\"NAME\"].outputs.X or stack[EXPR].outputs.X"
		}
		var name string
		switch t := tr[1].(type) {
		case hcl.TraverseAttr:
			name = t.Name
		case hcl.TraverseIndex:
			if t.Key.Type() == cty.String && t.Key.IsKnown() && !t.Key.IsNull() {
				name = t.Key.AsString()
			}
		}
		outs, ok1 := attr(2)
		out, ok2 := attr(3)
		if len(tr) == 2 && name != "" && !ok1 {
			// stack.ATTR: an attribute of a resource named stack.
			break
		}
		if !stackNameRE.MatchString(name) || !ok1 || outs != "outputs" || !ok2 || !outputNameRE.MatchString(out) || len(tr) > 4 {
			return nil, "", "want stack.NAME.outputs.X, NAME a stack's name (matching " + stackNamePattern + "), X an output's"
		}
		return &Ref{Kind: RefStack, Name: name, Attr: out}, "", ""
	case "module":
		ref, _, ok := moduleAnyTraversal(tr)
		if !ok {
			return nil, "", "want module.CALL, module.CALL.OUTPUT, module.CALL[\"KEY\"].OUTPUT or module.CALL[N].OUTPUT, CALL matching " + namePattern
		}
		return ref, "", ""
	case "path", "self", "terraform":
		return nil, "", fmt.Sprintf("%s.* is not supported in a spec", root)
	}
	ref := &Ref{Kind: RefResource, Name: root}
	i := 1
	if i < len(tr) {
		if ix, ok := tr[i].(hcl.TraverseIndex); ok {
			key, ok := indexKey(ix.Key)
			if !ok {
				return nil, "", "an instance key is a string: NAME[KEY] or NAME[\"KEY\"]"
			}
			if key != EachKey && !keyRE.MatchString(key) {
				return nil, "", fmt.Sprintf("invalid instance key %s: a key must match %s (or be each.key)", quote(key), KeyPattern)
			}
			ref.Key, ref.Keyed = key, true
			i++
		}
	}
	a, ok := attr(i)
	if !ok {
		return nil, "", "a resource reference names an attribute: NAME.ATTR or NAME[KEY].ATTR, KEY bare, quoted or each.key"
	}
	ref.Attr = a
	return ref, ref.Key, ""
}

// moduleTraversal reads module.CALL.OUTPUT, module.CALL["KEY"].OUTPUT or
// module.CALL[N].OUTPUT at the start of tr, and returns the number of
// steps it takes.
func moduleTraversal(tr hcl.Traversal) (*Ref, int, bool) {
	if len(tr) < 3 || tr.RootName() != "module" {
		return nil, 0, false
	}
	call, ok := tr[1].(hcl.TraverseAttr)
	if !ok || !nameRE.MatchString(call.Name) {
		return nil, 0, false
	}
	ref := &Ref{Kind: RefModule, Name: call.Name}
	i := 2
	if ix, isIx := tr[2].(hcl.TraverseIndex); isIx {
		key, ok := indexKey(ix.Key)
		if !ok || !keyRE.MatchString(key) {
			return nil, 0, false
		}
		ref.Key, ref.Keyed = key, true
		i++
	}
	if i >= len(tr) {
		return nil, 0, false
	}
	out, ok := tr[i].(hcl.TraverseAttr)
	if !ok {
		return nil, 0, false
	}
	ref.Attr = out.Name
	return ref, i + 1, true
}

// indexKey returns an index written in a traversal as a key.
func indexKey(v cty.Value) (string, bool) {
	if v.IsNull() || !v.IsKnown() {
		return "", false
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), true
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return "", false
		}
		i, _ := bf.Int(new(big.Int))
		return i.String(), true
	}
	return "", false
}

// exprEnd returns the offset in s of the "}" that closes the ${ whose body
// starts at from, or -1: braces nest, and a quoted string (with its own
// ${...}) is skipped, so that {a = 1} and "}" can be written inside.
func exprEnd(s string, from int) int {
	depth := 0
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i
			}
			depth--
		case '"':
			j := stringEnd(s, i+1)
			if j < 0 {
				return -1
			}
			i = j
		}
	}
	return -1
}

// stringEnd returns the offset of the quote that ends the HCL string
// whose text starts at from, or -1.
func stringEnd(s string, from int) int {
	for i := from; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '"':
			return i
		case strings.HasPrefix(s[i:], "$${"):
			i += 2
		case strings.HasPrefix(s[i:], "${"):
			j := exprEnd(s, i+2)
			if j < 0 {
				return -1
			}
			i = j
		}
	}
	return -1
}

// isExpr reports whether body, which is not a well-formed reference, is
// an expression rather than a malformed reference: text made only of what
// a reference is made of (names, dots, brackets, quotes, dashes) is a
// reference, and keeps the reference's message, unless it reaches into a
// variable's or each.value's value (var.tags["env"], each.value.size).
func isExpr(body string) bool {
	b := strings.TrimSpace(body)
	if b == "" {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(`_.:-[]"`, c) >= 0) {
			return true
		}
	}
	if varDeepRE.MatchString(b) || moduleDeepRE.MatchString(b) || strings.HasPrefix(b, "stack[") {
		return true
	}
	return len(b) > len("each.value") && strings.HasPrefix(b, "each.value") && (b[10] == '.' || b[10] == '[')
}

var varDeepRE = lazy(`^(?:var|local)\.` + varNamePattern + `[.\[]`)

// moduleDeepRE matches a module output reached into
// (module.net.subnets["a"], module.app["eu"].tags.x).
var moduleDeepRE = lazy(`^module\.[a-z][a-z0-9_-]*(?:\[[^\]]*\])?\.` + outputNamePattern + `[.\[]`)

// suggestFunction returns " (did you mean NAME?)" for the function whose
// name is closest to name, when one is close, else a pointer to the list.
func suggestFunction(name string) string {
	best, bestD := "", 3
	if len(name) > 64 {
		return " (docs/spec.md lists the functions)"
	}
	for _, n := range slices.Sorted(maps.Keys(functions())) {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return " (docs/spec.md lists the functions)"
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// PosOf returns the position in the spec file of r, a range of x.Syntax
// (a problem HCL reports while evaluating it).
func (x *Expr) PosOf(r hcl.Range) Pos {
	_, shifts := quoteBareKeys(x.Src)
	return exprPos(x.Pos, x.Src, origOffset(r.Start.Byte, shifts))
}

// unknownType is the type of an expression whose every reference is bound
// but whose value is not known (it uses a variable with no value): false
// when a reference is left, when evaluation fails (reported where it was
// evaluated) or when the type itself is not known.
func (x *Expr) unknownType() (providers.AttributeType, bool) {
	if len(x.Refs) > 0 || x.Bound == nil {
		return 0, false
	}
	v, diags := x.Syntax.Value(&hcl.EvalContext{Variables: x.Bound, Functions: Functions()})
	if diags.HasErrors() {
		return 0, false
	}
	switch ty := v.Type(); {
	case ty == cty.String:
		return providers.TypeString, true
	case ty == cty.Number:
		return providers.TypeNumber, true
	case ty == cty.Bool:
		return providers.TypeBool, true
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		return providers.TypeList, true
	case ty.IsMapType() || ty.IsObjectType():
		return providers.TypeMap, true
	}
	return 0, false
}
