package record

import (
	"encoding/binary"
	"math"
)

// Tags of an encoded result value.
const (
	tagNil = iota
	tagFalse
	tagTrue
	tagString
	tagInt
	tagInt64
	tagFloat64
	tagMap
	tagSlice
	tagNilMap
	tagNilSlice
)

// maxResultDepth is the deepest nesting of maps and slices a history's
// results are encoded to; deeper ones are kept as they are.
const maxResultDepth = 32

// appendValue appends v to b, or reports false when it holds a value of
// another type than nil, bool, string, int, int64, float64, map[string]any
// and []any, or is nested deeper than maxResultDepth (the caller then keeps
// it as it is): a decoded value is equal to its original, types included.
func appendValue(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxResultDepth {
		return b, false
	}
	switch v := v.(type) {
	case nil:
		return append(b, tagNil), true
	case bool:
		if v {
			return append(b, tagTrue), true
		}
		return append(b, tagFalse), true
	case string:
		b = binary.AppendUvarint(append(b, tagString), uint64(len(v)))
		return append(b, v...), true
	case int:
		return binary.AppendVarint(append(b, tagInt), int64(v)), true
	case int64:
		return binary.AppendVarint(append(b, tagInt64), v), true
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat64), math.Float64bits(v)), true
	case map[string]any:
		if v == nil {
			return append(b, tagNilMap), true
		}
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(v)))
		for k, e := range v {
			b = binary.AppendUvarint(b, uint64(len(k)))
			var ok bool
			if b, ok = appendValue(append(b, k...), e, depth+1); !ok {
				return b, false
			}
		}
		return b, true
	case []any:
		if v == nil {
			return append(b, tagNilSlice), true
		}
		b = binary.AppendUvarint(append(b, tagSlice), uint64(len(v)))
		for _, e := range v {
			var ok bool
			if b, ok = appendValue(b, e, depth+1); !ok {
				return b, false
			}
		}
		return b, true
	}
	return b, false
}

// readValue decodes the value appendValue wrote at s[*at:] and moves *at
// past it.
func readValue(s string, at *int) any {
	tag := s[*at]
	*at++
	switch tag {
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagString:
		return readString(s, at)
	case tagInt:
		return int(readVarint(s, at))
	case tagInt64:
		return readVarint(s, at)
	case tagFloat64:
		bits := binary.LittleEndian.Uint64([]byte(s[*at : *at+8]))
		*at += 8
		return math.Float64frombits(bits)
	case tagMap:
		n := int(readUvarint(s, at))
		m := make(map[string]any, n)
		for range n {
			k := readString(s, at)
			m[k] = readValue(s, at)
		}
		return m
	case tagSlice:
		out := make([]any, int(readUvarint(s, at)))
		for k := range out {
			out[k] = readValue(s, at)
		}
		return out
	case tagNilMap:
		return map[string]any(nil)
	case tagNilSlice:
		return []any(nil)
	}
	return nil
}

func readString(s string, at *int) string {
	n := int(readUvarint(s, at))
	v := s[*at : *at+n]
	*at += n
	return v
}

// appendVisits appends a snapshot's visits.
func appendVisits(b []byte, visits map[string]int) []byte {
	if visits == nil {
		return append(b, tagNilMap)
	}
	b = binary.AppendUvarint(append(b, tagMap), uint64(len(visits)))
	for k, n := range visits {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = binary.AppendVarint(append(b, k...), int64(n))
	}
	return b
}

// readVisits decodes what appendVisits wrote at s[*at:] and moves *at past
// it.
func readVisits(s string, at *int) map[string]int {
	tag := s[*at]
	*at++
	if tag == tagNilMap {
		return nil
	}
	n := int(readUvarint(s, at))
	m := make(map[string]int, n)
	for range n {
		k := readString(s, at)
		m[k] = int(readVarint(s, at))
	}
	return m
}
