package tfplugin

import (
	"bytes"
	"encoding/json"

	"github.com/zclconf/go-cty/cty"
)

// decodeStateJSON is ParseStateJSON's quick way, for the JSON StateJSON
// writes: the document decoded once by encoding/json (numbers kept as
// written), then turned into a value of ty by walking ty. go-cty's own
// decoder (cty/json) makes a json.Decoder and a token stream per nested
// value, which made it the host's largest cost of a no-op read. ok is false
// for anything but the plain encoding of a value of ty (a type with a
// dynamic or capsule part; a string where a number or bool goes, or
// another coercion cty/json makes; malformed input): ParseStateJSON then
// gives it to cty/json, so that what is decoded and every error are cty/json's.
// Where ok is true the value is the one cty/json decodes (tested against it).
func decodeStateJSON(b []byte, ty cty.Type) (v cty.Value, ok bool) {
	if ty.HasDynamicTypes() {
		return cty.NilVal, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return cty.NilVal, false
	}
	if _, err := dec.Token(); err == nil {
		return cty.NilVal, false // more after the value
	}
	return fromJSON(raw, ty)
}

func fromJSON(raw any, ty cty.Type) (cty.Value, bool) {
	if raw == nil {
		return cty.NullVal(ty), true
	}
	switch {
	case ty == cty.String:
		s, ok := raw.(string)
		if !ok {
			return cty.NilVal, false
		}
		return cty.StringVal(s), true
	case ty == cty.Number:
		n, ok := raw.(json.Number)
		if !ok {
			return cty.NilVal, false
		}
		v, err := cty.ParseNumberVal(string(n))
		if err != nil {
			return cty.NilVal, false
		}
		return v, true
	case ty == cty.Bool:
		b, ok := raw.(bool)
		if !ok {
			return cty.NilVal, false
		}
		return cty.BoolVal(b), true
	case ty.IsListType(), ty.IsSetType():
		elems, ok := raw.([]any)
		if !ok {
			return cty.NilVal, false
		}
		ety := ty.ElementType()
		if len(elems) == 0 {
			if ty.IsListType() {
				return cty.ListValEmpty(ety), true
			}
			return cty.SetValEmpty(ety), true
		}
		vals := make([]cty.Value, len(elems))
		for i, e := range elems {
			if vals[i], ok = fromJSON(e, ety); !ok {
				return cty.NilVal, false
			}
		}
		if ty.IsListType() {
			return cty.ListVal(vals), true
		}
		return cty.SetVal(vals), true
	case ty.IsTupleType():
		elems, ok := raw.([]any)
		etys := ty.TupleElementTypes()
		if !ok || len(elems) != len(etys) {
			return cty.NilVal, false
		}
		if len(elems) == 0 {
			return cty.EmptyTupleVal, true
		}
		vals := make([]cty.Value, len(elems))
		for i, e := range elems {
			if vals[i], ok = fromJSON(e, etys[i]); !ok {
				return cty.NilVal, false
			}
		}
		return cty.TupleVal(vals), true
	case ty.IsMapType():
		m, ok := raw.(map[string]any)
		if !ok {
			return cty.NilVal, false
		}
		ety := ty.ElementType()
		if len(m) == 0 {
			return cty.MapValEmpty(ety), true
		}
		vals := make(map[string]cty.Value, len(m))
		for k, e := range m {
			if vals[k], ok = fromJSON(e, ety); !ok {
				return cty.NilVal, false
			}
		}
		return cty.MapVal(vals), true
	case ty.IsObjectType():
		m, ok := raw.(map[string]any)
		if !ok {
			return cty.NilVal, false
		}
		atys := ty.AttributeTypes()
		for k := range m {
			if _, ok := atys[k]; !ok {
				return cty.NilVal, false
			}
		}
		if len(atys) == 0 {
			return cty.EmptyObjectVal, true
		}
		vals := make(map[string]cty.Value, len(atys))
		for k, aty := range atys {
			if vals[k], ok = fromJSON(m[k], aty); !ok {
				return cty.NilVal, false
			}
		}
		return cty.ObjectVal(vals), true
	}
	return cty.NilVal, false
}
