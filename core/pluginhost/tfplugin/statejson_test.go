package tfplugin

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// genType is a random type without dynamic parts, depth levels deep at
// most: what a resource schema's implied type is made of.
func genType(r *rand.Rand, depth int) cty.Type {
	k := r.IntN(8)
	if depth <= 0 {
		k = r.IntN(3)
	}
	switch k {
	case 0:
		return cty.String
	case 1:
		return cty.Number
	case 2:
		return cty.Bool
	case 3:
		return cty.List(genType(r, depth-1))
	case 4:
		return cty.Set(genType(r, depth-1))
	case 5:
		return cty.Map(genType(r, depth-1))
	case 6:
		n := r.IntN(3)
		ts := make([]cty.Type, n)
		for i := range ts {
			ts[i] = genType(r, depth-1)
		}
		return cty.Tuple(ts)
	}
	atys := map[string]cty.Type{}
	for i := r.IntN(4); i > 0; i-- {
		atys[fmt.Sprintf("a%d", r.IntN(6))] = genType(r, depth-1)
	}
	return cty.Object(atys)
}

var testStrings = []string{"", "x", "héllo", "e\u0301", "\"quoted\" \\ / \n\t", "日本", "<&>", "\u2028"}
var testNumbers = []string{"0", "-1", "3", "1.5", "-0.25", "1e3", "12345678901234567890123", "0.1", "3.141592653589793238462643383279"}

// genValue is a random known value of ty, null now and then.
func genValue(r *rand.Rand, ty cty.Type) cty.Value {
	if r.IntN(8) == 0 {
		return cty.NullVal(ty)
	}
	switch {
	case ty == cty.String:
		return cty.StringVal(testStrings[r.IntN(len(testStrings))])
	case ty == cty.Number:
		f, _, err := big.ParseFloat(testNumbers[r.IntN(len(testNumbers))], 10, 512, big.ToNearestEven)
		if err != nil {
			panic(err)
		}
		return cty.NumberVal(f)
	case ty == cty.Bool:
		return cty.BoolVal(r.IntN(2) == 0)
	case ty.IsListType(), ty.IsSetType():
		n := r.IntN(3)
		if n == 0 {
			if ty.IsListType() {
				return cty.ListValEmpty(ty.ElementType())
			}
			return cty.SetValEmpty(ty.ElementType())
		}
		vals := make([]cty.Value, n)
		for i := range vals {
			vals[i] = genValue(r, ty.ElementType())
		}
		if ty.IsListType() {
			return cty.ListVal(vals)
		}
		return cty.SetVal(vals)
	case ty.IsMapType():
		n := r.IntN(3)
		if n == 0 {
			return cty.MapValEmpty(ty.ElementType())
		}
		vals := map[string]cty.Value{}
		for i := 0; i < n; i++ {
			vals[testStrings[r.IntN(len(testStrings))]] = genValue(r, ty.ElementType())
		}
		return cty.MapVal(vals)
	case ty.IsTupleType():
		etys := ty.TupleElementTypes()
		if len(etys) == 0 {
			return cty.EmptyTupleVal
		}
		vals := make([]cty.Value, len(etys))
		for i, et := range etys {
			vals[i] = genValue(r, et)
		}
		return cty.TupleVal(vals)
	}
	atys := ty.AttributeTypes()
	if len(atys) == 0 {
		return cty.EmptyObjectVal
	}
	vals := map[string]cty.Value{}
	for n, at := range atys {
		vals[n] = genValue(r, at)
	}
	return cty.ObjectVal(vals)
}

// TestParseStateJSONAgreesWithCtyJSON: on thousands of random values of
// random types, written as StateJSON writes them, the quick decoder takes
// every one and decodes the value cty/json decodes, exactly.
func TestParseStateJSONAgreesWithCtyJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 8))
	for i := 0; i < 5000; i++ {
		ty := genType(r, 3)
		v := genValue(r, ty)
		b, err := StateJSON(v, ty)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		want, err := ctyjson.Unmarshal(b, ty)
		if err != nil {
			t.Fatalf("cty/json cannot decode %s as %s: %v", b, ty.GoString(), err)
		}
		got, ok := decodeStateJSON(b, ty)
		if !ok {
			t.Fatalf("the quick decoder did not take %s as %s", b, ty.GoString())
		}
		if !got.RawEquals(want) {
			t.Fatalf("%s as %s: decoded %#v, cty/json %#v", b, ty.GoString(), got, want)
		}
		if !got.Type().Equals(want.Type()) {
			t.Fatalf("%s: type %s, cty/json %s", b, got.Type().GoString(), want.Type().GoString())
		}
	}
}

// TestParseStateJSONLeavesTheRestToCtyJSON: what is not the plain encoding
// of a value of the type (a coercion cty/json makes, an unknown attribute,
// malformed or trailing input, a dynamic type) is not taken by the quick
// decoder, and ParseStateJSON answers what cty/json answers.
func TestParseStateJSONLeavesTheRestToCtyJSON(t *testing.T) {
	obj := cty.Object(map[string]cty.Type{"n": cty.Number, "s": cty.String, "b": cty.Bool, "l": cty.List(cty.String)})
	tup := cty.Tuple([]cty.Type{cty.String, cty.Number})
	for _, tc := range []struct {
		in string
		ty cty.Type
	}{
		{`{"n": "12"}`, obj},       // a number as a string: cty/json converts
		{`{"s": 12}`, obj},         // a string as a number
		{`{"s": true}`, obj},       // a string as a bool
		{`{"b": "true"}`, obj},     // a bool as a string
		{`{"nope": 1}`, obj},       // an attribute the type lacks
		{`{"l": "x"}`, obj},        // a list as a string
		{`{"n": 1} {"n": 2}`, obj}, // trailing data
		{`{"n": 1`, obj},           // cut short
		{`["a"]`, tup},             // too few tuple elements
		{`["a", 1, 2]`, tup},       // too many
		{`{"value": 1, "type": "number"}`, cty.DynamicPseudoType},
		{`{"d": {"value": "x", "type": "string"}}`, cty.Object(map[string]cty.Type{"d": cty.DynamicPseudoType})},
	} {
		if _, ok := decodeStateJSON([]byte(tc.in), tc.ty); ok && tc.ty.HasDynamicTypes() {
			t.Errorf("%s: the quick decoder took a dynamic type", tc.in)
		}
		want, werr := ctyjson.Unmarshal([]byte(tc.in), tc.ty)
		got, gerr := ParseStateJSON([]byte(tc.in), tc.ty)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: error %v, cty/json's %v", tc.in, gerr, werr)
			continue
		}
		if werr == nil && !got.RawEquals(want) {
			t.Errorf("%s: %#v, cty/json %#v", tc.in, got, want)
		}
	}
}

func BenchmarkParseStateJSON(b *testing.B) {
	ty := cty.Object(map[string]cty.Type{"id": cty.String, "name": cty.String, "value": cty.String,
		"tags": cty.Map(cty.String), "size": cty.Number, "rules": cty.List(cty.Object(map[string]cty.Type{"name": cty.String, "priority": cty.Number}))})
	v := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("a01df75aab8a401b"), "name": cty.StringVal("r0"), "value": cty.StringVal("v"),
		"tags": cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}), "size": cty.NumberIntVal(3),
		"rules": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("a"), "priority": cty.NumberIntVal(1)})})})
	js, err := StateJSON(v, ty)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("quick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseStateJSON(js, ty); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cty-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ctyjson.Unmarshal(js, ty); err != nil {
				b.Fatal(err)
			}
		}
	})
}
