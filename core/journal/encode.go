package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bulwark-iac/bulwark/core/value"
)

// AppendJSON appends r's JSON line (without the newline) to b: the very
// bytes json.Marshal writes for r (the same fields, order, omissions and
// escaping; encode_test.go holds the two equal field by field), without
// its reflection. Every step transition is a record, so this is on the hot
// path of every operation.
func (r *Record) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"op":`...)
	b = appendString(b, r.Op)
	b = append(b, `,"ts":`...)
	if b, err = appendTime(b, r.Time); err != nil {
		return nil, err
	}
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind)
	b = appendOptString(b, `,"type":`, r.Type)
	b = append(b, `,"status":`...)
	b = appendString(b, r.Status)
	b = appendOptString(b, `,"step":`, r.Step)
	b = appendOptString(b, `,"resource":`, r.Resource)
	b = appendOptString(b, `,"action":`, r.Action)
	b = appendOptString(b, `,"phase":`, r.Phase)
	b = appendOptString(b, `,"key":`, r.Key)
	b = appendOptString(b, `,"result_id":`, r.ResultID)
	b = appendOptStrings(b, `,"targets":`, r.Targets)
	b = appendOptString(b, `,"spec":`, r.Spec)
	if r.Revision != 0 {
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, int64(r.Revision), 10)
	}
	b = appendOptStrings(b, `,"replace":`, r.Replace)
	b = appendOptStrings(b, `,"scope":`, r.Scope)
	b = appendOptString(b, `,"user":`, r.User)
	if len(r.Data) > 0 {
		b = append(b, `,"data":`...)
		if b, err = appendRaw(b, r.Data); err != nil {
			return nil, fmt.Errorf("journal: encode the data read: %w", err)
		}
	}
	b = appendOptString(b, `,"error":`, r.Error)
	b = appendOptString(b, `,"lineage":`, r.Lineage)
	if !r.End.IsZero() {
		b = append(b, `,"end":`...)
		if b, err = appendTime(b, r.End); err != nil {
			return nil, err
		}
	}
	if r.Steps != 0 {
		b = append(b, `,"steps":`...)
		b = strconv.AppendInt(b, int64(r.Steps), 10)
	}
	if r.Unchanged {
		b = append(b, `,"unchanged":true`...)
	}
	if r.Repeated != 0 {
		b = append(b, `,"repeated":`...)
		b = strconv.AppendInt(b, int64(r.Repeated), 10)
	}
	b = appendOptString(b, `,"last":`, r.Last)
	if !r.LastTime.IsZero() {
		b = append(b, `,"last_ts":`...)
		if b, err = appendTime(b, r.LastTime); err != nil {
			return nil, err
		}
	}
	if r.Rest != 0 {
		b = append(b, `,"rest":`...)
		b = strconv.AppendInt(b, int64(r.Rest), 10)
	}
	if r.Serial != 0 {
		b = append(b, `,"serial":`...)
		b = strconv.AppendInt(b, r.Serial, 10)
	}
	if len(r.Change) > 0 {
		b = append(b, `,"change":`...)
		if b, err = appendRaw(b, r.Change); err != nil {
			return nil, fmt.Errorf("journal: encode the change: %w", err)
		}
	}
	b = append(b, '}')
	return b, nil
}

// appendRaw appends raw as json.Marshal writes a json.RawMessage: checked,
// compacted and HTML-escaped (what json.Marshal made is all three already,
// and comes out as it went in).
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	at := len(b)
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	b = buf.Bytes()
	if needsHTMLEscape(b[at:]) {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, b[at:])
		b = append(b[:at], esc.Bytes()...)
	}
	return b, nil
}

// needsHTMLEscape reports whether b holds what json.HTMLEscape changes:
// <, >, & or the first byte of U+2028 and U+2029.
func needsHTMLEscape(b []byte) bool {
	for _, c := range b {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}

// MarshalJSON is AppendJSON, for every other encoder of a record.
func (r Record) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 256))
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return appendString(b, s)
}

// appendOptStrings appends key and ss as a JSON array of strings, or
// nothing when ss is empty (as omitempty).
func appendOptStrings(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(b, key...)
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString appends s quoted as encoding/json quotes it.
func appendString(b []byte, s string) []byte { return value.AppendJSONString(b, s) }

// appendTime appends t as time.Time's MarshalJSON writes it (AppendText is
// the same strict RFC 3339, with the same errors, unquoted).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}
