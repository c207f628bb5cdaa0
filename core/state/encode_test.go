package state

import (
	"bytes"
	"encoding/json"
	"github.com/bulwark-iac/bulwark/core/protection"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestResourceAppendJSONIsJSONMarshal holds the hand encoder to the bytes
// json.Marshal writes, field by field and for every kind of value.
func TestResourceAppendJSONIsJSONMarshal(t *testing.T) {
	full := &Resource{
		Name: "web", Type: "compute", Provider: "aws", Source: "aws", ID: "i-1", Protection: protection.Durable,
		DependsOn:      []string{"net", "a<b"},
		Config:         map[string]any{"size": 2.0, "tags": map[string]any{"b": "2", "a": "1"}, "list": []any{1.0, "x", nil, true}},
		Attributes:     map[string]any{"arn": "arn:aws:x", "n": 1e21, "small": 1e-7, "neg": -0.0},
		CreatedBy:      "op_1",
		UpdatedBy:      "op_2",
		IdempotencyKey: "bulwark:s:l:k",
		Imported:       true,
		RetainedBy:     "op_3",
		Prior:          &Prior{Op: "op_0", Config: map[string]any{"size": 1.0}, Protection: protection.Ephemeral, RetainedBy: "op_3"},
		Sensitive:      []string{"password"},
		Private:        parsePrivate("c2VjcmV0"),
	}
	tests := []struct {
		name string
		r    *Resource
	}{
		{"nil", nil},
		{"empty", &Resource{}},
		{"every field", full},
		{"empty collections are omitted", &Resource{Name: "x", DependsOn: []string{}, Config: map[string]any{}, Attributes: map[string]any{}, Sensitive: []string{}}},
		{"escaping", &Resource{Name: "a&b<c>\"d\\e\u2028\u2029\x01é", Attributes: map[string]any{"k<": "v>\n\t", "é": "\u00e9\u2028"}}},
		{"numbers", &Resource{Attributes: map[string]any{
			"zero": 0.0, "one": 1.0, "half": 0.5, "big": 123456789012345678.0, "e20": 1e20, "e21": 1e21, "e-6": 1e-6, "e-7": 1e-7,
			"e-10": 1.5e-10, "e100": 1e100, "neg": -3.25, "min": math.SmallestNonzeroFloat64, "max": math.MaxFloat64,
			"int": 42, "int64": int64(-7), "float32": float32(0.1), "uint": uint(3),
		}}},
		{"nested nil and typed values", &Resource{Attributes: map[string]any{
			"nilmap": map[string]any(nil), "nillist": []any(nil), "nil": nil, "strs": []string{"a", "b"}, "nilstrs": []string(nil),
			"mapstr": map[string]string{"z": "1", "a": "2"}, "num": json.Number("12.50"), "raw": json.RawMessage(`{ "a" : 1 }`),
			"deep": []any{map[string]any{"b": []any{}, "a": map[string]any{}}},
		}}},
		{"many keys (more than the sort's small buffer)", &Resource{Attributes: manyKeys(40)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, tt.r)
		})
	}
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 500; i++ {
			check(t, &Resource{Name: randString(rng), Attributes: randMap(rng, 3), Config: randMap(rng, 2)})
		}
	})
}

func check(t *testing.T, r *Resource) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, gerr := r.AppendJSON([]byte("prefix"))
	if werr != nil || gerr != nil {
		t.Fatalf("errors: json.Marshal %v, AppendJSON %v", werr, gerr)
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("AppendJSON:\n got %s\nwant prefix%s", got, want)
	}
}

func TestResourceAppendJSONErrors(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"c": make(chan int)}} {
		r := &Resource{Attributes: map[string]any{"v": v}}
		_, werr := json.Marshal(r)
		_, gerr := r.AppendJSON(nil)
		if werr == nil || gerr == nil {
			t.Fatalf("%v: json.Marshal %v, AppendJSON %v: want both to fail", v, werr, gerr)
		}
		if !strings.Contains(werr.Error(), gerr.Error()) {
			t.Errorf("%v: AppendJSON's error %q is not json.Marshal's %q", v, gerr, werr)
		}
	}
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := 0; i < n; i++ {
		m[string(rune('a'+i%26))+strings.Repeat("x", i/26)] = float64(i)
	}
	return m
}

func randString(rng *rand.Rand) string {
	const alphabet = "ab<>&\"\\ \n\x00é\u2028z09_-"
	rs := []rune(alphabet)
	var b strings.Builder
	for n := rng.IntN(6); n > 0; n-- {
		b.WriteRune(rs[rng.IntN(len(rs))])
	}
	return b.String()
}

func randValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(8); {
	case k == 0:
		return nil
	case k == 1:
		return rng.IntN(2) == 0
	case k == 2:
		return math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7ff))<<52) // never Inf or NaN
	case k == 3:
		return float64(rng.IntN(2000) - 1000)
	case k == 4 && depth > 0:
		return randMap(rng, depth-1)
	case k == 5 && depth > 0:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randValue(rng, depth-1)
		}
		return l
	default:
		return randString(rng)
	}
}

func randMap(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for n := rng.IntN(5); n > 0; n-- {
		m[randString(rng)] = randValue(rng, depth)
	}
	return m
}

// BenchmarkResourceEncode is the encoding of one resource as an apply's
// commit carries it (the mock provider's shape), by json.Marshal and by
// AppendJSON.
func BenchmarkResourceEncode(b *testing.B) {
	r := &Resource{
		Name: "r000001", Type: "generic", Provider: "mock", Source: "mock", ID: "mock-generic-r000001-1369e2e0", Protection: protection.Ephemeral,
		Attributes:     map[string]any{"arn": "mock:generic:r000001:mock-generic-r000001-1369e2e0", "created_at": "2026-12-01T17:50:03.415472209Z"},
		CreatedBy:      "op_01M8SBMP9NQ72QP48A9TZ1VEYP",
		UpdatedBy:      "op_01M8SBMP9NQ72QP48A9TZ1VEYP",
		IdempotencyKey: "bulwark:bench-flat-1000:01M8SBMP9QK6J92W4VKQK98P6Z:01M8SBMPM5V61AWQ6N4Y32CH12",
		Sensitive:      []string{"secret"},
	}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			if _, err := r.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A level is stored as the word it always was, and a prior with none as
// "": the stored form is the one a string field wrote, and reads back.
func TestLevelStoredForm(t *testing.T) {
	tests := []struct {
		r    *Resource
		want string
	}{
		{&Resource{Name: "a", Protection: protection.Ephemeral}, `{"name":"a","type":"","provider":"","source":"","id":"","protection":"ephemeral"}`},
		{&Resource{Name: "a", Protection: protection.Durable}, `{"name":"a","type":"","provider":"","source":"","id":"","protection":"durable"}`},
		{&Resource{Name: "a", Protection: protection.Protected, Prior: &Prior{Op: "op_1"}},
			`{"name":"a","type":"","provider":"","source":"","id":"","protection":"protected","prior":{"op":"op_1","protection":""}}`},
		{&Resource{Name: "a", Protection: protection.Protected, Prior: &Prior{Op: "op_1", Protection: protection.Durable}},
			`{"name":"a","type":"","provider":"","source":"","id":"","protection":"protected","prior":{"op":"op_1","protection":"durable"}}`},
	}
	for _, tt := range tests {
		check(t, tt.r)
		got, err := tt.r.AppendJSON(nil)
		if err != nil || string(got) != tt.want {
			t.Fatalf("AppendJSON: %s %v, want %s", got, err, tt.want)
		}
		var back Resource
		if err := json.Unmarshal(got, &back); err != nil || back.Protection != tt.r.Protection || (tt.r.Prior != nil && back.Prior.Protection != tt.r.Prior.Protection) {
			t.Fatalf("read back %s: %+v %v", got, back, err)
		}
		if err := checkLevels("p", &State{Resources: map[string]*Resource{"a": &back}}); err != nil {
			t.Fatalf("read back %s: %v", got, err)
		}
	}
	if _, err := (&Resource{Protection: protection.Level(99)}).AppendJSON(nil); err == nil {
		t.Fatal("a level off the ladder was encoded")
	}
	if _, err := json.Marshal(&Resource{Protection: protection.Level(99)}); err == nil {
		t.Fatal("a level off the ladder was marshalled")
	}
}
