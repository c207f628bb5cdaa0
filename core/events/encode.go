package events

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// appendJSON appends e's line, newline included, to b: the very bytes a
// json.Encoder with SetEscapeHTML(false) writes for e (encode_test.go holds
// the two equal field by field), without its reflection. Every step
// transition writes one.
func (e *Event) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"ts":`...)
	b = append(b, '"')
	b, err := e.Time.AppendText(b) // what Time.MarshalJSON writes, unquoted
	if err != nil {
		return nil, err
	}
	b = append(b, '"')
	b = append(b, `,"op":`...)
	b = appendString(b, e.Op)
	b = append(b, `,"resource":`...)
	b = appendString(b, e.Resource)
	b = append(b, `,"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"action":`...)
	b = appendString(b, e.Action)
	b = append(b, `,"status":`...)
	b = appendString(b, e.Status)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, e.DurationMS, 10)
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, e.Error)
	}
	if e.Undo {
		b = append(b, `,"undo":true`...)
	}
	if e.From != "" {
		b = append(b, `,"from":`...)
		b = appendString(b, e.From)
	}
	return append(b, "}\n"...), nil
}

// appendString appends s quoted as a json.Encoder without HTML escaping
// quotes it: printable ASCII with no quote or backslash as it is, the rest
// through encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
