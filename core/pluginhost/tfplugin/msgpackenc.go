package tfplugin

import (
	"encoding/binary"
	"math"
	"math/big"
	"sort"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

// appendMsgpack is EncodeMsgpack's quick way for a wholly known, unmarked
// value whose type has no dynamic part and is the value's own: the bytes
// go-cty's cty/msgpack writes for it (through vmihailenco/msgpack with
// compact integers and full floats), appended to b without an encoder, a
// path or a cty.Value per attribute name. ok is false for anything else,
// which EncodeMsgpack leaves to cty/msgpack (tested byte for byte against
// it).
func appendMsgpack(b []byte, v cty.Value, ty cty.Type) (out []byte, ok bool) {
	if ty.HasDynamicTypes() || !v.Type().Equals(ty) || !v.IsWhollyKnown() {
		return b, false
	}
	return appendMsgpackValue(b, v, ty)
}

func appendMsgpackValue(b []byte, v cty.Value, ty cty.Type) ([]byte, bool) {
	if v.IsNull() {
		return append(b, 0xc0), true
	}
	switch {
	case ty == cty.String:
		return appendMsgpackString(b, v.AsString()), true
	case ty == cty.Bool:
		if v.True() {
			return append(b, 0xc3), true
		}
		return append(b, 0xc2), true
	case ty == cty.Number:
		if v.RawEquals(cty.PositiveInfinity) || v.RawEquals(cty.NegativeInfinity) {
			return b, false
		}
		bf := v.AsBigFloat()
		if iv, acc := bf.Int64(); acc == big.Exact {
			return appendMsgpackInt(b, iv), true
		}
		if fv, acc := bf.Float64(); acc == big.Exact && !bf.IsInt() {
			return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(fv)), true
		}
		return appendMsgpackString(b, bf.Text('f', -1)), true
	case ty.IsListType(), ty.IsSetType(), ty.IsTupleType():
		b = appendMsgpackLen(b, v.LengthInt(), 0x90, 0xdc, 0xdd)
		var etys []cty.Type
		if ty.IsTupleType() {
			etys = ty.TupleElementTypes()
		}
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			var ety cty.Type
			if etys != nil {
				ety = etys[i]
			} else {
				ety = ty.ElementType()
			}
			var ok bool
			if b, ok = appendMsgpackValue(b, ev, ety); !ok {
				return b, false
			}
		}
		return b, true
	case ty.IsMapType():
		b = appendMsgpackLen(b, v.LengthInt(), 0x80, 0xde, 0xdf)
		ety := ty.ElementType()
		for it := v.ElementIterator(); it.Next(); {
			ek, ev := it.Element()
			b = appendMsgpackString(b, ek.AsString())
			var ok bool
			if b, ok = appendMsgpackValue(b, ev, ety); !ok {
				return b, false
			}
		}
		return b, true
	case ty.IsObjectType():
		atys := ty.AttributeTypes()
		names := make([]string, 0, len(atys))
		for k := range atys {
			if !asciiName(k) {
				return b, false // cty/msgpack writes cty.StringVal(k), normalised
			}
			names = append(names, k)
		}
		sort.Strings(names)
		b = appendMsgpackLen(b, len(names), 0x80, 0xde, 0xdf)
		for _, k := range names {
			b = appendMsgpackString(b, k)
			var ok bool
			if b, ok = appendMsgpackValue(b, v.GetAttr(k), atys[k]); !ok {
				return b, false
			}
		}
		return b, true
	}
	return b, false
}

func asciiName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendMsgpackLen writes an array's or map's length: fix (below 16), 16 or
// 32 bits.
func appendMsgpackLen(b []byte, n int, fix, c16, c32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, c32), uint32(n))
}

func appendMsgpackString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendMsgpackInt writes n as vmihailenco/msgpack's EncodeInt does: the
// fewest bytes, unsigned codes for what is not negative.
func appendMsgpackInt(b []byte, n int64) []byte {
	if n >= 0 {
		u := uint64(n)
		switch {
		case u <= math.MaxInt8:
			return append(b, byte(u))
		case u <= math.MaxUint8:
			return append(b, 0xcc, byte(u))
		case u <= math.MaxUint16:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(u))
		case u <= math.MaxUint32:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
	}
	switch {
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}
