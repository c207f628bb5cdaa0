// Package dynamic decodes the JSON of the wire's DynamicValue (attributes and
// configs) fast, the same on the host's side and the plugin's: part of the
// wire contract, like the proto.
package dynamic

import (
	"encoding/json"
	"strconv"
)

// Decode is json.Unmarshal(data, &a) into a map[string]any for the attributes and
// configs every call carries. The common JSON (objects, arrays, strings of
// printable ASCII without escapes, numbers, true, false, null) is decoded
// here, without encoding/json's reflection and its separate validating
// scan; the first thing outside that subset (an escape, a byte past ASCII,
// anything invalid) hands the whole text to json.Unmarshal, so the result
// and the error are json.Unmarshal's in every case. Each Create, Read and
// Update decodes one or two of these, on both sides of the contract.
func Decode(data []byte) (map[string]any, error) {
	d := fastDecoder{data: data}
	d.space()
	if d.literal("null") {
		d.space()
		if d.i == len(d.data) {
			return nil, nil
		}
	} else if d.peek() == '{' {
		if m, ok := d.object(); ok {
			d.space()
			if d.i == len(d.data) {
				return m, nil
			}
		}
	}
	var a map[string]any
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, err
	}
	return a, nil
}

// fastDecoder reads the subset of JSON Decode decodes itself;
// every method reports false at the first byte outside it.
type fastDecoder struct {
	data []byte
	i    int
}

// maxFastDepth bounds the nesting the fast path follows (json.Unmarshal
// has its own limit, far deeper).
const maxFastDepth = 64

func (d *fastDecoder) peek() byte {
	if d.i < len(d.data) {
		return d.data[d.i]
	}
	return 0
}

func (d *fastDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) literal(s string) bool {
	if len(d.data)-d.i >= len(s) && string(d.data[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

func (d *fastDecoder) value(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	switch c := d.peek(); {
	case c == '{':
		return d.objectAt(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case d.literal("true"):
		return true, true
	case d.literal("false"):
		return false, true
	case d.literal("null"):
		return nil, true
	}
	return nil, false
}

func (d *fastDecoder) object() (map[string]any, bool) {
	v, ok := d.objectAt(0)
	if !ok {
		return nil, false
	}
	return v.(map[string]any), true
}

func (d *fastDecoder) objectAt(depth int) (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.peek() == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.peek() != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.peek() != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k.(string)] = v
		d.space()
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) array(depth int) (any, bool) {
	d.i++ // [
	l := []any{}
	d.space()
	if d.peek() == ']' {
		d.i++
		return l, true
	}
	for {
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		l = append(l, v)
		d.space()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return l, true
		default:
			return nil, false
		}
	}
}

// str reads a string of printable ASCII with no escape.
func (d *fastDecoder) str() (any, bool) {
	d.i++ // "
	start := d.i
	for d.i < len(d.data) {
		switch c := d.data[d.i]; {
		case c == '"':
			s := string(d.data[start:d.i])
			d.i++
			return s, true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// number reads a number by JSON's grammar, as a float64 (what
// json.Unmarshal makes of a number into an interface).
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		d.digits()
	default:
		return nil, false
	}
	if d.peek() == '.' {
		d.i++
		if !d.digits() {
			return nil, false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(string(d.data[start:d.i]), 64)
	if err != nil {
		return nil, false // out of range: json.Unmarshal's error
	}
	return f, true
}

// digits reads one or more decimal digits.
func (d *fastDecoder) digits() bool {
	start := d.i
	for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}
