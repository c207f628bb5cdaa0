package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// RefKind says what a reference names.
type RefKind int

const (
	// RefVar is ${var.NAME}: the value of a variable.
	RefVar RefKind = iota + 1
	// RefResource is ${RESOURCE.ATTR} or ${RESOURCE[KEY].ATTR}: an
	// attribute (id, or one the provider returns) of a resource or of one
	// instance of a for_each resource.
	RefResource
	// RefEachKey is ${each.key}: the key of the for_each instance the value
	// is in.
	RefEachKey
	// RefEachValue is ${each.value}: the value of the for_each instance the
	// value is in (for a list, the element, equal to the key).
	RefEachValue
	// RefData is ${data.NAME.ATTR}: an attribute of what the data entry
	// NAME read at plan time.
	RefData
	// RefLocal is ${local.NAME}: the value of a local (locals:).
	RefLocal
	// RefCountIndex is ${count.index}: the index of the count instance
	// the value is in.
	RefCountIndex
	// RefStack is ${stack.NAME.outputs.X}: output X of another stack NAME
	// on the same backend, read at plan time (Name is the stack, Attr the
	// output).
	RefStack
	// RefModule is ${module.CALL.OUTPUT}: an output of the module call
	// CALL (Name), OUTPUT its Attr. Parse replaces every one by what the
	// output's value is once the module is instantiated.
	RefModule
)

// String names the kind for messages.
func (k RefKind) String() string {
	switch k {
	case RefVar:
		return "variable"
	case RefResource:
		return "resource"
	case RefEachKey:
		return "each.key"
	case RefEachValue:
		return "each.value"
	case RefData:
		return "data"
	case RefLocal:
		return "local"
	case RefCountIndex:
		return "count.index"
	case RefStack:
		return "stack"
	case RefModule:
		return "module"
	}
	return fmt.Sprintf("RefKind(%d)", int(k))
}

// EachKey is the Key of a resource reference written ${RESOURCE[each.key].ATTR}:
// the instance of RESOURCE whose key is the referring instance's own key.
// resolve.Expand replaces it with that key; for that reason no for_each may
// have "each.key" as a key.
const EachKey = "each.key"

// CountIndex is the Key of a resource reference written
// ${RESOURCE[count.index].ATTR}: the instance of RESOURCE whose index is
// the referring instance's own (resolve.Expand replaces it).
const CountIndex = "count.index"

// Ref is one ${...} reference, as written in the spec.
type Ref struct {
	Kind RefKind
	// Name is the variable's name (RefVar), the resource's name
	// (RefResource) or the data entry's (RefData), as written; empty for
	// each.key and each.value.
	Name string
	// Key is the instance key of ${RESOURCE[KEY].ATTR} (EachKey for
	// [each.key]); Keyed reports that a [KEY] was written.
	Key   string
	Keyed bool
	// Attr is the attribute of a RefResource ("id", "arn", ...) or of a
	// RefData.
	Attr string
	// NameExpr is the name of a RefStack written stack[EXPR] (computed
	// from variables and locals): Name is "" until resolve.Expand
	// evaluates it.
	NameExpr hclsyntax.Expression
	// Pos is the position of the reference's "${" in the spec file (the
	// start of the string when it cannot be told, e.g. after an escape
	// sequence in a double-quoted string).
	Pos Pos
}

// Address returns the address of the resource instance a RefResource
// names ("net", "web[a]"); empty for other kinds.
func (r *Ref) Address() string {
	if r.Kind != RefResource {
		return ""
	}
	return Address{Name: r.Name, Key: r.Key, Keyed: r.Keyed}.String()
}

// callInstance returns CALL, CALL["KEY"] or CALL[N] of a RefModule.
func (r *Ref) callInstance() string {
	switch {
	case !r.Keyed:
		return r.Name
	case isIndex(r.Key):
		return r.Name + "[" + r.Key + "]"
	}
	return r.Name + `["` + r.Key + `"]`
}

// String returns the reference as it is written: ${var.env},
// ${web[a].id}, ${each.key}.
func (r *Ref) String() string {
	switch r.Kind {
	case RefVar:
		return "${var." + r.Name + "}"
	case RefResource:
		return "${" + r.Address() + "." + r.Attr + "}"
	case RefEachKey:
		return "${each.key}"
	case RefEachValue:
		return "${each.value}"
	case RefData:
		return "${data." + r.Name + "." + r.Attr + "}"
	case RefLocal:
		return "${local." + r.Name + "}"
	case RefCountIndex:
		return "${count.index}"
	case RefStack:
		if r.Name == "" {
			return "${stack[...].outputs." + r.Attr + "}"
		}
		return "${stack." + r.Name + ".outputs." + r.Attr + "}"
	case RefModule:
		if r.Attr == "" {
			return "${module." + r.callInstance() + "}"
		}
		return "${module." + r.callInstance() + "." + r.Attr + "}"
	}
	return "${?}"
}

// Part is one piece of a Template: literal text (Ref and Expr nil), a
// reference, or an expression.
type Part struct {
	Lit  string
	Ref  *Ref
	Expr *Expr
}

// literal reports whether p is literal text.
func (p Part) literal() bool { return p.Ref == nil && p.Expr == nil }

// Template is a config, output or for_each string that holds at least one
// ${...} reference. Parse leaves one in place of such a string in a
// Resource's Config, an Output's Value, a Provider's Config and a ForEach;
// every other string is a plain Go string, with $${ already turned into ${.
//
// A Template is immutable once parsed and is always used as *Template (so
// that two config values can be compared with ==). It cannot be written as
// JSON: its MarshalJSON fails, so that an unresolved value never reaches a
// state file, a plugin or --json output by mistake; resolve it first
// (package core/resolve).
type Template struct {
	// Parts in order; adjacent literals are merged and no literal is empty.
	Parts []Part
	// File and Pos say where the string is in the spec (Pos is the
	// position of its YAML scalar).
	File string
	Pos  Pos
}

// Single returns the reference when the template is exactly one reference
// and nothing else ("${net.id}"): its value keeps the referenced value's
// type. Otherwise it returns nil: the template's value is a string.
func (t *Template) Single() *Ref {
	if len(t.Parts) == 1 && t.Parts[0].Ref != nil {
		return t.Parts[0].Ref
	}
	return nil
}

// Whole returns the expression when the template is exactly one
// expression and nothing else ("${upper(var.env)}"): its value keeps its
// type. Otherwise it returns nil.
func (t *Template) Whole() *Expr {
	if len(t.Parts) == 1 && t.Parts[0].Expr != nil {
		return t.Parts[0].Expr
	}
	return nil
}

// hasExpr reports whether some part is an expression.
func (t *Template) hasExpr() bool {
	for _, p := range t.Parts {
		if p.Expr != nil {
			return true
		}
	}
	return false
}

// Refs returns the template's references in order, those its expressions
// make included.
func (t *Template) Refs() []*Ref {
	var out []*Ref
	for _, p := range t.Parts {
		if p.Ref != nil {
			out = append(out, p.Ref)
		}
		if p.Expr != nil {
			out = append(out, p.Expr.Refs...)
		}
	}
	return out
}

// String returns the template as it would be written (literal ${ escaped
// as $${).
func (t *Template) String() string {
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Ref != nil {
			b.WriteString(p.Ref.String())
		} else if p.Expr != nil {
			b.WriteString(p.Expr.String())
		} else {
			b.WriteString(strings.ReplaceAll(p.Lit, "${", "$${"))
		}
	}
	return b.String()
}

// MarshalJSON refuses: an unresolved template must never be written.
func (t *Template) MarshalJSON() ([]byte, error) {
	return nil, fmt.Errorf("%s: unresolved reference %s cannot be written (resolve it first)", Problem{File: t.File, Pos: t.Pos}.where(), clip(t.String()))
}

// where is the FILE:LINE:COL prefix of a problem, without the message.
func (p Problem) where() string {
	p.Msg = ""
	return strings.TrimSuffix(p.Error(), ": ")
}

// tmplItem is one ${...} of a string, well-formed (ref) or not (msg), at
// bytes [off, end) of the string.
type tmplItem struct {
	off, end int
	ref      *Ref
	expr     *Expr
	msg      string
	msgOff   int  // the offset in the body the problem is at, when inExpr
	inExpr   bool // the problem is an expression's, at msgOff
}

var (
	refVarRE   = lazy(`^var\.(` + varNamePattern + `)$`)
	refResRE   = lazy(`^([a-z][a-z0-9_-]{0,62})(?:\[([^\[\]]*)\])?\.([A-Za-z_][A-Za-z0-9_]{0,127})$`)
	refHintRE  = lazy(`^[a-z][a-z0-9_-]*\[`)
	refDataRE  = lazy(`^data\.([a-z][a-z0-9_-]{0,62})\.([A-Za-z_][A-Za-z0-9_]{0,127})$`)
	refLocalRE = lazy(`^local\.(` + varNamePattern + `)$`)
	refStackRE = lazy(`^stack\.(` + stackNamePattern + `)\.outputs\.(` + outputNamePattern + `)$`)
	refModRE   = lazy(`^module\.([a-z][a-z0-9_-]{0,62})(?:\[(?:"(` + KeyPattern + `)"|([0-9]{1,9}))\])?(?:\.([A-Za-z_][A-Za-z0-9_]{0,127}))?$`)
)

// refForms lists what a reference can be, for messages.
const refForms = "${var.NAME}, ${RESOURCE.ATTR}, ${RESOURCE[KEY].ATTR}, ${data.NAME.ATTR}, ${each.key} or ${each.value}; no functions or expressions ($${ is a literal ${)"

// splitTemplate splits s into parts, and returns every ${...} in s in
// order, well-formed or not. When one is not, parts is nil.
func splitTemplate(s string) (parts []Part, items []tmplItem) {
	var lit strings.Builder
	bad := false
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, Part{Lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := exprEnd(s, i+2)
			if end < 0 {
				items = append(items, tmplItem{off: i, end: len(s), msg: fmt.Sprintf("unterminated reference %s: a ${ needs its } (write $${ for a literal ${)", quote(s[i:]))})
				return nil, items
			}
			end -= i + 2
			body := s[i+2 : i+2+end]
			it := tmplItem{off: i, end: i + 2 + end + 1}
			it.ref, it.msg = parseRef(body)
			if it.ref == nil && isExpr(body) {
				var prob *exprProblem
				if it.expr, prob = parseExpr(body); prob != nil {
					it.msg, it.msgOff, it.inExpr = prob.msg, prob.off, true
				} else {
					it.msg = ""
				}
			}
			items = append(items, it)
			switch {
			case it.ref != nil:
				flush()
				parts = append(parts, Part{Ref: it.ref})
			case it.expr != nil:
				flush()
				parts = append(parts, Part{Expr: it.expr})
			default:
				bad = true
			}
			i += 2 + end + 1
		default:
			j := strings.IndexByte(s[i+1:], '$')
			if j < 0 {
				lit.WriteString(s[i:])
				i = len(s)
			} else {
				lit.WriteString(s[i : i+1+j])
				i += 1 + j
			}
		}
	}
	if bad {
		return nil, items
	}
	flush()
	return parts, items
}

// parseRef parses the text between ${ and }.
func parseRef(body string) (*Ref, string) {
	b := strings.TrimSpace(body)
	switch {
	case b == "":
		return nil, "empty reference ${}: want " + refForms
	case b == "each.key":
		return &Ref{Kind: RefEachKey}, ""
	case b == "each.value":
		return &Ref{Kind: RefEachValue}, ""
	case b == "count.index":
		return &Ref{Kind: RefCountIndex}, ""
	case strings.HasPrefix(b, "each."):
		return nil, fmt.Sprintf("invalid reference %s: each has only .key and .value", quote("${"+body+"}"))
	case strings.HasPrefix(b, "local."):
		m := refLocalRE.FindStringSubmatch(b)
		if m == nil {
			return nil, fmt.Sprintf("invalid reference %s: a local name must match %s", quote("${"+body+"}"), varNamePattern)
		}
		return &Ref{Kind: RefLocal, Name: m[1]}, ""
	case strings.HasPrefix(b, "module."):
		m := refModRE.FindStringSubmatch(b)
		if m == nil {
			return nil, fmt.Sprintf("invalid reference %s: want ${module.CALL.OUTPUT}, ${module.CALL[\"KEY\"].OUTPUT} or ${module.CALL[N].OUTPUT}, CALL matching %s", quote("${"+body+"}"), namePattern)
		}
		r := &Ref{Kind: RefModule, Name: m[1], Attr: m[4]}
		switch {
		case m[2] != "":
			r.Key, r.Keyed = m[2], true
		case m[3] != "":
			r.Key, r.Keyed = m[3], true
		}
		return r, ""
	case strings.HasPrefix(b, "var."):
		m := refVarRE.FindStringSubmatch(b)
		if m == nil {
			return nil, fmt.Sprintf("invalid reference %s: a variable name must match %s", quote("${"+body+"}"), varNamePattern)
		}
		return &Ref{Kind: RefVar, Name: m[1]}, ""
	case strings.HasPrefix(b, "stack.") && strings.Count(b, ".") >= 2:
		// ${stack.ATTR} is an attribute of a resource named stack; two
		// dots or more name another stack's output.
		m := refStackRE.FindStringSubmatch(b)
		if m == nil {
			return nil, fmt.Sprintf("invalid reference %s: want ${stack.NAME.outputs.X}, NAME a stack's name, X an output's (matching %s)", quote("${"+body+"}"), outputNamePattern)
		}
		return &Ref{Kind: RefStack, Name: m[1], Attr: m[2]}, ""
	case strings.HasPrefix(b, "data.") && strings.Count(b, ".") >= 2:
		// ${data.ATTR} is an attribute of a resource named data; two dots
		// or more name a data entry.
		m := refDataRE.FindStringSubmatch(b)
		if m == nil {
			if strings.Count(b, ".") > 2 {
				return nil, fmt.Sprintf("invalid reference %s: a data reference reaches one attribute deep, ${data.NAME.ATTR}, as a resource's does", quote("${"+body+"}"))
			}
			return nil, fmt.Sprintf("invalid reference %s: want ${data.NAME.ATTR}, NAME matching %s", quote("${"+body+"}"), namePattern)
		}
		return &Ref{Kind: RefData, Name: m[1], Attr: m[2]}, ""
	}
	if m := refResRE.FindStringSubmatchIndex(b); m != nil {
		r := &Ref{Kind: RefResource, Name: b[m[2]:m[3]], Attr: b[m[6]:m[7]]}
		if m[4] >= 0 {
			r.Key, r.Keyed = b[m[4]:m[5]], true
			if r.Key != EachKey && !keyRE.MatchString(r.Key) {
				return nil, fmt.Sprintf("invalid instance key %s in %s: a key must match %s (or be each.key)", quote(r.Key), quote("${"+body+"}"), KeyPattern)
			}
		}
		return r, ""
	}
	if refHintRE.MatchString(b) {
		return nil, fmt.Sprintf("invalid reference %s: want ${RESOURCE[KEY].ATTR}, with a bare key (web[a], not web[\"a\"])", quote("${"+body+"}"))
	}
	return nil, fmt.Sprintf("invalid reference %s: want %s", quote("${"+body+"}"), refForms)
}

// appendMerged appends p to parts, merging adjacent literals and dropping
// empty ones.
func appendMerged(parts []Part, p Part) []Part {
	if p.literal() {
		if p.Lit == "" {
			return parts
		}
		if n := len(parts); n > 0 && parts[n-1].literal() {
			parts[n-1].Lit += p.Lit
			return parts
		}
	}
	return append(parts, p)
}

// NewTemplate builds a template from parts (merging adjacent literals) and
// returns it, or, when no reference is left, the plain string the parts
// make. Package resolve uses it to substitute some references and keep the
// others.
func NewTemplate(file string, pos Pos, parts []Part) any {
	var out []Part
	for _, p := range parts {
		out = appendMerged(out, p)
	}
	for _, p := range out {
		if !p.literal() {
			return &Template{Parts: out, File: file, Pos: pos}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return out[0].Lit
}
