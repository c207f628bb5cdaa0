package dynamic

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Decode is json.Unmarshal into map[string]any: the same value, or an
// error exactly when json.Unmarshal fails, with its text.
func checkDecode(t *testing.T, in string) {
	t.Helper()
	var want map[string]any
	werr := json.Unmarshal([]byte(in), &want)
	got, gerr := Decode([]byte(in))
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", in, gerr, werr)
	}
	if werr != nil {
		return
	}
	if !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("%q:\n got %#v\nwant %#v", in, got, want)
	}
	// -0 and 0 are DeepEqual; their bits are not.
	if !sameBits(got, want) {
		t.Fatalf("%q: numbers differ in sign or bits: %#v, want %#v", in, got, want)
	}
}

func sameBits(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case map[string]any:
		y := b.(map[string]any)
		for k, v := range x {
			if !sameBits(v, y[k]) {
				return false
			}
		}
	case []any:
		y := b.([]any)
		for i := range x {
			if !sameBits(x[i], y[i]) {
				return false
			}
		}
	}
	return true
}

func TestDecodeAttributesIsJSONUnmarshal(t *testing.T) {
	for _, in := range []string{
		// what the fast path decodes
		`{}`, ` { } `, "\t{\n}\r\n", `null`, ` null `,
		`{"arn":"mock:generic:r1:id","created_at":"2026-12-01T17:50:03.415472209Z"}`,
		`{"a":1,"b":-0,"c":0.5,"d":1e3,"e":1E-3,"f":-12.5e+2,"g":123456789012345678901234567890}`,
		`{"t":true,"f":false,"n":null,"l":[],"m":{},"x":[1,"a",[null,{"k":[]}]]}`,
		`{"dup":1,"dup":2}`, `{"del":"a` + "\x7f" + `"}`, `{"":""}`,
		`{"deep":` + strings.Repeat(`[`, 60) + strings.Repeat(`]`, 60) + `}`,
		// what it hands to json.Unmarshal
		`{"esc":"a\"b\\c\n\u00e9\ud83d\ude00"}`, `{"utf8":"é€😀"}`, "{\"bad\":\"\xff\xfe\"}",
		`{"deeper":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`,
		`{"big":1e400}`, `{"neg":-1e400}`, `{"tiny":1e-400}`,
		// invalid: json.Unmarshal's errors
		``, ` `, `nul`, `nullx`, `null null`, `{} {}`, `{}x`, `[1,2]`, `"x"`, `1`, `true`,
		`{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `{"a":[1,]}`, `{"a":[1 2]}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":1e}`, `{"a":1e+}`, `{"a":-}`, `{"a":--1}`, `{"a":0x10}`,
		`{"a":NaN}`, `{"a":Infinity}`, `{"a":tru}`, `{"a":nulll}`, `{"a":"unterminated}`, "{\"a\":\"ctl\x01\"}",
		"{\"a\":1}\x00", `{"a":{"b":}}`,
	} {
		checkDecode(t, in)
	}
}

// Random JSON-shaped values, encoded and mutated, decode as json.Unmarshal
// decodes them.
func TestDecodeAttributesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 3000; i++ {
		b, err := json.Marshal(randAttrs(rng, 3))
		if err != nil {
			t.Fatal(err)
		}
		checkDecode(t, string(b))
		if len(b) > 0 { // a byte changed, dropped or added
			m := []byte(string(b))
			j := rng.IntN(len(m))
			switch rng.IntN(3) {
			case 0:
				const bytes = "{}[]\":,0-.e tfn\\x\x00\xff"
				m[j] = bytes[rng.IntN(len(bytes))]
			case 1:
				m = append(m[:j], m[j+1:]...)
			default:
				const bytes = "{}[]\":,0-.e tfn"
				m = append(m[:j], append([]byte{bytes[rng.IntN(len(bytes))]}, m[j:]...)...)
			}
			checkDecode(t, string(m))
		}
	}
}

func randAttrs(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for n := rng.IntN(5); n > 0; n-- {
		m[randText(rng)] = randAny(rng, depth)
	}
	return m
}

func randText(rng *rand.Rand) string {
	rs := []rune("abz09 _-:./\"\\\né€<&\x7f")
	var b strings.Builder
	for n := rng.IntN(6); n > 0; n-- {
		b.WriteRune(rs[rng.IntN(len(rs))])
	}
	return b.String()
}

func randAny(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(8); {
	case k == 0:
		return nil
	case k == 1:
		return rng.IntN(2) == 0
	case k == 2:
		return math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7ff))<<52)
	case k == 3:
		return float64(rng.IntN(2000) - 1000)
	case k == 4 && depth > 0:
		return randAttrs(rng, depth-1)
	case k == 5 && depth > 0:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randAny(rng, depth-1)
		}
		return l
	default:
		return randText(rng)
	}
}

// BenchmarkDecodeAttributes is the attributes of one of the mock's
// resources, by json.Unmarshal and by Decode.
func BenchmarkDecodeAttributes(b *testing.B) {
	in := []byte(`{"arn":"mock:generic:r000001:mock-generic-r000001-1369e2e0","created_at":"2026-12-01T17:50:03.415472209Z"}`)
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a map[string]any
			if err := json.Unmarshal(in, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func FuzzDecodeAttributes(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":[1,-0.5e3,"x",{"b":null}],"c":true}`, `{"a":"\u00e9"}`, `{"a":01}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { checkDecode(t, in) })
}
