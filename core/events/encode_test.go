package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// plainEvent is Event as json.Encoder writes it by reflection: the
// reference appendJSON must match byte for byte.
type plainEvent Event

func encoded(t *testing.T, v any) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

var samples = map[reflect.Type][]any{
	reflect.TypeFor[string](): {"r000001", "", `a "quoted" \ line` + "\n\ttab", "<b>&amp;</b>", "line\u2028sep\u2029", "é ü 漢", "bad \xff utf-8", "\x00\x1f\x7f"},
	reflect.TypeFor[int64]():  {int64(0), int64(3), int64(-1), int64(1) << 50},
	reflect.TypeFor[bool]():   {false, true},
	reflect.TypeFor[time.Time](): {time.Time{}, time.Date(2026, 12, 1, 14, 5, 6, 123456789, time.UTC),
		time.Date(2026, 12, 1, 14, 5, 6, 0, time.FixedZone("X", -5400))},
}

func TestEventAppendJSONIsTheEncoder(t *testing.T) {
	typ := reflect.TypeFor[Event]()
	check := func(e Event) {
		t.Helper()
		want, werr := encoded(t, plainEvent(e))
		got, gerr := e.appendJSON(nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%+v: appendJSON error %v, the encoder's %v", e, gerr, werr)
		}
		if werr == nil && string(got) != string(want) {
			t.Fatalf("appendJSON wrote\n%s\nthe encoder writes\n%s", got, want)
		}
	}
	sample := func(f reflect.StructField, i int) reflect.Value {
		vs, ok := samples[f.Type]
		if !ok {
			t.Fatalf("Event.%s is a %s, which this test has no samples of: extend it, and appendJSON", f.Name, f.Type)
		}
		return reflect.ValueOf(vs[i%len(vs)])
	}
	check(Event{})
	for fi := 0; fi < typ.NumField(); fi++ {
		for i := range len(samples[typ.Field(fi).Type]) + 1 {
			var e Event
			reflect.ValueOf(&e).Elem().Field(fi).Set(sample(typ.Field(fi), i))
			check(e)
		}
	}
	for i := range 8 {
		var e Event
		for fi := 0; fi < typ.NumField(); fi++ {
			reflect.ValueOf(&e).Elem().Field(fi).Set(sample(typ.Field(fi), i+fi))
		}
		check(e)
	}
	for _, bad := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))} {
		if _, err := (&Event{Time: bad}).appendJSON(nil); err == nil {
			t.Errorf("appendJSON wrote a time the encoder refuses: %v", bad)
		}
	}
}

// Write writes each event as one whole line, stamped when it has no time,
// in the order written, from any number of goroutines.
func TestWriterWritesWholeLines(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	w := NewWriter(&buf, func() time.Time { return at })
	if err := w.Write(Event{Op: "op_1", Resource: "a", Type: "generic", Action: "create", Status: "ok", DurationMS: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Event{Op: "op_1", Resource: "<b>", Type: "generic", Action: "delete", Status: "failed", Error: "no \"such\" thing", Undo: true, Time: at.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	want := `{"ts":"2026-12-01T15:00:00Z","op":"op_1","resource":"a","type":"generic","action":"create","status":"ok","duration_ms":2}` + "\n" +
		`{"ts":"2026-12-01T15:00:01Z","op":"op_1","resource":"<b>","type":"generic","action":"delete","status":"failed","duration_ms":0,"error":"no \"such\" thing","undo":true}` + "\n"
	if buf.String() != want {
		t.Errorf("wrote\n%s\nwant\n%s", buf.String(), want)
	}
	var nilW *Writer
	if err := nilW.Write(Event{}); err != nil {
		t.Errorf("a nil Writer: %v", err)
	}
}
