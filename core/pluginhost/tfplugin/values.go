package tfplugin

// Conversions between go-cty values, which the protocol carries, and the
// host's plain values (providers.Attributes: string, float64, bool, []any,
// map[string]any, nil), plus the wire encodings (msgpack, JSON) through
// go-cty's own codecs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"

	"github.com/bulwark-iac/bulwark/core/providers"
)

// UnknownText is how an Unknown is written in JSON and shown, as Terraform
// shows a value known only after apply.
const UnknownText = "(known after apply)"

// Unknown stands, among plain values, for a value the provider will know
// only once applied: a computed attribute of a planned create, an
// attribute the plan of an update changes to a value it cannot predict.
// FromCty gives it for every unknown cty value (of any type, at any depth);
// ToCty reads it (or a *Unknown) as cty.UnknownVal of the type asked for.
// It never equals a known value, and it is never stored: a state holds
// what ApplyResourceChange answered, which is wholly known. Its JSON is
// the string UnknownText, for a plan's --json; decoding that JSON gives the
// string, not an Unknown (a plan file keeps its unknowns another way).
type Unknown struct{}

// MarshalJSON writes UnknownText.
func (Unknown) MarshalJSON() ([]byte, error) { return json.Marshal(UnknownText) }

func (Unknown) String() string { return UnknownText }

// Values converts between cty values and plain values. Its zero value uses
// Unknown for unknown values; a caller with a marker of its own (the
// planner's) sets both fields.
type Values struct {
	// Unknown is what FromCty gives for an unknown value (nil: Unknown{}).
	Unknown any
	// IsUnknown says whether a plain value stands for an unknown one, for
	// ToCty (nil: it is an Unknown or a *Unknown).
	IsUnknown func(any) bool
}

// ToCty converts a plain value to a value of type ty with a zero Values.
func ToCty(v any, ty cty.Type) (cty.Value, error) { return Values{}.ToCty(v, ty) }

// FromCty converts a cty value to a plain value with a zero Values.
func FromCty(v cty.Value) (any, error) { return Values{}.FromCty(v) }

// ObjectFromAttributes converts attributes to an object of type ty with a
// zero Values.
func ObjectFromAttributes(a providers.Attributes, ty cty.Type) (cty.Value, error) {
	return Values{}.ObjectFromAttributes(a, ty)
}

// AttributesFromObject converts an object to attributes with a zero
// Values.
func AttributesFromObject(v cty.Value) (providers.Attributes, error) {
	return Values{}.AttributesFromObject(v)
}

// ObjectFromAttributes converts attributes to an object of type ty (a
// block's ImpliedType): nil attributes are the null object, an attribute
// the map leaves out is null, and a key the type does not have is an
// error. The error is a cty.PathError naming the attribute.
func (c Values) ObjectFromAttributes(a providers.Attributes, ty cty.Type) (cty.Value, error) {
	if a == nil {
		return cty.NullVal(ty), nil
	}
	return c.ToCty(map[string]any(a), ty)
}

// AttributesFromObject converts an object to attributes: every attribute of
// its type is a key (a null one holds nil); the null object is nil
// attributes. An unknown object is an error (only its attributes may be).
func (c Values) AttributesFromObject(v cty.Value) (providers.Attributes, error) {
	v = unmarked(v)
	if !v.Type().IsObjectType() && v.Type() != cty.DynamicPseudoType {
		return nil, fmt.Errorf("not an object: %s", v.Type().FriendlyName())
	}
	if !v.IsKnown() {
		return nil, fmt.Errorf("the whole object is unknown")
	}
	if v.IsNull() {
		return nil, nil
	}
	out, err := c.FromCty(v)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object: %s", v.Type().FriendlyName())
	}
	return m, nil
}

// FromCty converts a cty value to a plain value: null is nil, unknown is
// c.Unknown, a string is a string, a number a float64 (a number float64
// cannot hold is rounded to the nearest: a 64-bit id above 2^53 loses its
// low bits), a bool a bool, a list, set or tuple a []any (a set in cty's
// order of its elements), a map or object a map[string]any. Marks are
// dropped.
func (c Values) FromCty(v cty.Value) (any, error) {
	v = unmarked(v)
	return c.fromCty(v, nil)
}

func (c Values) fromCty(v cty.Value, path cty.Path) (any, error) {
	if !v.IsKnown() {
		if c.Unknown != nil {
			return c.Unknown, nil
		}
		return Unknown{}, nil
	}
	if v.IsNull() {
		return nil, nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString(), nil
	case ty == cty.Number:
		f, _ := v.AsBigFloat().Float64()
		return f, nil
	case ty == cty.Bool:
		return v.True(), nil
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			pv, err := c.fromCty(e, nil)
			if err != nil {
				return nil, under(err, cty.IndexStep{Key: k})
			}
			out = append(out, pv)
		}
		return out, nil
	case ty.IsObjectType():
		// By name: an object's element iterator makes a cty string of
		// every attribute's name.
		atys := ty.AttributeTypes()
		out := make(map[string]any, len(atys))
		for name := range atys {
			pv, err := c.fromCty(v.GetAttr(name), nil)
			if err != nil {
				return nil, under(err, cty.GetAttrStep{Name: name})
			}
			out[name] = pv
		}
		return out, nil
	case ty.IsMapType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			pv, err := c.fromCty(e, nil)
			if err != nil {
				return nil, under(err, cty.IndexStep{Key: k})
			}
			out[k.AsString()] = pv
		}
		return out, nil
	}
	return nil, path.NewErrorf("a value of type %s has no plain form", ty.FriendlyName())
}

// ToCty converts a plain value to a value of type ty: nil is null, a value
// c.IsUnknown recognises is unknown, a string, number (any Go number, a
// json.Number) or bool is converted to a primitive type as Terraform
// converts a configuration's ("5" to 5, true to "true"), a slice to a
// list, set or tuple, a map with string keys to a map or object (an
// attribute it leaves out is null; a key the object type lacks is an
// error). For cty.DynamicPseudoType the value's own type is taken: string,
// number, bool, a tuple or an object of its elements' types. Errors are
// cty.PathErrors naming where in the value they are.
func (c Values) ToCty(v any, ty cty.Type) (cty.Value, error) {
	return c.toCty(v, ty, nil)
}

func (c Values) unknown(v any) bool {
	if c.IsUnknown != nil {
		return c.IsUnknown(v)
	}
	switch v.(type) {
	case Unknown, *Unknown:
		return true
	}
	return false
}

func (c Values) toCty(v any, ty cty.Type, path cty.Path) (cty.Value, error) {
	if c.unknown(v) {
		return cty.UnknownVal(ty), nil
	}
	if isNil(v) {
		return cty.NullVal(ty), nil
	}
	if cv, ok := v.(cty.Value); ok { // already a cty value: checked against ty
		out, err := convert.Convert(cv, ty)
		if err != nil {
			return cty.NilVal, path.NewError(err)
		}
		return out, nil
	}
	if ty == cty.DynamicPseudoType {
		ity, err := c.impliedType(v, path)
		if err != nil {
			return cty.NilVal, err
		}
		return c.toCty(v, ity, path)
	}
	switch {
	case ty.IsPrimitiveType():
		pv, err := primitive(v, path)
		if err != nil {
			return cty.NilVal, err
		}
		out, err := convert.Convert(pv, ty)
		if err != nil {
			return cty.NilVal, path.NewErrorf("%s", convertMessage(err, pv.Type(), ty))
		}
		return out, nil
	case ty.IsListType() || ty.IsSetType():
		elems, ok := asSlice(v)
		if !ok {
			return cty.NilVal, path.NewErrorf("a %s is needed, not %s", ty.FriendlyName(), plainKind(v))
		}
		ety := ty.ElementType()
		vals := make([]cty.Value, len(elems))
		for i, e := range elems {
			ev, err := c.toCty(e, ety, nil)
			if err != nil {
				return cty.NilVal, under(err, cty.IndexStep{Key: cty.NumberIntVal(int64(i))})
			}
			vals[i] = ev
		}
		vals, err := unify(vals, ety, path)
		if err != nil {
			return cty.NilVal, err
		}
		if ty.IsListType() {
			if len(vals) == 0 {
				return cty.ListValEmpty(ety), nil
			}
			return cty.ListVal(vals), nil
		}
		if len(vals) == 0 {
			return cty.SetValEmpty(ety), nil
		}
		return cty.SetVal(vals), nil
	case ty.IsTupleType():
		elems, ok := asSlice(v)
		if !ok {
			return cty.NilVal, path.NewErrorf("a %s is needed, not %s", ty.FriendlyName(), plainKind(v))
		}
		etys := ty.TupleElementTypes()
		if len(elems) != len(etys) {
			return cty.NilVal, path.NewErrorf("%d elements are needed, not %d", len(etys), len(elems))
		}
		vals := make([]cty.Value, len(elems))
		for i, e := range elems {
			ev, err := c.toCty(e, etys[i], nil)
			if err != nil {
				return cty.NilVal, under(err, cty.IndexStep{Key: cty.NumberIntVal(int64(i))})
			}
			vals[i] = ev
		}
		if len(vals) == 0 {
			return cty.EmptyTupleVal, nil
		}
		return cty.TupleVal(vals), nil
	case ty.IsMapType():
		m, ok := asMap(v)
		if !ok {
			return cty.NilVal, path.NewErrorf("a %s is needed, not %s", ty.FriendlyName(), plainKind(v))
		}
		ety := ty.ElementType()
		keys := sortedKeys(m)
		vals := make([]cty.Value, len(keys))
		for i, k := range keys {
			ev, err := c.toCty(m[k], ety, nil)
			if err != nil {
				return cty.NilVal, under(err, cty.IndexStep{Key: cty.StringVal(k)})
			}
			vals[i] = ev
		}
		vals, err := unify(vals, ety, path)
		if err != nil {
			return cty.NilVal, err
		}
		if len(vals) == 0 {
			return cty.MapValEmpty(ety), nil
		}
		out := make(map[string]cty.Value, len(keys))
		for i, k := range keys {
			out[k] = vals[i]
		}
		return cty.MapVal(out), nil
	case ty.IsObjectType():
		m, ok := asMap(v)
		if !ok {
			return cty.NilVal, path.NewErrorf("an object is needed, not %s", plainKind(v))
		}
		atys := ty.AttributeTypes()
		for _, k := range sortedKeys(m) {
			if _, ok := atys[k]; !ok {
				return cty.NilVal, path.GetAttr(k).NewErrorf("unsupported attribute %q", k)
			}
		}
		if len(atys) == 0 {
			return cty.EmptyObjectVal, nil
		}
		out := make(map[string]cty.Value, len(atys))
		for name, aty := range atys {
			av, err := c.toCty(m[name], aty, nil)
			if err != nil {
				return cty.NilVal, under(err, cty.GetAttrStep{Name: name})
			}
			out[name] = av
		}
		return cty.ObjectVal(out), nil
	}
	return cty.NilVal, path.NewErrorf("values of type %s cannot be given", ty.FriendlyName())
}

// impliedType is the type of a plain value given where any type goes.
func (c Values) impliedType(v any, path cty.Path) (cty.Type, error) {
	if c.unknown(v) || isNil(v) {
		return cty.DynamicPseudoType, nil
	}
	if cv, ok := v.(cty.Value); ok {
		return cv.Type(), nil
	}
	if elems, ok := asSlice(v); ok {
		etys := make([]cty.Type, len(elems))
		for i, e := range elems {
			ety, err := c.impliedType(e, nil)
			if err != nil {
				return cty.NilType, under(err, cty.IndexStep{Key: cty.NumberIntVal(int64(i))})
			}
			etys[i] = ety
		}
		return cty.Tuple(etys), nil
	}
	if m, ok := asMap(v); ok {
		atys := make(map[string]cty.Type, len(m))
		for k, e := range m {
			aty, err := c.impliedType(e, nil)
			if err != nil {
				return cty.NilType, under(err, cty.GetAttrStep{Name: k})
			}
			atys[k] = aty
		}
		return cty.Object(atys), nil
	}
	pv, err := primitive(v, path)
	if err != nil {
		return cty.NilType, err
	}
	return pv.Type(), nil
}

// under is err, a cty.PathError, with step put before its path. The
// conversions give an element no path of its own on the way in (which
// allocated two values per attribute of every value converted, error or
// not) and build an error's on the way out, step by step.
func under(err error, step cty.PathStep) error {
	var pe cty.PathError
	if errors.As(err, &pe) {
		pe.Path = append(cty.Path{step}, pe.Path...)
		return pe
	}
	return err
}

// unify makes the elements of a collection one type when its element type
// has a dynamic part (list(any) given an object and a string, say).
func unify(vals []cty.Value, ety cty.Type, path cty.Path) ([]cty.Value, error) {
	if !ety.HasDynamicTypes() || len(vals) < 2 {
		return vals, nil
	}
	tys := make([]cty.Type, len(vals))
	for i, v := range vals {
		tys[i] = v.Type()
	}
	uty, convs := convert.Unify(tys)
	if uty == cty.NilType {
		return nil, path.NewErrorf("the elements have no type in common")
	}
	out := make([]cty.Value, len(vals))
	for i, v := range vals {
		out[i] = v
		if convs[i] != nil {
			cv, err := convs[i](v)
			if err != nil {
				return nil, path.NewError(err)
			}
			out[i] = cv
		}
	}
	return out, nil
}

// primitive converts a Go string, bool or number to its cty value.
func primitive(v any, path cty.Path) (cty.Value, error) {
	switch t := v.(type) {
	case string:
		return cty.StringVal(t), nil
	case bool:
		return cty.BoolVal(t), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return cty.NilVal, path.NewErrorf("%v is not a number a provider takes", t)
		}
		return cty.NumberFloatVal(t), nil
	case float32:
		return primitive(float64(t), path)
	case int:
		return cty.NumberIntVal(int64(t)), nil
	case int64:
		return cty.NumberIntVal(t), nil
	case int32:
		return cty.NumberIntVal(int64(t)), nil
	case uint64:
		return cty.NumberUIntVal(t), nil
	case json.Number:
		f, _, err := big.ParseFloat(string(t), 10, 512, big.ToNearestEven)
		if err != nil {
			return cty.NilVal, path.NewErrorf("%q is not a number", string(t))
		}
		return cty.NumberVal(f), nil
	case *big.Float:
		return cty.NumberVal(t), nil
	}
	return cty.NilVal, path.NewErrorf("a value of Go type %T cannot be given", v)
}

func convertMessage(err error, from, to cty.Type) string {
	return fmt.Sprintf("a %s is needed, not a %s (%v)", to.FriendlyName(), from.FriendlyName(), err)
}

// plainKind names a plain value's kind for an error.
func plainKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a bool"
	case float64, float32, int, int32, int64, uint64, json.Number:
		return "a number"
	}
	if _, ok := asSlice(v); ok {
		return "a list"
	}
	if _, ok := asMap(v); ok {
		return "a map"
	}
	return fmt.Sprintf("a %T", v)
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// asSlice gives the elements of any Go slice ([]any, []string, …).
func asSlice(v any) ([]any, bool) {
	if s, ok := v.([]any); ok {
		return s, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// asMap gives the entries of any Go map with string keys.
func asMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[it.Key().String()] = it.Value().Interface()
	}
	return out, true
}

// unmarked is v without its marks (the wire carries none). Checking first
// spares the copy UnmarkDeep makes of every value, marked or not.
func unmarked(v cty.Value) cty.Value {
	if containsMarked(v) {
		v, _ = v.UnmarkDeep()
	}
	return v
}

// containsMarked is v.ContainsMarked() without its cost: cty's walks the
// value building a path (and a key value) for every element, which was a
// quarter of the allocations of an adapter's create (every value sent or
// answered is checked, and none is marked on this package's own paths).
// Objects and tuples are looked into by name and index, which allocates
// nothing; collections through their element iterator.
func containsMarked(v cty.Value) bool {
	if v.IsMarked() {
		return true
	}
	if v.IsNull() || !v.IsKnown() {
		return false
	}
	ty := v.Type()
	switch {
	case ty.IsObjectType():
		for name := range ty.AttributeTypes() {
			if containsMarked(v.GetAttr(name)) {
				return true
			}
		}
	case ty.IsTupleType():
		for i := range ty.TupleElementTypes() {
			if containsMarked(v.Index(cty.NumberIntVal(int64(i)))) {
				return true
			}
		}
	case ty.IsListType(), ty.IsMapType(), ty.IsSetType():
		if v.LengthInt() == 0 {
			return false
		}
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); containsMarked(e) {
				return true
			}
		}
	}
	return false
}

// EncodeMsgpack is a value's msgpack encoding for the type ty, as a
// DynamicValue carries it (the value is converted to ty first when it is
// not of it). The zero cty.Value (a request field left unset) is encoded
// as null.
func EncodeMsgpack(v cty.Value, ty cty.Type) ([]byte, error) {
	// Comparing with NilType never compares two type implementations
	// (some are not comparable): only a nil one equals it.
	if v.Type() == cty.NilType {
		v = cty.NullVal(ty)
	}
	v = unmarked(v)
	b, err := msgpack.Marshal(v, ty)
	if err != nil {
		return nil, fmt.Errorf("encode a %s: %w", ty.FriendlyName(), err)
	}
	return b, nil
}

// DecodeDynamic decodes a DynamicValue's content of type ty: msgpack when
// it has some, else JSON (older providers answer some calls in JSON); both
// empty is null.
func DecodeDynamic(mp, js []byte, ty cty.Type) (cty.Value, error) {
	switch {
	case len(mp) > 0:
		v, err := msgpack.Unmarshal(mp, ty)
		if err != nil {
			return cty.NilVal, fmt.Errorf("decode a %s (msgpack): %w", ty.FriendlyName(), err)
		}
		return v, nil
	case len(js) > 0:
		v, err := ctyjson.Unmarshal(js, ty)
		if err != nil {
			return cty.NilVal, fmt.Errorf("decode a %s (JSON): %w", ty.FriendlyName(), err)
		}
		return v, nil
	}
	return cty.NullVal(ty), nil
}

// StateJSON is a wholly known value in Terraform's JSON state encoding for
// ty (what UpgradeResourceState reads as raw_state). It is the plain JSON
// of the value, except that a value of a dynamically typed attribute is
// written {"value": …, "type": …}.
func StateJSON(v cty.Value, ty cty.Type) ([]byte, error) {
	v = unmarked(v)
	b, err := ctyjson.Marshal(v, ty)
	if err != nil {
		return nil, fmt.Errorf("encode a %s as JSON: %w", ty.FriendlyName(), err)
	}
	return b, nil
}

// ParseStateJSON decodes Terraform's JSON state encoding of a value of ty.
func ParseStateJSON(b []byte, ty cty.Type) (cty.Value, error) {
	v, err := ctyjson.Unmarshal(b, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("decode a %s from JSON: %w", ty.FriendlyName(), err)
	}
	return v, nil
}

// PathStrings writes a cty path as the host's attribute path: an attribute
// is its name, a list, set or tuple index its decimal number, a map key
// the key itself. A set element (indexed by its value) is written "*".
func PathStrings(p cty.Path) []string {
	if len(p) == 0 {
		return nil
	}
	out := make([]string, 0, len(p))
	for _, s := range p {
		switch s := s.(type) {
		case cty.GetAttrStep:
			out = append(out, s.Name)
		case cty.IndexStep:
			k := s.Key
			switch {
			case !k.IsKnown() || k.IsNull():
				out = append(out, "*")
			case k.Type() == cty.String:
				out = append(out, k.AsString())
			case k.Type() == cty.Number:
				out = append(out, k.AsBigFloat().Text('f', -1))
			default:
				out = append(out, "*")
			}
		}
	}
	return out
}
