package tfplugin

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// TestEncodeMsgpackIsCtyMsgpack: on thousands of random values of random
// types (with unknowns now and then, which go to cty/msgpack), and on the
// edges of every length and integer code, EncodeMsgpack writes the bytes
// cty/msgpack writes.
func TestEncodeMsgpackIsCtyMsgpack(t *testing.T) {
	check := func(v cty.Value, ty cty.Type) {
		t.Helper()
		want, err := msgpack.Marshal(v, ty)
		if err != nil {
			t.Fatalf("cty/msgpack: %#v: %v", v, err)
		}
		got, err := EncodeMsgpack(v, ty)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%#v as %s:\n got %x\nwant %x", v, ty.GoString(), got, want)
		}
	}
	r := rand.New(rand.NewPCG(21, 9))
	quick := 0
	for i := 0; i < 5000; i++ {
		ty := genType(r, 3)
		v := genValue(r, ty)
		if r.IntN(10) == 0 {
			v = withUnknown(r, v)
		}
		if _, ok := appendMsgpack(nil, v, ty); ok {
			quick++
		}
		check(v, ty)
	}
	if quick < 4000 {
		t.Errorf("the quick way took %d of 5000 values: the test says little of it", quick)
	}
	num := func(s string) cty.Value {
		f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		return cty.NumberVal(f)
	}
	for _, s := range []string{"0", "127", "128", "255", "256", "65535", "65536", "4294967295", "4294967296",
		"9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
		"-1", "-32", "-33", "-128", "-129", "-32768", "-32769", "-2147483648", "-2147483649", "-9223372036854775808",
		"-9223372036854775809", "0.5", "-2.25", "0.1", "1e300", "1e-300", "123456789.123456789"} {
		check(num(s), cty.Number)
	}
	check(cty.PositiveInfinity, cty.Number)
	check(cty.NegativeInfinity, cty.Number)
	for _, n := range []int{0, 31, 32, 255, 256, 65535, 65536} {
		check(cty.StringVal(strings.Repeat("x", n)), cty.String)
	}
	for _, n := range []int{15, 16, 65535, 65536} {
		vals := make([]cty.Value, n)
		m := make(map[string]cty.Value, n)
		for i := range vals {
			vals[i] = cty.NumberIntVal(int64(i))
			m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+big.NewInt(int64(i)).String()] = cty.True
		}
		check(cty.ListVal(vals), cty.List(cty.Number))
		check(cty.MapVal(m), cty.Map(cty.Bool))
	}
	// Not the quick way's: a value of another type than asked (converted),
	// a dynamic type, a non-ASCII attribute name.
	check(cty.StringVal("12"), cty.Number)
	check(cty.ObjectVal(map[string]cty.Value{"d": cty.StringVal("x")}), cty.Object(map[string]cty.Type{"d": cty.DynamicPseudoType}))
	check(cty.ObjectVal(map[string]cty.Value{"é": cty.StringVal("x")}), cty.Object(map[string]cty.Type{"é": cty.String}))
}

// withUnknown is v with an unknown in place of one of its parts, or of
// itself.
func withUnknown(r *rand.Rand, v cty.Value) cty.Value {
	ty := v.Type()
	if v.IsNull() || r.IntN(3) == 0 || !(ty.IsObjectType() && len(ty.AttributeTypes()) > 0) {
		return cty.UnknownVal(ty)
	}
	vals := v.AsValueMap()
	for k := range vals {
		vals[k] = withUnknown(r, vals[k])
		break
	}
	return cty.ObjectVal(vals)
}
