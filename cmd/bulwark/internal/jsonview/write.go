package jsonview

import (
	"bytes"
	"encoding/json"
	"io"
)

// FormatVersion is the version of every document in this package (see the
// package doc for what a change to it means).
const FormatVersion = "1.0"

// Write writes v indented by two spaces, with no HTML escaping ("<" stays
// "<"), and a final newline, in one Write call (so a redacting writer sees
// the document whole).
func Write(w io.Writer, v any) error {
	b, err := Marshal(v, "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WriteLine writes v as one compact JSON line (a streamed event), with no
// HTML escaping, in one Write call.
func WriteLine(w io.Writer, v any) error {
	b, err := Marshal(v, "")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Marshal is v as JSON with no HTML escaping, ending in a newline; indent
// "" makes one line.
func Marshal(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// list returns s, or an empty (non-nil) slice, so it prints as [].
func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// object returns m, or an empty map, so it prints as {}.
func object(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
