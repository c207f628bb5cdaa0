package journal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// plainRecord is Record without its methods: what json.Marshal writes for
// it by reflection, the reference AppendJSON must match byte for byte.
type plainRecord Record

// samples are values of each kind a Record's fields have, awkward ones
// included (escapes, HTML, U+2028, invalid UTF-8, a change that is not
// compact).
var samples = map[reflect.Type][]any{
	reflect.TypeFor[string](): {"op_01J", "", `a "quoted" \ line` + "\n\ttab", "<b>&amp;</b>", "line\u2028sep\u2029", "é ü 漢", "bad \xff utf-8", "\x00\x1f\x7f"},
	reflect.TypeFor[bool]():   {false, true},
	reflect.TypeFor[int]():    {0, 1, -3, 1 << 40},
	reflect.TypeFor[int64]():  {int64(0), int64(7), int64(-1), int64(1) << 62},
	reflect.TypeFor[time.Time](): {time.Time{}, time.Date(2026, 12, 1, 14, 5, 6, 123456789, time.UTC),
		time.Date(2026, 12, 1, 14, 5, 6, 0, time.FixedZone("X", 3600)), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
	reflect.TypeFor[[]string](): {[]string(nil), []string{}, []string{"a"}, []string{"a", "<b>", ""}},
	reflect.TypeFor[json.RawMessage](): {json.RawMessage(nil), json.RawMessage(`{"put":[{"name":"a"}]}`),
		json.RawMessage(" { \"a\" : [1, 2.5e3, true, null], \"h\": \"<x>&\u2028\" } "), json.RawMessage(`"s"`)},
}

func sampleOf(t *testing.T, f reflect.StructField, i int) reflect.Value {
	t.Helper()
	vs, ok := samples[f.Type]
	if !ok {
		t.Fatalf("Record.%s is a %s, which this test has no samples of: extend it, and AppendJSON", f.Name, f.Type)
	}
	return reflect.ValueOf(vs[i%len(vs)])
}

func checkSame(t *testing.T, r Record) {
	t.Helper()
	want, werr := json.Marshal(plainRecord(r))
	got, gerr := r.AppendJSON(nil)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%+v: AppendJSON error %v, json.Marshal error %v", r, gerr, werr)
	}
	if werr == nil && string(got) != string(want) {
		t.Fatalf("AppendJSON wrote\n%s\njson.Marshal writes\n%s", got, want)
	}
	if werr != nil {
		return
	}
	viaMarshal, err := json.Marshal(r) // through MarshalJSON
	if err != nil || string(viaMarshal) != string(want) {
		t.Fatalf("json.Marshal through MarshalJSON: %s %v, want %s", viaMarshal, err, want)
	}
	var back Record
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%s does not decode: %v", got, err)
	}
}

func TestAppendJSONIsJSONMarshal(t *testing.T) {
	typ := reflect.TypeFor[Record]()
	checkSame(t, Record{})
	// Each field alone, with each of its samples.
	for fi := 0; fi < typ.NumField(); fi++ {
		f := typ.Field(fi)
		for i := range len(samples[f.Type]) + 1 {
			var r Record
			reflect.ValueOf(&r).Elem().Field(fi).Set(sampleOf(t, f, i))
			checkSame(t, r)
		}
	}
	// Every field at once, in several combinations.
	for i := range 8 {
		var r Record
		for fi := 0; fi < typ.NumField(); fi++ {
			reflect.ValueOf(&r).Elem().Field(fi).Set(sampleOf(t, typ.Field(fi), i+fi))
		}
		checkSame(t, r)
	}
	// What a commit writes.
	checkSame(t, Record{ID: "01JE5", Op: "op_01JE5", Time: time.Now().UTC(), Kind: KindStep, Status: StepOK, Step: "r000001",
		Resource: "r000001", Action: "create", Phase: "execute", Lineage: "01JLINEAGE", Serial: 12,
		Change: json.RawMessage(`{"put":[{"name":"r000001","type":"generic","provider":"mock","source":"mock","id":"mock-generic-r000001-1a2b3c4d","protection":"ephemeral"}]}`)})
}

func TestAppendJSONErrors(t *testing.T) {
	for name, r := range map[string]Record{
		"change not JSON":   {Change: json.RawMessage(`{"a":`)},
		"year out of range": {Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"end out of range":  {End: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"zone out of range": {Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := r.AppendJSON(nil); err == nil {
				t.Error("AppendJSON wrote it")
			}
			if _, err := json.Marshal(plainRecord(r)); err == nil {
				t.Error("json.Marshal writes it (the test's premise is wrong)")
			}
		})
	}
}

func BenchmarkRecordEncode(b *testing.B) {
	r := Record{ID: "01JE5", Op: "op_01JE5", Time: time.Now().UTC(), Kind: KindStep, Status: StepOK, Step: "r000001",
		Resource: "r000001", Action: "create", Phase: "execute", Lineage: "01JLINEAGE", Serial: 12,
		Change: json.RawMessage(`{"put":[{"name":"r000001","type":"generic","provider":"mock","source":"mock","id":"mock-generic-r000001-1a2b3c4d","protection":"ephemeral"}]}`)}
	b.Run("AppendJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = r.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(plainRecord(r))
		}
	})
}

func BenchmarkRecordEncodeNoChange(b *testing.B) {
	r := Record{ID: "01JE5", Op: "op_01JE5", Time: time.Now().UTC(), Kind: KindStep, Status: StepStarted, Step: "r000001",
		Resource: "r000001", Action: "create", Phase: "execute", Lineage: "01JLINEAGE"}
	b.Run("AppendJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = r.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(plainRecord(r))
		}
	})
}
